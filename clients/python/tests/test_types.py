"""Building the run request and reading the result, without a daemon."""

import ast
import base64
import os
import pickle
import unittest

from agentjail import NOT_SET, Case, CollectedFile, Display, File, Limits, Result, SessionInfo, SessionResult, SessionState, Tests
from agentjail.types import build_request, build_session_request, build_session_run

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "agentjail")


class BuildRequestTest(unittest.TestCase):
    def test_only_code(self):
        self.assertEqual(build_request("pass"), {"code": "pass"})

    def test_expected_none_versus_no_expected(self):
        t = Tests("f", [Case("none", expected=None), Case("unchecked"), Case("zero", expected=0),
                        {"name": "dict-none", "expected": None}, {"name": "dict-unset", "expected": NOT_SET}])
        cases = build_request("pass", tests=t)["tests"]["cases"]
        self.assertEqual([("expected" in c, c.get("expected")) for c in cases],
                         [(True, None), (False, None), (True, 0), (True, None), (False, None)])

    def test_tests_as_a_dict(self):
        req = build_request("pass", tests={"function": "f", "cases": [Case("a", (1,), expected=[1, 2]),
                                                                       {"name": "b", "args": (2,)}]})
        self.assertEqual(req["tests"], {"function": "f", "cases": [
            {"name": "a", "args": [1], "kwargs": {}, "expected": [1, 2]}, {"name": "b", "args": [2]}]})

    def test_limits(self):
        self.assertEqual(build_request("pass", limits=Limits(pids=8))["limits"], {"pids": 8})
        self.assertEqual(build_request("pass", limits={"pids": 8, "memory_bytes": None})["limits"], {"pids": 8})
        self.assertEqual(Limits().to_dict(), {})

    def test_files_forms(self):
        want = [{"path": "a.txt", "content": "hi", "encoding": "utf-8"},
                {"path": "b.bin", "content": base64.b64encode(b"\x00\x01").decode(), "encoding": "base64"}]
        self.assertEqual(build_request("pass", files={"a.txt": "hi", "b.bin": b"\x00\x01"})["files"], want)
        self.assertEqual(build_request("pass", files=[File("a.txt", "hi"), File("b.bin", bytearray(b"\x00\x01"))])["files"], want)
        self.assertEqual(build_request("pass", files=[{"path": "a.txt", "content": "hi", "encoding": "utf-8"},
                                                       {"path": "b.bin", "content": b"\x00\x01"}])["files"], want)
        passthrough = [{"path": "c", "content": "AAE=", "encoding": "base64"}]
        self.assertEqual(build_request("pass", files=passthrough)["files"], passthrough)

    def test_collect_and_stdin(self):
        self.assertEqual(build_request("pass", collect="out/*.png")["collect"], ["out/*.png"])
        self.assertEqual(build_request("pass", collect=("a", "b"))["collect"], ["a", "b"])
        self.assertEqual(build_request("pass", stdin=b"x\n")["stdin"], "x\n")
        self.assertEqual(build_request("pass", stdin="")["stdin"], "")

    def test_type_mistakes_are_caught_before_sending(self):
        for kw in ({"files": "a.txt"}, {"files": 3}, {"files": {"a": 3}}, {"files": [3]}, {"files": {1: "x"}},
                   {"limits": 5}, {"tests": ["f"]}, {"tests": {"function": "f", "cases": [3]}},
                   {"stdin": 5}, {"env": ["A=1"]}):
            with self.subTest(kw=kw), self.assertRaises(TypeError):
                build_request("pass", **kw)
        with self.assertRaises(TypeError):
            build_request(b"pass")
        with self.assertRaises(ValueError):
            build_request("pass", stdin=b"\xff")

    def test_environment_and_start(self):
        self.assertEqual(build_request("pass", environment="venv", start="cold"),
                         {"code": "pass", "environment": "venv", "start": "cold"})
        self.assertNotIn("environment", build_request("pass", environment=None))
        for kw in ({"environment": 3}, {"start": True}):
            with self.subTest(kw=kw), self.assertRaises(TypeError):
                build_request("pass", **kw)

    def test_session_requests(self):
        self.assertEqual(build_session_request(), {})
        self.assertEqual(build_session_request(environment="venv", limits=Limits(memory_bytes=64 << 20, cpu_time_ms=9000),
                                               env={"A": 1}, files={"a.txt": "x"}, idle_timeout_ms=5000, start="warm"),
                         {"environment": "venv", "limits": {"memory_bytes": 64 << 20, "cpu_time_ms": 9000},
                          "env": {"A": "1"}, "files": [{"path": "a.txt", "content": "x", "encoding": "utf-8"}],
                          "idle_timeout_ms": 5000, "start": "warm"})
        self.assertEqual(build_session_run("x", stdin="in", collect="*.png", limits={"wall_time_ms": 500},
                                           tests=Tests("f", [Case("a", (1,), expected=1)])),
                         {"code": "x", "stdin": "in", "collect": ["*.png"], "limits": {"wall_time_ms": 500},
                          "tests": {"function": "f", "cases": [{"name": "a", "args": [1], "kwargs": {}, "expected": 1}]}})
        for kw in ({"idle_timeout_ms": "1000"}, {"idle_timeout_ms": True}, {"limits": 3}, {"env": "A=1"},
                   {"files": 3}, {"environment": 1}, {"start": 1}):
            with self.subTest(kw=kw), self.assertRaises(TypeError):
                build_session_request(**kw)
        with self.assertRaises(TypeError):
            build_session_run(b"x")

    def test_not_set_is_a_singleton(self):
        self.assertIs(pickle.loads(pickle.dumps(NOT_SET)), NOT_SET)
        self.assertFalse(NOT_SET)
        self.assertEqual(repr(NOT_SET), "NOT_SET")


