import sys
def hook(t, v, tb):
    raise ValueError("hook broke")
sys.excepthook = hook
raise RuntimeError("boom")
