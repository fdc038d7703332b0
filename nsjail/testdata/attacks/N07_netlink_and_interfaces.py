print("N07 ifaces", t(socket.if_nameindex))
for proto in (0, 4, 9, 12, 15):                  # ROUTE, SOCK_DIAG, AUDIT, NETFILTER, KOBJECT_UEVENT
    print("N07 netlink", proto, t(socket.socket, socket.AF_NETLINK, socket.SOCK_RAW, proto))
import fcntl; s = socket.socket()
print("N07 SIOCSIFFLAGS", t(fcntl.ioctl, s, 0x8914, struct.pack("16sH22x", b"sbxnone0", 0)))   # nonexistent ifname
