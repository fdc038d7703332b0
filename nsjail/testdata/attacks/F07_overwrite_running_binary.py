for p in ("/proc/self/exe", "/proc/1/exe"):
    print("F07", p, t(os.readlink, p), t(os.open, p, os.O_WRONLY), t(os.open, p, os.O_RDWR | os.O_APPEND))
    print("F07 O_PATH-reopen", p, t(lambda: os.open(f"/proc/self/fd/{os.open(p, os.O_PATH)}", os.O_WRONLY)))
