# expect: ok
def no_adjacent_ones(n):
    if n == 0:
        return [""]
    out = []
    for s in no_adjacent_ones(n - 1):
        out.append(s + "0")
        if not s.endswith("1"):
            out.append(s + "1")
    return out

assert sorted(no_adjacent_ones(3)) == ["000", "001", "010", "100", "101"]
assert len(no_adjacent_ones(10)) == 144
