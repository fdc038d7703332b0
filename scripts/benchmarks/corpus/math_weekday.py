# expect: ok
import datetime

def weekday_name(y, m, d):
    return datetime.date(y, m, d).strftime("%A")

def zeller(y, m, d):
    if m < 3:
        m += 12
        y -= 1
    k, j = y % 100, y // 100
    h = (d + 13 * (m + 1) // 5 + k + k // 4 + j // 4 + 5 * j) % 7
    return ["Saturday", "Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday"][h]

for date in [(1969, 7, 20), (2000, 1, 1), (2024, 2, 29), (1815, 6, 18)]:
    assert weekday_name(*date) == zeller(*date)
