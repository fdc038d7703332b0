try:
    with open("/tmp/big", "wb") as f:
        while True: f.write(b"\x04" * (1 << 20))
except OSError as e: print("R07 write", errno.errorcode[e.errno], os.path.getsize("/tmp/big"))
open("/tmp/sparse", "w").close()
print("R07 truncate-1TiB", t(os.truncate, "/tmp/sparse", 1 << 40))
