x = b"\x01" * (200 << 20)
del x
time.sleep(1); print("R03 done")
