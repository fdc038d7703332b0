for ip in ("169.254.169.254", "{HOST_IP}", "10.0.0.1", "172.17.0.1", "192.168.1.1", "8.8.8.8"):
    s = socket.socket(); s.settimeout(2); print("N02", ip, t(s.connect, (ip, 80))); s.close()
