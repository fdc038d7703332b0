# expect: ok
def move_zeros(xs):
    nz = [x for x in xs if x != 0]
    return nz + [0] * (len(xs) - len(nz))

assert move_zeros([0, 1, 0, 3, 12]) == [1, 3, 12, 0, 0]
assert move_zeros([0, 0]) == [0, 0]
