def loop():
    raise KeyboardInterrupt
print("x")
loop()
