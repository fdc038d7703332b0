# expect: ok
def sort_colors(xs):
    lo, mid, hi = 0, 0, len(xs) - 1
    while mid <= hi:
        if xs[mid] == 0:
            xs[lo], xs[mid] = xs[mid], xs[lo]; lo += 1; mid += 1
        elif xs[mid] == 1:
            mid += 1
        else:
            xs[mid], xs[hi] = xs[hi], xs[mid]; hi -= 1
    return xs

assert sort_colors([2, 0, 2, 1, 1, 0]) == [0, 0, 1, 1, 2, 2]
