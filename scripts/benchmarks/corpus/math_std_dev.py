# expect: ok
def stdev(xs):
    m = sum(xs) / len(xs)
    return (sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) ** 0.5

import statistics, math
data = [2, 4, 4, 4, 5, 5, 7, 9]
assert math.isclose(stdev(data), statistics.stdev(data))
