name = socket.gethostname().encode()
print("P14 sethostname", sc(170, name, len(name)), "uname", os.uname().nodename)
