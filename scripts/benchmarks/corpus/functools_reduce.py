# expect: ok
from functools import reduce
import operator

def product(xs):
    return reduce(operator.mul, xs, 1)

def compose(*fs):
    return reduce(lambda f, g: lambda x: f(g(x)), fs, lambda x: x)

assert product([1, 2, 3, 4]) == 24
inc_then_double = compose(lambda x: x * 2, lambda x: x + 1)
assert inc_then_double(5) == 12
