import threading
n = 0
try:
    while True: threading.Thread(target=time.sleep, args=(3600,), daemon=True).start(); n += 1
except Exception as e: print("R05 stopped at", n, type(e).__name__, flush=True)
time.sleep(3600)
