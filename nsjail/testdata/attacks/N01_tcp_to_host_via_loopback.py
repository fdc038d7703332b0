for host in ("127.0.0.1", "::1"):
    for port in (22, 53, 80, 443, 2375, 2376, 5432, 6379, 8080, 10250):
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET); s.settimeout(1)
        print("N01", host, port, t(s.connect, (host, port))); s.close()
s = socket.socket(); s.settimeout(1)                      # this suite: a real listener on the host's 127.0.0.1
print("N01 host-listener", t(s.connect, ("127.0.0.1", {TCP_PORT})))
