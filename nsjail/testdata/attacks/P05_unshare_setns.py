for name, fl in (("user", 0x10000000), ("mnt", 0x20000), ("net", 0x40000000), ("pid", 0x20000000),
                 ("uts", 0x04000000), ("ipc", 0x08000000), ("cgroup", 0x02000000), ("time", 0x80)):
    print("P05 unshare", name, sc(272, fl))
print("P05 setns", sc(308, os.open("/proc/self/ns/net", os.O_RDONLY), 0))
