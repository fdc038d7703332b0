"""A DNS server for scripts/k8stest: it answers A queries for one name (the
headless Service's) with the addresses of that Service's ready endpoints,
read from the EndpointSlices with kubectl once a second, as the cluster's
DNS would; anything else gets NXDOMAIN. TTL 0, so clients ask again.
With $AGENTJAIL_DNS_SERVED set, each new set is appended to that file
with the time it began to be served.
    python3 dns.py LISTEN_ADDR NAME NAMESPACE SERVICE KUBECTL [KUBECTL ARGS...]
"""

import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

addr, name, namespace, service = sys.argv[1:5]
kubectl = sys.argv[5:]
served = os.environ.get("AGENTJAIL_DNS_SERVED")  # a file: each new set, with its time
ready = []  # the ready endpoint addresses, as last read


def poll():
    while True:
        read()
        time.sleep(1)


def read():
    global ready
    try:
        out = subprocess.run(kubectl + ["-n", namespace, "get", "endpointslices", "-l",
                             "kubernetes.io/service-name=" + service, "-o", "json"],
                             capture_output=True, timeout=10, check=True).stdout
        found = []
        for item in json.loads(out)["items"]:
            for ep in item.get("endpoints") or []:
                if (ep.get("conditions") or {}).get("ready"):
                    found += [a for a in ep["addresses"] if a not in found]
        if sorted(found) != ready:
            print(time.strftime("%H:%M:%S"), "dns: ready endpoints:", sorted(found), flush=True)
            if served:  # when each set began to be served, for the checks
                with open(served, "a") as f:
                    f.write(f"{time.time():.3f} {' '.join(sorted(found))}\n")
        ready = sorted(found)
    except Exception as e:  # keep the last list; say why
        print("dns: kubectl:", e, file=sys.stderr, flush=True)


def qname(msg, off):
    labels = []
    while msg[off]:
        n = msg[off]
        labels.append(msg[off + 1:off + 1 + n].decode("ascii", "replace"))
        off += 1 + n
    return ".".join(labels).lower(), off + 1


def answer(msg):
    ident, flags, qd = struct.unpack("!HHH", msg[:6])
    q, end = qname(msg, 12)
    qtype, = struct.unpack("!H", msg[end:end + 2])
    question = msg[12:end + 4]
    rcode, records = 0, []
    if q.rstrip(".") != name.lower():
        rcode = 3
    elif qtype == 1:
        records = [b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 0, 4) + socket.inet_aton(a) for a in ready]
    head = struct.pack("!HHHHHH", ident, 0x8400 | (flags & 0x0100) | rcode, 1, len(records), 0, 0)
    return head + question + b"".join(records)


read()  # the first answer already knows the endpoints
threading.Thread(target=poll, daemon=True).start()
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((addr, 53))
print("dns: serving", name, "on", addr, flush=True)
while True:
    msg, peer = s.recvfrom(512)
    try:
        s.sendto(answer(msg), peer)
    except Exception as e:
        print("dns: bad query:", e, file=sys.stderr, flush=True)
