import sysconfig
for p in ("/etc/x", "/usr/x", "/x", sysconfig.get_paths()["stdlib"] + "/os.py",
          sysconfig.get_paths()["purelib"] + "/sitecustomize.py", "/proc/x", "/dev/x"):
    print("F02", p, t(lambda: open(p, "a").write("print('persist')")))
