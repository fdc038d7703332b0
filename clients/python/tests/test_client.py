"""The blocking Client against a fake daemon: requests on the wire, results,
every error answer of docs/contract.md §2, and a daemon that cannot be reached or
goes away mid-answer."""

import base64
import os
import socket
import tempfile
import threading
import time
import unittest

import agentjail
from agentjail import Case, Client, Limits, Tests
from backlog import FullBacklog
from fakedaemon import FakeDaemon, error, hold, raw, reply, result


class RequestTest(unittest.TestCase):
    def test_run_sends_only_what_was_given(self):
        with FakeDaemon() as d:
            Client(d.path).run("print(1)")
            req = d.requests[0]
            self.assertEqual((req.method, req.path), ("POST", "/v1/run"))
            self.assertEqual(req.headers["content-type"], "application/json")
            self.assertEqual(req.json, {"code": "print(1)"})

    def test_run_sends_every_field(self):
        with FakeDaemon() as d:
            Client(d.path).run(
                "print(open('in.csv').read())",
                stdin="héllo\n",
                files={"in.csv": "a,b\n", "bin/x.dat": b"\x00\xff"},
                collect=["out/*.png", "result.json"],
                limits=Limits(memory_bytes=64 << 20, wall_time_ms=2000),
                tests=Tests("add", [Case("small", (1, 2), expected=3),
                                    Case("none", [0, 0], expected=None),
                                    Case("type", [1, 2], expected_type="int"),
                                    {"name": "raises", "args": (None, 2), "expected_exception": "TypeError"}]),
                env={"MY_FLAG": "1"},
                on_forbidden_syscall="kill",
            )
            body = d.requests[0].json
        self.assertEqual(body["stdin"], "héllo\n")
        self.assertEqual(body["files"], [
            {"path": "in.csv", "content": "a,b\n", "encoding": "utf-8"},
            {"path": "bin/x.dat", "content": base64.b64encode(b"\x00\xff").decode(), "encoding": "base64"},
        ])
        self.assertEqual(body["collect"], ["out/*.png", "result.json"])
        self.assertEqual(body["limits"], {"memory_bytes": 64 << 20, "wall_time_ms": 2000})
        self.assertEqual(body["env"], {"MY_FLAG": "1"})
        self.assertEqual(body["on_forbidden_syscall"], "kill")
        self.assertEqual(body["tests"], {"function": "add", "cases": [
            {"name": "small", "args": [1, 2], "kwargs": {}, "expected": 3},
            {"name": "none", "args": [0, 0], "kwargs": {}, "expected": None},
            {"name": "type", "args": [1, 2], "kwargs": {}, "expected_type": "int"},
            {"name": "raises", "args": [None, 2], "expected_exception": "TypeError"},
        ]})

    def test_environment_and_start(self):
        with FakeDaemon(lambda req: reply(200, result(environment="venv", start="warm"))) as d:
            r = Client(d.path).run("pass", environment="venv", start="warm")
            self.assertEqual(d.requests[0].json, {"code": "pass", "environment": "venv", "start": "warm"})
        self.assertEqual((r.environment, r.start), ("venv", "warm"))

    def test_socket_from_environment(self):
        with FakeDaemon() as d:
            old = os.environ.get("AGENTJAIL_SOCKET")
            os.environ["AGENTJAIL_SOCKET"] = d.path
            try:
                c = Client()
                self.assertEqual(c.socket, d.path)
                self.assertEqual(c.run("pass").status, "ok")
            finally:
                if old is None:
                    del os.environ["AGENTJAIL_SOCKET"]
                else:
                    os.environ["AGENTJAIL_SOCKET"] = old

    def test_health(self):
        health = {"status": "ok", "version": "0.1.0", "cgroup": "v1", "running": 0, "queued": 0}
        with FakeDaemon(lambda req: reply(200, health)) as d:
            self.assertEqual(Client(d.path).health(), health)
            self.assertEqual((d.requests[0].method, d.requests[0].path), ("GET", "/v1/health"))


