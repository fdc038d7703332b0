x = 1
print("ok"
y = 2
