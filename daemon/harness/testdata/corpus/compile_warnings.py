x = 5
if x is 5:
    print("five")
y = "\d"
print(len(y))
