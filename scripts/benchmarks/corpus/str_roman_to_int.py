# expect: ok
def roman_to_int(s):
    v = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
    total = 0
    for a, b in zip(s, s[1:] + " "):
        if b != " " and v[a] < v[b]:
            total -= v[a]
        else:
            total += v[a]
    return total

assert roman_to_int("III") == 3
assert roman_to_int("MCMXCIV") == 1994
assert roman_to_int("LVIII") == 58
