n = 0
try:
    while True:
        with open(f"/tmp/fill{n // 8}", "ab") as f: f.write(b"\x03" * (1 << 20))
        n += 1
except OSError as e: print("R06", errno.errorcode[e.errno], "MiB", n)
