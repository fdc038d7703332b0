for p, v in (("/proc/sys/kernel/core_pattern", None), ("/proc/sysrq-trigger", "h"), ("/proc/sys/kernel/modprobe", None)):
    try: old = v if v is not None else open(p).read()
    except OSError as e: print("F12", p, errno.errorcode[e.errno]); continue
    print("F12", p, t(lambda: open(p, "w").write(old)))     # writes back the same value; sysrq 'h' = help only
