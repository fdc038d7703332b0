# expect: ok
def zigzag(s, rows):
    if rows == 1:
        return s
    lines = [""] * rows
    r, step = 0, 1
    for c in s:
        lines[r] += c
        if r == 0:
            step = 1
        elif r == rows - 1:
            step = -1
        r += step
    return "".join(lines)

assert zigzag("PAYPALISHIRING", 3) == "PAHNAPLSIIGYIR"
assert zigzag("PAYPALISHIRING", 4) == "PINALSIGYAHRPI"
assert zigzag("AB", 1) == "AB"
