print("F13 ls", sorted(os.listdir("/dev")))
for d in ("/dev/mem", "/dev/kmsg", "/dev/port", "/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/tty", "/dev/console",
          "/dev/fuse", "/dev/net/tun", "/dev/kvm", "/dev/nvidia0", "/dev/nvidiactl"):
    print("F13", d, t(os.open, d, os.O_RDONLY))
print("F13 mknod", t(os.mknod, "/tmp/sda", 0o600 | 0o060000, os.makedev(8, 0)))
