buf = b"A" * 65536
while True: os.write(1, buf)
