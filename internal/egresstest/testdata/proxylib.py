# The egress tests' jailed helpers: requests to the daemon's proxy written
# byte by byte, so that each attack says exactly what it sends. Every
# outcome is one line "OUT {json}" on stdout: the test reads them.
import json
import os
import socket
import ssl

PROXY = ("127.0.0.1", 3128)


def out(**kw):
    print("OUT " + json.dumps(kw), flush=True)


def _read_all(s, limit=1 << 20):
    data = b""
    try:
        while len(data) < limit:
            c = s.recv(65536)
            if not c:
                break
            data += c
    except (OSError, socket.timeout) as e:
        data += ("\n<read error: %s>" % type(e).__name__).encode()
    return data


def _head(s):
    data = b""
    while b"\r\n\r\n" not in data:
        c = s.recv(4096)
        if not c:
            break
        data += c
    return data


def _status(head):
    try:
        return int(head.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0


def connect(host, port, sni=None, request=None, what=""):
    """CONNECT host:port; then, if the proxy said 200, TLS with sni (when
    given) and one GET; reports the proxy's status and what came back."""
    res = {"kind": "connect", "target": "%s:%s" % (host, port), "what": what}
    try:
        s = socket.create_connection(PROXY, timeout=15)
        s.sendall(("CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % (host, port, host, port)).encode())
        head = _head(s)
        res["status"] = _status(head)
        res["head"] = head[:200].decode("latin-1")
        if res["status"] == 200:
            if sni is not None:
                ctx = ssl.create_default_context(cafile="ca.pem")
                s = ctx.wrap_socket(s, server_hostname=sni)
            s.sendall((request or "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (sni or host)).encode())
            res["body"] = _read_all(s).decode("latin-1")
    except Exception as e:  # the outcome is the report
        res["error"] = "%s: %s" % (type(e).__name__, e)
    out(**res)
    return res


def raw(request, what=""):
    """Sends request as is to the proxy and reports what came back."""
    res = {"kind": "raw", "what": what}
    try:
        s = socket.create_connection(PROXY, timeout=15)
        s.sendall(request.encode())
        data = _read_all(s)
        res["status"] = _status(data)
        res["body"] = data.decode("latin-1")
    except Exception as e:
        res["error"] = "%s: %s" % (type(e).__name__, e)
    out(**res)
    return res


def absolute(url, host=None, what=""):
    """An absolute-form GET of url through the proxy, with Host host (by
    default url's own)."""
    from urllib.parse import urlsplit
    h = host or urlsplit(url).netloc
    return raw("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (url, h), what=what or url)


def urlopen(url, what=""):
    """urllib.request through the proxy variables, trusting ca.pem."""
    import urllib.request
    res = {"kind": "urllib", "url": url, "what": what}
    try:
        ctx = ssl.create_default_context(cafile="ca.pem") if os.path.exists("ca.pem") else None
        with urllib.request.urlopen(url, timeout=20, context=ctx) as r:
            res["status"] = r.status
            res["body"] = r.read().decode("latin-1")
    except Exception as e:
        res["status"] = getattr(e, "code", 0)
        res["error"] = "%s: %s" % (type(e).__name__, e)
    out(**res)
    return res


def no_proxy():
    for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        os.environ.pop(k, None)
