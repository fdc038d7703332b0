print("F11 ls", t(os.listdir, "/sys"), t(os.listdir, "/sys/fs/cgroup"))
for p, v in (("/sys/fs/cgroup/cgroup.procs", str(os.getpid())), ("/sys/kernel/uevent_helper", None)):
    print("F11 w", p, t(lambda: open(p, "w").write(v if v is not None else open(p).read())))
