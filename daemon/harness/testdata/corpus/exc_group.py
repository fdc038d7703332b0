def f():
    raise ExceptionGroup("many", [ValueError("one"), TypeError("two")])
f()
