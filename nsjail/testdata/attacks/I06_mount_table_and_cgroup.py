print("I06 cgroup", open("/proc/self/cgroup").read().strip())
for l in open("/proc/self/mountinfo"): print("I06 mnt", l.split()[3:6], l.split(" - ")[1].strip())
