import inspect, linecache
def answer():
    return 42
print(inspect.getsource(answer))
print(inspect.getfile(answer) == __file__, linecache.getline(__file__, 3).strip())
print(inspect.getmodule(answer).__name__)
