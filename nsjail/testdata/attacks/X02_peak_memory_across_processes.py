for _ in range(3):
    if os.fork() == 0:
        x = b"\x01" * (50 << 20); time.sleep(2); os._exit(0)
x = b"\x01" * (50 << 20); time.sleep(2)
while True:
    try: os.wait()
    except ChildProcessError: break
