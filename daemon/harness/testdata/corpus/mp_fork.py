import multiprocessing as mp
def square(x):
    return x * x
class Box:
    def __init__(self, v):
        self.v = v
def unbox(b):
    return b.v + 1
if __name__ == "__main__":
    ctx = mp.get_context("fork")
    with ctx.Pool(2) as pool:
        print(pool.map(square, range(6)))
        print(pool.map(unbox, [Box(1), Box(2)]))
    q = ctx.Queue()
    p = ctx.Process(target=q.put, args=("from child",))
    p.start(); print(q.get()); p.join(); print(p.exitcode)
