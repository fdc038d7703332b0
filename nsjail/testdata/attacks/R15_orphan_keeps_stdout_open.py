if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT): signal.signal(s, signal.SIG_IGN)
        time.sleep(3600)                  # grandchild holds the inherited stdout/stderr pipes
    os._exit(0)
print("R15 main exiting", flush=True)
