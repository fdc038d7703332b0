# expect: ok
def trap(h):
    left, right = 0, len(h) - 1
    lmax = rmax = water = 0
    while left < right:
        if h[left] < h[right]:
            lmax = max(lmax, h[left]); water += lmax - h[left]; left += 1
        else:
            rmax = max(rmax, h[right]); water += rmax - h[right]; right -= 1
    return water

assert trap([0, 1, 0, 2, 1, 0, 1, 3, 2, 1, 2, 1]) == 6
assert trap([4, 2, 0, 3, 2, 5]) == 9
