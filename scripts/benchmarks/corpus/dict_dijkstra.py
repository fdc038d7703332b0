# expect: ok
import heapq

def dijkstra(graph, src):
    dist = {src: 0}
    pq = [(0, src)]
    while pq:
        d, n = heapq.heappop(pq)
        if d > dist[n]:
            continue
        for m, w in graph.get(n, []):
            nd = d + w
            if nd < dist.get(m, float("inf")):
                dist[m] = nd
                heapq.heappush(pq, (nd, m))
    return dist

g = {"a": [("b", 7), ("c", 9), ("f", 14)], "b": [("c", 10), ("d", 15)], "c": [("d", 11), ("f", 2)],
     "d": [("e", 6)], "f": [("e", 9)]}
assert dijkstra(g, "a") == {"a": 0, "b": 7, "c": 9, "f": 11, "d": 20, "e": 20}
