# expect: ok
def group_runs(xs):
    out = []
    for x in xs:
        if out and x == out[-1][-1] + 1:
            out[-1].append(x)
        else:
            out.append([x])
    return out

assert group_runs([1, 2, 3, 5, 6, 9]) == [[1, 2, 3], [5, 6], [9]]
assert group_runs([]) == []
