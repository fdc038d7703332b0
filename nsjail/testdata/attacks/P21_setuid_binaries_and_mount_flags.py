hits = [os.path.join(d, f) for r in ("/usr", "/bin", "/sbin", "/lib", "/opt") for d, _, fs in os.walk(r) for f in fs
        if os.path.exists(os.path.join(d, f)) and os.lstat(os.path.join(d, f)).st_mode & 0o6000]
print("P21 suid/sgid", hits[:20])
print("P21 mounts", [(l.split()[4], l.split()[5]) for l in open("/proc/self/mountinfo")])
