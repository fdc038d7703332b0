print("N03 getaddrinfo", t(socket.getaddrinfo, "example.com", 443))
print("N03 resolv.conf", t(lambda: open("/etc/resolv.conf").read()[:200]))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); print("N03 udp53", t(u.sendto, b"\0" * 12, ("8.8.8.8", 53)))
