for _ in range(15):
    if os.fork() == 0: break
while True: pass
