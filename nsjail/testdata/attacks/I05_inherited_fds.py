for fd in range(3, 4096):
    try: st = os.fstat(fd)
    except OSError: continue
    print("I05 LEAK", fd, oct(st.st_mode), t(os.readlink, f"/proc/self/fd/{fd}"))
print("I05 stdio", [t(os.readlink, f"/proc/self/fd/{i}") for i in (0, 1, 2)])
