# expect: ok
import heapq

def kth_smallest(xs, k):
    return heapq.nsmallest(k, xs)[-1]

assert kth_smallest([7, 10, 4, 3, 20, 15], 3) == 7
assert kth_smallest([1], 1) == 1
