# expect: AssertionError
def sort_desc(xs):
    return sorted(xs)  # ascending, not descending

assert sort_desc([1]) == [1]
assert sort_desc([3, 1, 2]) == [3, 2, 1], "expected descending order"
