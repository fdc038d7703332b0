"""The client against the real daemon.

Runs when AGENTJAIL_BIN names the agentjail binary (as root: the jails need
it); the test starts `$AGENTJAIL_BIN serve --socket $TMP/s.sock --config
$TMP/config.toml` with an empty config (the daemon's defaults), or a copy of
the file AGENTJAIL_TEST_CONFIG names. Skipped otherwise, with the reason; under
AGENTJAIL_REQUIRE_ALL=1 (CI as root) a skip is a failure, as in Go's systest.

    sudo AGENTJAIL_BIN=$PWD/bin/agentjail /usr/bin/python3 -X dev -W error \\
        -m unittest discover -s clients/python/tests -p test_integration.py -v
"""

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import agentjail
from agentjail import AsyncClient, Case, Client, Limits, Tests
from agentjail.compat import CodeSandbox, TestCase
import hygiene

BIN = os.environ.get("AGENTJAIL_BIN", "")
PACKAGE_ROOT = hygiene.PACKAGE_ROOT
EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(PACKAGE_ROOT)), "examples", "repair_loop.py")


def require():
    why = ""
    if not BIN:
        why = "AGENTJAIL_BIN is not set (point it at a built bin/agentjail to run the client against the real daemon)"
    elif not os.access(BIN, os.X_OK):
        why = f"AGENTJAIL_BIN={BIN} is not an executable file"
    elif os.geteuid() != 0:
        why = "the daemon's jails need root"
    if why:
        if os.environ.get("AGENTJAIL_REQUIRE_ALL") == "1":
            raise AssertionError(f"needs the real daemon: {why} (AGENTJAIL_REQUIRE_ALL=1)")
        raise unittest.SkipTest(why)


