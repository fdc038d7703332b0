# expect: ok
def is_armstrong(n):
    digits = str(n)
    return n == sum(int(d) ** len(digits) for d in digits)

assert [n for n in range(100, 1000) if is_armstrong(n)] == [153, 370, 371, 407]
