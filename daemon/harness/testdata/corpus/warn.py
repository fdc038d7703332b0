import warnings
warnings.warn("module-level warning")
def old():
    warnings.warn("old() is deprecated", DeprecationWarning, stacklevel=2)
old()
warnings.warn("a runtime one", RuntimeWarning)
print("done")
