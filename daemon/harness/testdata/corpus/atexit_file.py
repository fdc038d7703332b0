import atexit
def bye():
    print("atexit:", "__file__" in globals(), "__cached__" in globals())
atexit.register(bye)
print("ran")
