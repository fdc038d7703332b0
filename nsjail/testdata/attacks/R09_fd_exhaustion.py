import resource
fds = []
try:
    while True: fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError as e: print("R09", errno.errorcode[e.errno], len(fds))
print("R09 raise-hard", t(resource.setrlimit, resource.RLIMIT_NOFILE, (1 << 20, 1 << 20)))
