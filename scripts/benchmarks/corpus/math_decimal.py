# expect: ok
from decimal import Decimal, ROUND_HALF_UP, getcontext

def money(x):
    return Decimal(x).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)

assert money("2.675") == Decimal("2.68")
assert money("1.005") == Decimal("1.01")
getcontext().prec = 50
assert str(Decimal(1) / Decimal(7))[:12] == "0.1428571428"
