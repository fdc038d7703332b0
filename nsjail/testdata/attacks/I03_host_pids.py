pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
print("I03", os.getpid(), os.getppid(), pids, t(lambda: open("/proc/1/cmdline", "rb").read()[:120]))
