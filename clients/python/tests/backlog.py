"""A listening socket whose backlog is full, served late: a client must
wait for the daemon to accept rather than fail or think it connected."""

import json
import os
import socket
import tempfile
import threading
import time

from fakedaemon import RESULT


class FullBacklog:
    def __init__(self, serve_after=None):
        self._dir = tempfile.TemporaryDirectory(prefix="ajbacklog-")
        self.path = os.path.join(self._dir.name, "s.sock")
        self.serve_after = serve_after  # seconds, or None: never accept
        self.served = threading.Event()

    def __enter__(self):
        self._l = socket.socket(socket.AF_UNIX)
        self._l.bind(self.path)
        self._l.listen(0)
        self._fillers = []
        while True:  # connect until the kernel says EAGAIN: the backlog is full
            s = socket.socket(socket.AF_UNIX)
            s.setblocking(False)
            try:
                s.connect(self.path)
            except BlockingIOError:
                s.close()
                break
            self._fillers.append(s)
        self._stop = False
        self._thread = threading.Thread(target=self._serve)
        self._thread.start()
        return self

    def _serve(self):
        if self.serve_after is None:
            return
        time.sleep(self.serve_after)
        for s in self._fillers:
            s.close()
        self._l.settimeout(5)
        while not self.served.is_set():
            try:
                conn, _ = self._l.accept()
            except socket.timeout:
                return
            with conn:
                conn.settimeout(5)
                buf = b""
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    buf += chunk
                if b"\r\n\r\n" not in buf:
                    continue  # a filler
                head, _, body = buf.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                while len(body) < length:
                    body += conn.recv(65536)
                data = json.dumps(RESULT).encode()
                self.served.set()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data))

    def __exit__(self, *exc):
        self._thread.join()
        for s in self._fillers:
            s.close()
        self._l.close()
        self._dir.cleanup()
