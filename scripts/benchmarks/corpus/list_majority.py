# expect: ok
def majority(xs):
    cand, count = None, 0
    for x in xs:
        if count == 0:
            cand = x
        count += 1 if x == cand else -1
    return cand

assert majority([2, 2, 1, 1, 1, 2, 2]) == 2
assert majority([3, 3, 4]) == 3
