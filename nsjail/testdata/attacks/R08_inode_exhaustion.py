n = 0
try:
    while True: open(f"/tmp/i{n}", "w").close(); n += 1
except OSError as e: print("R08", errno.errorcode[e.errno], n)