class ResultTest(unittest.TestCase):
    def test_result_fields(self):
        full = result(
            status="error", exit_code=1,
            exception={"type": "ZeroDivisionError", "message": "division by zero", "line": 3,
                       "traceback": "Traceback (most recent call last):\n  ...\nZeroDivisionError: division by zero"},
            tests={"total": 2, "passed": 1, "failed": 1, "all_passed": False, "results": [
                {"name": "small", "passed": True, "output": "3", "detail": "OK", "duration_ms": 0.01},
                {"name": "raises", "passed": False, "output": "", "detail": "expected TypeError, got ValueError: x",
                 "duration_ms": 0.02}]},
            seccomp={"syscall": "ptrace", "number": 101, "calls": [
                {"syscall": "ptrace", "number": 101, "count": 2}, {"syscall": "", "number": 999, "count": 1},
                {"syscall": "socket", "number": 41, "count": 1, "detail": "AF_INET, SOCK_RAW"}]},
            files=[{"path": "out/p.png", "size": 3, "encoding": "base64", "content": base64.b64encode(b"PNG").decode()},
                   {"path": "r.json", "size": 2, "encoding": "utf-8", "content": "{}"},
                   {"path": "link", "error": "a symbolic link"}],
            feedback=["Test 'raises' failed: expected TypeError, got ValueError: x"],
            pids_peak=None, peak_memory_bytes=None,
        )
        with FakeDaemon(lambda req: reply(200, full, chunked=True)) as d:
            r = Client(d.path).run("1/0")
        self.assertEqual((r.status, r.exit_code, r.ok), ("error", 1, False))
        self.assertEqual(r.exception.type, "ZeroDivisionError")
        self.assertEqual(r.exception.line, 3)
        self.assertEqual(str(r.exception), "ZeroDivisionError: division by zero (line 3)")
        self.assertEqual((r.tests.total, r.tests.passed, r.tests.failed, r.tests.all_passed), (2, 1, 1, False))
        self.assertEqual(r.tests.results[1].detail, "expected TypeError, got ValueError: x")
        self.assertEqual(r.seccomp.syscall, "ptrace")
        self.assertEqual([(c.syscall, c.number, c.count, c.detail) for c in r.seccomp.calls],
                         [("ptrace", 101, 2, ""), ("", 999, 1, ""), ("socket", 41, 1, "AF_INET, SOCK_RAW")])
        self.assertEqual(r.seccomp.detail, "")
        self.assertEqual(r.file("out/p.png").read_bytes(), b"PNG")
        self.assertEqual(r.file("r.json").read_text(), "{}")
        with self.assertRaisesRegex(OSError, "symbolic link"):
            r.file("link").read_bytes()
        with self.assertRaises(KeyError):
            r.file("nope")
        self.assertIsNone(r.pids_peak)
        self.assertIsNone(r.peak_memory_bytes)
        self.assertEqual(r.peak_memory_source, "memory.max_usage_in_bytes")
        self.assertEqual(r.feedback, ["Test 'raises' failed: expected TypeError, got ValueError: x"])

    def test_output_that_is_not_utf8_is_exact(self):
        out, err = b"\xff\xfe abc \x80", b"ok\n"
        lossy = result(stdout=out.decode("utf-8", "replace"), stdout_base64=base64.b64encode(out).decode(),
                       stderr=err.decode(), files=[{"path": "\ufffd.bin", "path_base64": base64.b64encode(b"\xff.bin").decode(),
                                                    "size": 2, "encoding": "base64", "content": "AAE="}])
        with FakeDaemon(lambda req: reply(200, lossy)) as d:
            r = Client(d.path).run("import os; os.write(1, b'\\xff\\xfe abc \\x80')")
        self.assertEqual(r.stdout, "\ufffd\ufffd abc \ufffd")
        self.assertEqual((r.stdout_bytes, r.stderr_bytes), (out, err))
        self.assertEqual(r.file(b"\xff.bin").read_bytes(), b"\x00\x01")
        self.assertEqual(r.extra, {})

    def test_unknown_fields_of_a_newer_daemon_are_kept(self):
        newer = result(warm_pool=True, exception={"type": "E", "message": "m", "line": 1, "traceback": "",
                                                  "notes": ["n"]})
        with FakeDaemon(lambda req: reply(200, newer)) as d:
            r = Client(d.path).run("pass")
        self.assertEqual(r.extra, {"warm_pool": True})
        self.assertEqual(r.exception.extra, {"notes": ["n"]})

    def test_missing_fields_of_an_older_daemon_take_defaults(self):
        older = {"id": "j-1", "status": "ok", "exit_code": 0, "stdout": "", "stderr": "",
                 "wall_time_ms": 1.0, "cpu_time_ms": 1.0, "feedback": None, "files": None}
        with FakeDaemon(lambda req: reply(200, older)) as d:
            r = Client(d.path).run("pass")
        self.assertEqual((r.status, r.feedback, r.files, r.oom_kills, r.pids_peak, r.tests), ("ok", [], [], 0, None, None))
        self.assertTrue(r.ok)

    def test_killed_is_a_result_not_an_exception(self):
        killed = result(status="killed", exit_code=137, signal="SIGKILL", kill_reason="memory_limit",
                        feedback=["The program was killed because it used more than its memory limit of 64.0 MiB"])
        with FakeDaemon(lambda req: reply(200, killed)) as d:
            r = Client(d.path).run("x = b'x' * (1 << 30)")
        self.assertEqual((r.status, r.kill_reason, r.signal, r.ok), ("killed", "memory_limit", "SIGKILL", False))


