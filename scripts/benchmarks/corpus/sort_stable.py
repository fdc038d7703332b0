# expect: ok
from operator import itemgetter

records = [("b", 2), ("a", 1), ("c", 2), ("d", 1)]
out = sorted(records, key=itemgetter(1))
assert out == [("a", 1), ("d", 1), ("b", 2), ("c", 2)]
