for fam, typ, proto in ((2, 3, 1), (10, 3, 58), (17, 3, 0x0300), (2, 2, 1)):     # RAW ICMP, RAW ICMPv6, PACKET ALL, ping DGRAM
    print("N04", fam, typ, proto, t(socket.socket, fam, typ, proto))
