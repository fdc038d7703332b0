# expect: ok
from collections import deque

def shortest_path(graph, start, goal):
    prev = {start: None}
    q = deque([start])
    while q:
        n = q.popleft()
        if n == goal:
            path = []
            while n is not None:
                path.append(n)
                n = prev[n]
            return path[::-1]
        for m in graph.get(n, ()):
            if m not in prev:
                prev[m] = n
                q.append(m)
    return None

g = {"A": ["B", "C"], "B": ["D"], "C": ["D", "E"], "D": ["F"], "E": ["F"], "F": []}
assert shortest_path(g, "A", "F") == ["A", "B", "D", "F"]
assert shortest_path(g, "F", "A") is None
