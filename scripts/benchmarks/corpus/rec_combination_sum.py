# expect: ok
def combination_sum(cands, target):
    out = []
    def go(start, left, path):
        if left == 0:
            out.append(path)
            return
        for i in range(start, len(cands)):
            if cands[i] <= left:
                go(i, left - cands[i], path + [cands[i]])
    go(0, target, [])
    return out

assert combination_sum([2, 3, 6, 7], 7) == [[2, 2, 3], [7]]
assert combination_sum([2, 3, 5], 8) == [[2, 2, 2, 2], [2, 3, 3], [3, 5]]
