for p in ("/etc/shadow", "/etc/sudoers", "/root/.ssh/id_rsa", "/root/.bash_history", "/home",
          "/var/lib", "/run/secrets", "/etc/{DAEMON_CONF}", "/var/log", "/boot"):
    print("F01", p, t(lambda: os.listdir(p) if os.path.isdir(p) else open(p, "rb").read(64)))
print("F01 canary", t(lambda: open("{CANARY}", "rb").read()))    # this suite's root-only host file
