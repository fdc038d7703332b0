child = os.fork()
if child == 0: time.sleep(30); os._exit(0)
print("P04 seize-own-child", sc(101, 0x4206, child, 0, 0), "seize-pid1", sc(101, 0x4206, 1, 0, 0))   # PTRACE_SEIZE
print("P04 vm_readv", sc(310, child, None, 0, None, 0, 0))
pfd = libc.syscall(_a(434), _a(child), _a(0)); print("P04 pidfd_getfd", sc(438, pfd, 0, 0))
os.kill(child, 9)
