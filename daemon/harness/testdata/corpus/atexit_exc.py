import atexit, sys
def bye():
    print("atexit:", "__file__" in globals(), sys.last_type.__name__, sys.last_traceback.tb_frame.f_code.co_filename)
atexit.register(bye)
1 / 0
