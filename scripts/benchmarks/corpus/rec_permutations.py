# expect: ok
def permutations(xs):
    if len(xs) <= 1:
        return [list(xs)]
    out = []
    for i, x in enumerate(xs):
        for p in permutations(xs[:i] + xs[i + 1:]):
            out.append([x] + p)
    return out

import itertools
assert permutations([1, 2, 3]) == [list(p) for p in itertools.permutations([1, 2, 3])]
assert len(permutations(list(range(6)))) == 720