class Daemon:
    """`agentjail serve` on a socket of its own, for the test class.

    `extra_config` is appended to the configuration (TOML tables the test
    needs); `shared` makes the socket's directory searchable by every user,
    for tests that connect as another uid."""

    def __init__(self, extra_config="", shared=False):
        self.tmp = tempfile.mkdtemp(prefix="ajint-")
        if shared:
            os.chmod(self.tmp, 0o755)
        self.socket = os.path.join(self.tmp, "s.sock")
        self.config = os.path.join(self.tmp, "config.toml")
        src = os.environ.get("AGENTJAIL_TEST_CONFIG")
        if src:
            shutil.copyfile(src, self.config)
        else:
            with open(self.config, "w") as f:
                f.write("# empty: the daemon's defaults\n")
        if extra_config:
            with open(self.config, "r+") as f:
                text = f.read()
                for line in extra_config.splitlines():
                    if line.startswith("[") and line in text.splitlines():
                        raise AssertionError(f"{src} has a {line} table; this test needs its own:\n{extra_config}")
                f.write("\n" + extra_config)
        self.log_path = os.path.join(self.tmp, "daemon.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([BIN, "serve", "--socket", self.socket, "--config", self.config],
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            if self.proc.poll() is not None:
                out = self.output()
                self.stop()
                raise AssertionError(f"`agentjail serve` exited with {self.proc.returncode}:\n{out}")
            try:
                if Client(self.socket, timeout=2).health().get("status") == "ok":
                    return
            except agentjail.AgentjailError:
                pass
            if time.monotonic() > deadline:
                out = self.output()
                self.stop()
                raise AssertionError(f"`agentjail serve` did not answer /v1/health within 20 s:\n{out}")
            time.sleep(0.05)

    def output(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")[-4000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


class IntegrationTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require()
        cls.daemon = Daemon()
        cls.client = Client(cls.daemon.socket, timeout=60)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def wait_idle(self):
        deadline = time.monotonic() + 10
        while True:
            h = self.client.health()
            if h.get("running") == 0 and h.get("queued") == 0:
                return h
            if time.monotonic() > deadline:
                self.fail(f"the daemon still has runs: {h}")
            time.sleep(0.05)

    def test_health(self):
        h = self.client.health()
        self.assertEqual(h["status"], "ok")
        self.assertIn(h["cgroup"], ("v1", "v2"))
        for k in ("version", "running", "queued"):
            self.assertIn(k, h)

    def test_print(self):
        r = self.client.run("print(sum(range(10)))")
        self.assertEqual((r.status, r.exit_code, r.stdout, r.kill_reason), ("ok", 0, "45\n", ""))
        self.assertTrue(r.id.startswith("j-"), r.id)
        self.assertGreater(r.wall_time_ms, 0)
        if r.peak_memory_bytes is not None:
            self.assertGreater(r.peak_memory_bytes, 0)
        self.assertEqual(r.feedback, [])
        self.assertEqual(r.extra, {}, "fields of the daemon that the client does not know")

    def test_stdin_and_env(self):
        r = self.client.run("import os, sys; print(sys.stdin.read().upper(), os.environ['MY_FLAG'])",
                            stdin="héllo", env={"MY_FLAG": "1"})
        self.assertEqual(r.stdout, "HÉLLO 1\n")

    def test_uncaught_exception(self):
        r = self.client.run("x = 1\ny = x / 0\n")
        self.assertEqual((r.status, r.exit_code), ("error", 1))
        self.assertEqual(r.exception.type, "ZeroDivisionError")
        self.assertEqual(r.exception.line, 2)
        self.assertTrue(r.feedback)

    def test_tests(self):
        code = "def add(a, b):\n    return a - b\n"
        r = self.client.run(code, tests=Tests("add", [
            Case("small", (1, 2), expected=3),
            Case("zero", (0, 0), expected=0),
            Case("type", (1, 2), expected_type="int"),
            Case("raises", (None, 2), expected_exception="TypeError"),
        ]))
        self.assertEqual((r.tests.total, r.tests.passed, r.tests.failed, r.tests.all_passed), (4, 3, 1, False))
        self.assertEqual([t.passed for t in r.tests.results], [False, True, True, True])
        self.assertFalse(r.ok)
        self.assertTrue(any("small" in s for s in r.feedback), r.feedback)

    def test_expected_none_is_checked(self):
        r = self.client.run("def f():\n    return 0\n", tests=Tests("f", [Case("none", expected=None), Case("free")]))
        self.assertEqual([t.passed for t in r.tests.results], [False, True])

    def test_files_in_and_out(self):
        r = self.client.run(
            "import shutil\nshutil.copy('in/data.bin', 'out.bin')\nopen('note.txt', 'w').write(open('in/t.txt').read())",
            files={"in/data.bin": bytes(range(256)), "in/t.txt": "héllo"}, collect=["out.bin", "note.txt"])
        self.assertEqual(r.status, "ok", r.stderr)
        self.assertEqual(r.file("out.bin").read_bytes(), bytes(range(256)))
        self.assertEqual(r.file("note.txt").read_text(), "héllo")

    def test_display(self):
        r = self.client.run("import matplotlib.pyplot as plt\nplt.figure(figsize=(2, 1), dpi=100)\nplt.plot([1, 2])\nplt.show()",
                            limits={"wall_time_ms": 60000, "cpu_time_ms": 60000})
        self.assertEqual(r.status, "ok", r.stderr)
        self.assertEqual([d.mime for d in r.display], ["image/png"])
        png = r.display[0].read_bytes()
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        self.assertEqual((int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")), (200, 100))
        self.assertEqual(r.display[0].bytes, len(png))
        self.assertFalse(r.display_truncated)

    def test_memory_limit(self):
        r = self.client.run("x = bytearray(200 << 20)", limits=Limits(memory_bytes=32 << 20))
        self.assertEqual((r.status, r.kill_reason), ("killed", "memory_limit"))
        self.assertTrue(r.feedback)

    def test_wall_timeout(self):
        r = self.client.run("import time\ntime.sleep(30)", limits={"wall_time_ms": 500})
        self.assertEqual((r.status, r.kill_reason), ("killed", "wall_timeout"))

    def test_invalid_limit_names_the_field(self):
        with self.assertRaises(agentjail.InvalidRequest) as cm:
            self.client.run("pass", limits={"memory_bytes": 1})
        self.assertEqual(cm.exception.field, "limits.memory_bytes")

    def test_async_and_cancel(self):
        async def main():
            c = AsyncClient(self.daemon.socket)
            rs = await asyncio.gather(*(c.run(f"print({i})") for i in range(4)))
            self.assertEqual([r.stdout for r in rs], [f"{i}\n" for i in range(4)])
            task = asyncio.create_task(c.run("import time\ntime.sleep(30)"))
            for _ in range(200):
                await asyncio.sleep(0.02)
                if (await c.health())["running"] >= 1:
                    break
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task

        t0 = time.monotonic()
        asyncio.run(main())
        self.wait_idle()  # the daemon killed the cancelled jail
        self.assertLess(time.monotonic() - t0, 20)

    def test_hygiene_with_the_real_daemon(self):
        from test_aio import HYGIENE
        for scenario in ("cancelled", "unawaited", "abandoned", "timed_out"):
            with self.subTest(scenario=scenario):
                p = hygiene.run("-c", HYGIENE, self.daemon.socket, scenario)
                self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "done\n", ""))
        self.wait_idle()

    def test_compat(self):
        r = CodeSandbox(timeout=5, max_memory_mb=64, socket=self.daemon.socket).run(
            "def add(a, b):\n    return a + b\n", "add",
            [TestCase("small", (1, 2), expected_output=3, weight=2), TestCase("type", (1, 2), expected_type="int")])
        self.assertTrue(r.success, r.to_dict())
        self.assertEqual((r.all_passed, r.score, r.exit_code), (True, 1.0, 0))

    def test_compat_kills_name_the_limit_with_tests(self):
        # Issue 22: the daemon's first feedback sentence is then about the
        # tests; the exception must still say which limit and what to change.
        sandbox = CodeSandbox(timeout=2, max_memory_mb=32, socket=self.daemon.socket)
        r = sandbox.run("def f(n):\n    return len(bytearray(n))\n", "f", [TestCase("big", (256 << 20,))])
        self.assertEqual((r.success, r.all_passed, r.score, r.kill_reason), (False, False, 0.0, "memory_limit"))
        self.assertTrue(r.exception.startswith("MemoryError: The program was killed because it used more than its "
                                               "memory limit of 32.0 MiB"), r.exception)
        self.assertIn("max_memory_mb=32", r.exception)
        r = sandbox.run("def f():\n    while True:\n        pass\n", "f", [TestCase("loop")])
        self.assertEqual(r.kill_reason, "wall_timeout", r.to_dict())
        self.assertTrue(r.exception.startswith("TimeoutError: Timeout after 2s. The program was killed after running"),
                        r.exception)
        self.assertIn("timeout=2", r.exception)

    def test_compat_without_tests(self):
        r = CodeSandbox(timeout=5, socket=self.daemon.socket).run("print(1)")
        self.assertEqual((r.success, r.all_passed, r.score, r.stdout), (True, False, 0.0, "1\n"))

    def test_repair_loop_example(self):
        p = subprocess.run([sys.executable, EXAMPLE, "--socket", self.daemon.socket],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("round 1: ok, 3/5 tests pass", p.stdout)
        self.assertTrue(p.stdout.rstrip().endswith("all tests pass after 3 round(s)"), p.stdout)


if __name__ == "__main__":
    unittest.main()
