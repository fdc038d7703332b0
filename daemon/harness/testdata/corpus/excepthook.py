import sys
def hook(t, v, tb):
    n = 0
    while tb is not None:
        n += 1
        print("frame", tb.tb_frame.f_code.co_filename, tb.tb_lineno, file=sys.stderr)
        tb = tb.tb_next
    print("custom hook:", t.__name__, v, n, file=sys.stderr)
sys.excepthook = hook
raise RuntimeError("boom")
