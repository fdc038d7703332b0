# This suite: P01's probe inside the executed processes.
P01 = 'import os; st = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\\t" in l); print("F18 LABEL", os.getuid(), *(k + "=" + st.get(k, "-").strip() for k in ("CapEff", "CapBnd", "NoNewPrivs", "Seccomp", "Seccomp_filters")), flush=True)'
p = "/tmp/x.py"; open(p, "w").write(f"#!{sys.executable}\n" + P01.replace("LABEL", "tmp-P01") + "\n"); os.chmod(p, 0o4755)
import subprocess
print("F18 exec-tmp", t(subprocess.run, [p]))
fd = os.memfd_create("x"); os.write(fd, open(sys.executable, "rb").read())
print("F18 memfd", t(subprocess.run, [f"/proc/self/fd/{fd}", "-c", "print('memfd-exec')"], pass_fds=(fd,)))
print("F18 memfd-child", t(subprocess.run, [f"/proc/self/fd/{fd}", "-c", P01.replace("LABEL", "memfd-P01")], pass_fds=(fd,)))
st = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
print("F18 self-P01", os.getuid(), *(k + "=" + st.get(k, "-").strip() for k in ("CapEff", "CapBnd", "NoNewPrivs", "Seccomp", "Seccomp_filters")))
