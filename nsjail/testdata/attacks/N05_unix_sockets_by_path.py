for p in ("{DAEMON_SOCK}", "/var/run/docker.sock", "/run/containerd/containerd.sock", "/run/systemd/private",
          "/run/systemd/notify", "/run/dbus/system_bus_socket", "/run/user/0/bus", "/dev/log"):
    s = socket.socket(socket.AF_UNIX); print("N05", p, t(s.connect, p)); s.close()
print("N05 NOTIFY_SOCKET", os.environ.get("NOTIFY_SOCKET"))
s = socket.socket(socket.AF_UNIX); print("N05 abstract", t(s.connect, "\0{ABSTRACT}")); s.close()   # this suite: the host's abstract socket
