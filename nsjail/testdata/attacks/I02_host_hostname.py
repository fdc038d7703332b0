print("I02", socket.gethostname(), os.uname().nodename, t(lambda: open("/etc/hostname").read().strip()))
