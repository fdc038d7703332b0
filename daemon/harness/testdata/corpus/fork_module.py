import os, sys
pid = os.fork()
if pid == 0:
    print("child")
    sys.stdout.flush()
    os._exit(0)
os.waitpid(pid, 0)
print("parent")
