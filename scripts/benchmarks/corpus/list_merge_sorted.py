# expect: ok
def merge(a, b):
    i = j = 0
    out = []
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            out.append(a[i]); i += 1
        else:
            out.append(b[j]); j += 1
    return out + a[i:] + b[j:]

assert merge([1, 4, 7], [2, 3, 8, 9]) == [1, 2, 3, 4, 7, 8, 9]
assert merge([], [1]) == [1]