class ResultTest(unittest.TestCase):
    def test_ok(self):
        self.assertTrue(Result.from_dict({"status": "ok"}).ok)
        self.assertFalse(Result.from_dict({"status": "error"}).ok)
        failed = {"status": "ok", "tests": {"total": 1, "passed": 0, "failed": 1, "all_passed": False, "results": []}}
        self.assertFalse(Result.from_dict(failed).ok)

    def test_display(self):
        png = b"\x89PNG\r\n\x1a\n..."
        r = SessionResult.from_dict({"status": "ok", "value": "df", "display_truncated": True, "display": [
            {"mime": "image/png", "data": base64.b64encode(png).decode(), "bytes": len(png)},
            {"mime": "text/html", "data": "<table>é</table>", "bytes": 17}]})
        self.assertEqual([d.mime for d in r.display], ["image/png", "text/html"])
        self.assertIsInstance(r.display[0], Display)
        self.assertEqual(r.display[0].read_bytes(), png)
        self.assertEqual(r.display[0]._repr_png_(), png)
        self.assertEqual(r.display[1].read_bytes(), "<table>é</table>".encode())
        self.assertEqual(r.display[1]._repr_html_(), "<table>é</table>")
        self.assertIsNone(r.display[1]._repr_png_())
        self.assertEqual(r.display[1].bytes, 17)
        self.assertTrue(r.display_truncated)
        self.assertEqual(Result.from_dict({"status": "ok"}).display, [], "an older daemon's result")
        self.assertEqual(Result.from_dict({"status": "ok", "display": None}).display, [])
        with self.assertRaises(ValueError):
            Display(mime="image/png", data="***").read_bytes()
        self.assertEqual(build_request("pass", limits=Limits(display_bytes=4096))["limits"], {"display_bytes": 4096})

    def test_collected_file(self):
        self.assertEqual(CollectedFile(path="a", encoding="base64", content="AAE=").read_bytes(), b"\x00\x01")
        self.assertEqual(CollectedFile(path="a", content="é").read_bytes(), "é".encode())
        with self.assertRaises(ValueError):
            CollectedFile(path="a", encoding="base64", content="***").read_bytes()

    def test_exact_bytes_of_the_streams(self):
        raw = b"\xff\xfe abc \x80"
        r = Result.from_dict({"status": "ok", "stdout": "\ufffd\ufffd abc \ufffd",
                              "stdout_base64": base64.b64encode(raw).decode(), "stderr": "é\n", "stderr_base64": None})
        self.assertEqual((r.stdout_bytes, r.stderr_bytes), (raw, "é\n".encode()))
        self.assertEqual(r.extra, {})
        older = Result.from_dict({"status": "ok", "stdout": "x"})  # a daemon without the fields
        self.assertEqual((older.stdout_bytes, older.stderr_bytes, older.stdout_base64), (b"x", b"", None))
        with self.assertRaisesRegex(ValueError, "stdout_base64"):
            Result.from_dict({"stdout_base64": "***"}).stdout_bytes

    def test_exact_bytes_of_a_file_name(self):
        name = b"out/\xff.txt"
        r = Result.from_dict({"status": "ok", "files": [
            {"path": "out/\ufffd.txt", "path_base64": base64.b64encode(name).decode(), "size": 1,
             "encoding": "utf-8", "content": "x"},
            {"path": "plain.txt", "size": 1, "encoding": "utf-8", "content": "y"}]})
        self.assertEqual(r.files[0].path_bytes, name)
        self.assertEqual(r.files[1].path_bytes, b"plain.txt")
        self.assertEqual(r.file(name).read_text(), "x")
        self.assertEqual(r.file(b"plain.txt").read_text(), "y")
        self.assertEqual(r.file("out/\ufffd.txt").read_text(), "x")
        with self.assertRaises(KeyError):
            r.file(b"out/\xfe.txt")

    def test_network(self):
        self.assertEqual(build_request("pass", network="pypi")["network"], {"policy": "pypi"})
        self.assertEqual(build_request("pass", network=["pypi.org:443"])["network"], {"allow": ["pypi.org:443"]})
        self.assertEqual(build_request("pass", network={"allow": []})["network"], {"allow": []})
        self.assertNotIn("network", build_request("pass"))
        self.assertEqual(build_session_request(network="pypi")["network"], {"policy": "pypi"})
        with self.assertRaises(TypeError):
            build_request("pass", network=3)
        rep = {"allowed": 1, "blocked": 0, "bytes_sent": 5, "bytes_received": 9, "truncated": False,
               "connections": [{"host": "pypi.org", "port": 443, "ip": "203.0.113.7", "verdict": "allowed",
                                "reason": "", "sent": 5, "received": 9, "ms": 1.5}]}
        r = Result.from_dict({"status": "ok", "network": rep})
        self.assertEqual((r.network, r.extra), (rep, {}))
        self.assertIsNone(Result.from_dict({"status": "ok", "network": None}).network)

    def test_environment_and_start_of_a_result(self):
        r = Result.from_dict({"status": "ok", "environment": "venv", "start": "warm"})
        self.assertEqual((r.environment, r.start, r.extra), ("venv", "warm", {}))
        self.assertEqual((Result.from_dict({}).environment, Result.from_dict({}).start), ("", ""))

    def test_session_result(self):
        r = SessionResult.from_dict({"status": "error", "exception": {"type": "ZeroDivisionError"}, "files": None,
                                     "value": None, "session": {"id": "s-1", "calls": 3, "alive": True,
                                                                "ended_reason": "", "new": 1}})
        self.assertIsInstance(r, Result)
        self.assertEqual(r.exception.type, "ZeroDivisionError")
        self.assertEqual((r.value, r.files, r.session), (None, [], SessionState("s-1", 3, True, "")))
        self.assertEqual(r.session.extra, {"new": 1})
        self.assertEqual(SessionResult.from_dict({"value": "'a'"}).value, "'a'")

    def test_session_info(self):
        created = SessionInfo.from_dict({"id": "s-1", "environment": "default", "limits": {"pids": 64},
                                         "idle_timeout_ms": 600000, "expires_at": "2025-01-01T00:10:00Z",
                                         "start": "cold"})
        self.assertEqual((created.id, created.start, created.limits, created.idle_timeout_ms), ("s-1", "cold",
                                                                                                 {"pids": 64}, 600000))
        self.assertEqual((created.calls, created.alive, created.created), (None, None, None))  # not sent: unknown
        self.assertEqual(SessionInfo.from_dict({"limits": None}).limits, {})

    def test_unexpected_shapes_do_not_crash(self):
        r = Result.from_dict({"status": "ok", "tests": "weird", "files": [1, {"path": "x"}], "seccomp": None})
        self.assertEqual(r.tests, "weird")
        self.assertEqual(r.files[0], 1)
        self.assertEqual(r.files[1].path, "x")


class Python39Test(unittest.TestCase):
    def test_package_parses_as_python_3_9(self):
        # The package promises Python >= 3.9; ast checks the grammar of that version.
        for name in sorted(os.listdir(PACKAGE)):
            if name.endswith(".py"):
                with self.subTest(file=name), open(os.path.join(PACKAGE, name), encoding="utf-8") as f:
                    ast.parse(f.read(), name, feature_version=(3, 9))


if __name__ == "__main__":
    unittest.main()
