import fcntl
for d in ("/etc", "/usr/lib"):
    fd = os.open(d, os.O_RDONLY)
    print("I10 dnotify", d, t(fcntl.fcntl, fd, 1026, 0x80000000 | 1))   # F_NOTIFY, DN_MULTISHOT|DN_ACCESS
print("I10 getfl", t(fcntl.fcntl, 0, 3))
