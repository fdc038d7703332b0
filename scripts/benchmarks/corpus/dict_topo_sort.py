# expect: ok
def topo_sort(deps):
    order, state = [], {}
    def visit(n):
        if state.get(n) == 1:
            raise ValueError("cycle")
        if state.get(n) == 2:
            return
        state[n] = 1
        for m in deps.get(n, ()):
            visit(m)
        state[n] = 2
        order.append(n)
    for n in sorted(deps):
        visit(n)
    return order

order = topo_sort({"app": ["lib", "log"], "lib": ["log"], "log": []})
assert order.index("log") < order.index("lib") < order.index("app")
