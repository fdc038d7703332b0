import threading, time
out = []
lock = threading.Lock()
def work(i):
    with lock:
        out.append(i * i)
ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
for t in ts: t.start()
for t in ts: t.join()
print(sorted(out))
def late():
    time.sleep(0.2)
    print("late thread done")
threading.Thread(target=late).start()
print("module done")
