# expect: ok
import heapq

def heap_sort(xs):
    h = list(xs)
    heapq.heapify(h)
    return [heapq.heappop(h) for _ in range(len(h))]

assert heap_sort([9, 4, 7, 1, -2, 6, 5]) == [-2, 1, 4, 5, 6, 7, 9]