class ErrorTest(unittest.TestCase):
    def check(self, answer, exc_type, code):
        with FakeDaemon(lambda req: answer) as d:
            with self.assertRaises(exc_type) as cm:
                Client(d.path).run("pass")
        e = cm.exception
        self.assertIsInstance(e, agentjail.AgentjailError)
        self.assertEqual(e.code, code)
        return e

    def test_invalid_request_names_the_field(self):
        e = self.check(error(400, "invalid_request", "limits.memory_bytes: must be at least 16 MiB"),
                       agentjail.InvalidRequest, "invalid_request")
        self.assertEqual(e.status, 400)
        self.assertEqual(e.field, "limits.memory_bytes")
        self.assertEqual(str(e), "limits.memory_bytes: must be at least 16 MiB")

    def test_invalid_request_without_a_field(self):
        e = self.check(error(400, "invalid_request", "the body is not JSON"), agentjail.InvalidRequest,
                       "invalid_request")
        self.assertIsNone(e.field)

    def test_forbidden(self):
        self.check(error(403, "forbidden", "uid 1000 is not allowed"), agentjail.Forbidden, "forbidden")

    def test_too_large(self):
        self.check(error(413, "too_large", "body larger than 8 MiB"), agentjail.TooLarge, "too_large")

    def test_queue_full_with_retry_after(self):
        e = self.check(error(429, "queue_full", "16 runs queued", {"Retry-After": "3"}), agentjail.QueueFull,
                       "queue_full")
        self.assertEqual(e.retry_after, 3.0)

    def test_queue_full_retry_after_as_a_date(self):
        when = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 60))
        e = self.check(error(429, "queue_full", "full", {"Retry-After": when}), agentjail.QueueFull, "queue_full")
        self.assertTrue(50 <= e.retry_after <= 61, e.retry_after)

    def test_queue_full_without_retry_after(self):
        e = self.check(error(429, "queue_full", "full"), agentjail.QueueFull, "queue_full")
        self.assertIsNone(e.retry_after)

    def test_shutting_down(self):
        self.check(error(503, "shutting_down", "the daemon is stopping"), agentjail.ShuttingDown, "shutting_down")

    def test_draining_is_shutting_down(self):
        self.check(error(503, "draining", "this node is draining"), agentjail.ShuttingDown, "draining")

    def test_setup_failed_says_the_stage(self):
        e = self.check(error(500, "setup_failed", "pivot_root: EPERM"), agentjail.SetupFailed, "setup_failed")
        self.assertIn("pivot_root", str(e))

    def test_session_errors(self):
        e = self.check(error(404, "not_found", "no session s-1"), agentjail.NotFound, "not_found")
        self.assertEqual(e.status, 404)
        e = self.check(error(409, "session_busy", "a call is running"), agentjail.SessionBusy, "session_busy")
        self.assertEqual(e.status, 409)
        e = self.check(error(410, "session_ended", "session s-1 ended: its program exited", ended_reason="exited"),
                       agentjail.SessionEnded, "session_ended")
        self.assertEqual((e.status, e.reason, str(e)), (410, "exited", "session s-1 ended: its program exited"))
        e = self.check(error(429, "too_many_sessions", "64 sessions", {"Retry-After": "5"}),
                       agentjail.TooManySessions, "too_many_sessions")
        self.assertEqual(e.retry_after, 5.0)
        self.assertNotIsInstance(e, agentjail.QueueFull)  # waiting for a run slot would not help

    def test_session_errors_by_status_alone(self):
        for status, exc in ((404, agentjail.NotFound), (409, agentjail.SessionBusy), (410, agentjail.SessionEnded)):
            with self.subTest(status=status):
                e = self.check(raw(b"HTTP/1.1 %d X\r\nContent-Length: 4\r\n\r\ngone" % status), exc,
                               exc.default_code)
                self.assertEqual(e.status, status)
        e = self.check(raw(b"HTTP/1.1 410 Gone\r\nContent-Length: 0\r\n\r\n"), agentjail.SessionEnded,
                       "session_ended")
        self.assertIsNone(e.reason)

    def test_no_content_is_an_empty_object(self):
        with FakeDaemon(lambda req: reply(204, None)) as d:
            self.assertEqual(Client(d.path).health(), {})

    def test_status_decides_when_the_body_is_not_json(self):
        e = self.check(raw(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 8\r\n\r\nstopping"),
                       agentjail.ShuttingDown, "shutting_down")
        self.assertEqual(str(e), "stopping")

    def test_unknown_error_code_is_the_base_class(self):
        e = self.check(error(418, "teapot", "short and stout"), agentjail.AgentjailError, "teapot")
        self.assertIs(type(e), agentjail.AgentjailError)
        self.assertEqual(e.status, 418)

    def test_malformed_body_is_a_protocol_error(self):
        self.check(raw(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{nope"), agentjail.ProtocolError,
                   "protocol_error")

    def test_not_http_is_a_protocol_error(self):
        self.check(raw(b"SSH-2.0-OpenSSH\r\n\r\n"), agentjail.ProtocolError, "protocol_error")

    def test_too_large_before_the_body_is_read(self):
        # The daemon answers 413 and closes without reading the body: the
        # client's write fails, and it still reads the answer.
        with FakeDaemon(max_body=1024) as d:
            with self.assertRaises(agentjail.TooLarge):
                Client(d.path).run("x = 1\n" * (1 << 18))


class UnavailableTest(unittest.TestCase):
    def test_missing_socket(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "none.sock")
            with self.assertRaises(agentjail.DaemonUnavailable) as cm:
                Client(path).run("pass")
            self.assertIn(path, str(cm.exception))
            self.assertIn("agentjail serve", str(cm.exception))

    def test_stale_socket(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "stale.sock")
            s = socket.socket(socket.AF_UNIX)
            s.bind(path)
            s.close()  # the file stays, nobody listens: ECONNREFUSED
            with self.assertRaisesRegex(agentjail.DaemonUnavailable, "refused"):
                Client(path).health()

    def test_not_a_socket(self):
        with tempfile.NamedTemporaryFile() as f:
            with self.assertRaises(agentjail.DaemonUnavailable):
                Client(f.name).health()

    def test_socket_path_too_long(self):
        with self.assertRaises(ValueError):
            Client("/tmp/" + "x" * 200)

    def test_closed_without_answering(self):
        with FakeDaemon(lambda req: raw(b"")) as d:
            with self.assertRaisesRegex(agentjail.DaemonUnavailable, "without answering"):
                Client(d.path).run("pass")

    def test_closed_mid_body(self):
        with FakeDaemon(lambda req: raw(b"HTTP/1.1 200 OK\r\nContent-Length: 900\r\n\r\n{\"id\": \"j-")) as d:
            with self.assertRaisesRegex(agentjail.DaemonUnavailable, "middle"):
                Client(d.path).run("pass")

    def test_closed_mid_head(self):
        with FakeDaemon(lambda req: raw(b"HTTP/1.1 200 OK\r\nContent-Le")) as d:
            with self.assertRaisesRegex(agentjail.DaemonUnavailable, "middle"):
                Client(d.path).run("pass")

    def test_closed_mid_chunks(self):
        with FakeDaemon(lambda req: raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"id\"\r\n")) as d:
            with self.assertRaises(agentjail.DaemonUnavailable):
                Client(d.path).run("pass")

    def test_body_to_end_of_connection(self):
        body = b'{"id": "j-eof", "status": "ok"}'
        with FakeDaemon(lambda req: raw(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + body)) as d:
            self.assertEqual(Client(d.path).run("pass").id, "j-eof")

    def test_timeout_closes_the_connection(self):
        with FakeDaemon(lambda req: hold()) as d:
            t0 = time.monotonic()
            with self.assertRaises(agentjail.Timeout) as cm:
                Client(d.path, timeout=0.3).run("import time; time.sleep(60)")
            self.assertLess(time.monotonic() - t0, 5)
            self.assertIsInstance(cm.exception, TimeoutError)
            self.assertTrue(d.gone.wait(5), "the daemon never saw the client go away")

    def test_client_is_usable_from_threads(self):
        with FakeDaemon() as d:
            c = Client(d.path)
            out = []
            threads = [threading.Thread(target=lambda: out.append(c.run("pass").status)) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(out, ["ok"] * 8)


class BacklogTest(unittest.TestCase):
    # A Unix connect fails with EAGAIN while the listen backlog is full; the
    # client waits for the daemon to accept instead of failing.
    def test_waits_for_a_full_backlog(self):
        for timeout in (None, 5):
            with self.subTest(timeout=timeout), FullBacklog(serve_after=0.3) as b:
                t0 = time.monotonic()
                self.assertEqual(Client(b.path, timeout=timeout).run("pass").status, "ok")
                self.assertGreaterEqual(time.monotonic() - t0, 0.25)
                self.assertTrue(b.served.is_set())

    def test_timeout_on_a_backlog_that_stays_full(self):
        with FullBacklog(serve_after=None) as b:
            with self.assertRaisesRegex(agentjail.Timeout, "backlog"):
                Client(b.path, timeout=0.3).run("pass")


class ConnectErrorTest(unittest.TestCase):
    def test_permission_denied_is_forbidden(self):
        from agentjail.client import connect_error
        e = connect_error("/run/agentjail/agentjail.sock", PermissionError(13, "Permission denied"))
        self.assertIsInstance(e, agentjail.Forbidden)
        self.assertIsNone(e.status)



@unittest.skipUnless(os.geteuid() == 0, "needs root, to run a server as another user")
class ServerOfAnotherUserTest(unittest.TestCase):
    """A socket served by neither root nor the caller gets nothing: the
    client checks who listens (SO_PEERCRED) before it sends."""

    def test_refused_before_sending(self):
        import subprocess
        d = tempfile.mkdtemp(prefix="agentjail-nobody-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", d]))
        os.chmod(d, 0o755)
        os.chown(d, 65534, 65534)
        path = os.path.join(d, "s.sock")
        srv = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-I", "-c",
                                "import socket, sys\n"
                                "s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8); print('up', flush=True)\n"
                                "while True:\n"
                                "    c, _ = s.accept()\n"
                                "    try:\n"
                                "        c.recv(65536); c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\n{}')\n"
                                "    except OSError: pass\n"
                                "    c.close()\n",
                                path], stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (srv.kill(), srv.wait(), srv.stdout.close()))
        self.assertEqual(srv.stdout.readline(), "up\n")
        with self.assertRaisesRegex(agentjail.DaemonUnavailable, "runs as uid 65534"):
            Client(path).run("print(1)")
        import asyncio
        from agentjail.aio import AsyncClient
        with self.assertRaisesRegex(agentjail.DaemonUnavailable, "runs as uid 65534"):
            asyncio.run(AsyncClient(path).run("print(1)"))


if __name__ == "__main__":
    unittest.main()
