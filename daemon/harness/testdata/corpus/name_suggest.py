def total(values):
    return sum(valuez)
total([1, 2])
