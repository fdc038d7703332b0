print("P12 init_module", sc(175, b"", 0, b""), "finit_module", sc(313, -1, b"", 0), "delete_module", sc(176, b"sbx_none", os.O_NONBLOCK))
for fam, typ, proto in ((5, 2, 0), (9, 5, 0), (3, 2, 0), (21, 5, 0), (30, 4, 0), (2, 6, 33), (2, 1, 132), (15, 3, 2)):
    print("P12 autoload", fam, typ, proto, t(socket.socket, fam, typ, proto))   # appletalk x25 ax25 rds tipc dccp sctp af_key
