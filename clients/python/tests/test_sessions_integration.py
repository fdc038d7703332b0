"""Sessions (issue 19), and the run fields that came with them
(`environment`, `start`, lossless output: issues 17 and 21), against the
real daemon.

It starts `$AGENTJAIL_BIN serve` as test_integration.py does (same rules:
AGENTJAIL_BIN, root, AGENTJAIL_REQUIRE_ALL), with a configuration that also
serves uid 65534 on a socket every user may reach, so that a client of
another uid can be shown it gets 404 for the sessions of root.

The whole file skips itself when, and only when, the daemon answers 404 to
POST /v1/sessions: a daemon without sessions yet. AGENTJAIL_REQUIRE_SESSIONS=1
makes that a failure too. Nothing else skips.

    AGENTJAIL_BIN=$PWD/bin/agentjail /usr/bin/python3 -X dev -W error \\
        -m unittest discover -s clients/python/tests -p test_sessions_integration.py -v
"""

import asyncio
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

import agentjail
from agentjail import AsyncClient, Client, Limits, Tests, Case
from test_integration import PACKAGE_ROOT, Daemon, require
import hygiene

OTHER_UID = 65534  # nobody: a second client, which the configuration serves too
CONFIG = textwrap.dedent(f"""\
    [socket]
    mode = "0666"

    [peers]
    uids = [0, {OTHER_UID}]
    """)
EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(PACKAGE_ROOT)), "examples", "session_steps.py")

DAEMON = None

# The client as uid 65534 (argv: package dir, socket, mode, session id).
# "probe": try root's session, make one of its own (left alive, for root to
# look for) and list; "delete": delete its own.
OTHER_CLIENT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import agentjail
    from agentjail import _http
    c = agentjail.Client(sys.argv[2], timeout=60)
    mode, sid = sys.argv[3], sys.argv[4]
    out = {}

    def same_time(sid):  # an id made at the same millisecond as sid, never made
        return sid[:12] + "Z" * 16 + sid[28:]

    def outcome(name, fn):
        try:
            fn()
            out[name] = "ok"
        except agentjail.AgentjailError as e:
            out[name] = [e.status, e.code]

    def delete():  # DELETE itself: Session.close() takes a 404 as done
        c._call("DELETE", _http.request("DELETE", "/v1/sessions/" + sid))

    if mode == "probe":
        theirs = c.attach_session(sid)
        outcome("info", theirs.info)
        outcome("run", lambda: theirs.run("secret"))
        outcome("delete", delete)
        outcome("unknown", c.attach_session(same_time(sid)).info)
        outcome("lost", c.attach_session("s-01ARZ3NDEKTSV4RRFFQ69G5FAV").info)
        mine = c.session()
        out["mine"] = mine.id
        out["mine_value"] = mine.run("6 * 7").value
        out["listed"] = [i.id for i in c.sessions()]
    else:
        outcome("delete", delete)
    print(json.dumps(out))
    """)


def setUpModule():
    global DAEMON
    require()
    DAEMON = Daemon(extra_config=CONFIG, shared=True)
    try:
        probe = Client(DAEMON.socket, timeout=60).session()
    except agentjail.AgentjailError as e:
        out = DAEMON.output()
        DAEMON.stop()
        if e.status == 404:
            why = (f"this daemon has no sessions yet: POST /v1/sessions answered 404 {e.code} ({e}); "
                   "the tests run once it has them")
            if os.environ.get("AGENTJAIL_REQUIRE_SESSIONS") == "1":
                raise AssertionError(f"{why} (AGENTJAIL_REQUIRE_SESSIONS=1)") from None
            raise unittest.SkipTest(why) from None
        raise AssertionError(f"POST /v1/sessions failed: {type(e).__name__} {e.status} {e.code}: {e}\n{out}") from None
    except BaseException:
        DAEMON.stop()
        raise
    probe.close()


def tearDownModule():
    if DAEMON is not None:
        DAEMON.stop()


def gone(test, call, reason=None):
    """`call` must fail as for a session that is no more: 410 (with
    `reason` when given) while the daemon remembers it, 404 after."""
    with test.assertRaises((agentjail.SessionEnded, agentjail.NotFound)) as cm:
        call()
    e = cm.exception
    if isinstance(e, agentjail.SessionEnded):
        test.assertEqual((e.status, e.code), (410, "session_ended"))
        if reason is not None:
            test.assertEqual(e.reason, reason, str(e))
            test.assertIn(reason.split("_")[0], str(e).lower(), "the message says why")
    else:
        test.assertEqual((e.status, e.code), (404, "not_found"))
    return e


class Base(unittest.TestCase):
    def setUp(self):
        self.client = Client(DAEMON.socket, timeout=120)

    def assert_start(self, asked, got):
        # A cold start is always possible; a warm one where this daemon has
        # warm starts for the environment, else it starts cold.
        if asked == "cold":
            self.assertEqual(got, "cold")
        else:
            self.assertIn(got, ("warm", "cold"))

    def wait_idle(self):
        deadline = time.monotonic() + 10
        while True:
            h = self.client.health()
            if h.get("running") == 0 and h.get("queued") == 0:
                return h
            if time.monotonic() > deadline:
                self.fail(f"the daemon still has runs: {h}")
            time.sleep(0.05)


class SessionLifecycleTest(Base):
    def test_create_and_describe(self):
        with self.client.session(limits=Limits(memory_bytes=128 << 20, pids=32), idle_timeout_ms=60000) as s:
            self.assertRegex(s.id, r"^s-[0-9A-HJKMNP-TV-Z]{26}\.[A-Za-z0-9.-]+$")  # s-, a ULID, "." and the node
            self.assertEqual(s.environment, "default")
            self.assertIn(s.start, ("warm", "cold"))
            self.assertEqual((s.limits["memory_bytes"], s.limits["pids"]), (128 << 20, 32))
            self.assertEqual(s.idle_timeout_ms, 60000)
            self.assertRegex(s.expires_at, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
            self.assertEqual(s.extra, {}, "fields of the creation answer the client does not know")
            info = s.info()
            self.assertEqual((info.id, info.calls, info.alive, info.ended_reason), (s.id, 0, True, ""))
            self.assertEqual((info.environment, info.start, info.idle_timeout_ms), ("default", s.start, 60000))
            for name in ("created", "last_used", "expires_at"):
                self.assertRegex(getattr(info, name), r"Z$", name)
            self.assertEqual(info.limits["memory_bytes"], 128 << 20)
            self.assertEqual(info.extra, {}, "fields of GET /v1/sessions/{id} the client does not know")
            self.assertIn(s.id, [i.id for i in self.client.sessions()])

    def test_both_starts(self):
        for start in ("warm", "cold"):
            with self.subTest(start=start), self.client.session(start=start) as s:
                self.assert_start(start, s.start)
                self.assertEqual(s.run("1 + 1").value, "2")
                self.assertEqual(s.info().start, s.start)

    def test_state_across_100_calls(self):
        with self.client.session() as s:
            r = s.run("import json\nx = 0\ndef bump(n):\n    return n + 1\nf = open('log.txt', 'w')")
            self.assertEqual((r.status, r.value), ("ok", None), r.stderr)
            self.assertTrue(r.id.startswith("j-"), r.id)
            for i in range(100):
                r = s.run("x = bump(x)\nf.write(str(x) + '\\n'); f.flush()\nx")
                self.assertEqual((r.status, r.value), ("ok", str(i + 1)), r.stderr)
                self.assertEqual(r.session, agentjail.SessionState(s.id, i + 2, True, ""))
            r = s.run("f.close()\njson.dumps([x, len(open('log.txt').read().split())])")
            self.assertEqual(r.value, repr("[100, 100]"))
            self.assertEqual(s.info().calls, 102)

    def test_value_of_the_trailing_expression(self):
        with self.client.session() as s:
            self.assertIsNone(s.run("x = 41").value)
            r = s.run("print('out')\nx + 1")
            self.assertEqual((r.stdout, r.value), ("out\n", "42"))
            self.assertEqual(s.run("'a' + 'b'").value, "'ab'")
            self.assertEqual(s.run("None").value, "None")
            self.assertIsNone(s.run("def f():\n    return 1\n").value)
            self.assertEqual(s.run("[f()] * 3").value, "[1, 1, 1]")
            r = s.run("'z' * (10 << 20)")  # the repr is capped: a string, far shorter than 10 MiB
            self.assertEqual(r.status, "ok", r.stderr)
            self.assertIsInstance(r.value, str)
            self.assertTrue(r.value.startswith("'zzz"), r.value[:20])
            self.assertLess(len(r.value), 10 << 20)

    def test_an_exception_does_not_end_it(self):
        with self.client.session() as s:
            s.run("x = 1")
            r = s.run("y = 2\nx / 0")
            self.assertEqual((r.status, r.exit_code), ("error", 1))
            self.assertEqual((r.exception.type, r.exception.line), ("ZeroDivisionError", 2))
            self.assertTrue(r.feedback)
            self.assertIsNone(r.value)
            self.assertEqual((r.session.alive, r.session.ended_reason), (True, ""))
            r = s.run("x + y")
            self.assertEqual((r.status, r.value, r.exception), ("ok", "3", None))
            r = s.run("def broken(:\n    pass")
            self.assertEqual((r.status, r.exception.type, r.session.alive), ("error", "SyntaxError", True))
            self.assertEqual(s.run("x").value, "1")

    def test_exit_ends_it(self):
        for code in ("import sys\nsys.exit(3)", "import os\nos._exit(3)"):
            with self.subTest(code=code), self.client.session() as s:
                s.run("x = 1")
                r = s.run(code)
                self.assertEqual(r.exit_code, 3)
                self.assertEqual((r.session.alive, r.session.ended_reason), (False, "exited"))
                gone(self, lambda: s.run("x"), "exited")
                try:
                    info = s.info()  # while the daemon remembers it: its state, or 410
                except (agentjail.SessionEnded, agentjail.NotFound):
                    pass
                else:
                    self.assertEqual((info.alive, info.ended_reason), (False, "exited"))
            self.assertTrue(s.closed)

    def test_a_concurrent_call_is_busy(self):
        async def main():
            async with AsyncClient(DAEMON.socket, timeout=60).session() as s:
                await s.run("import time")
                rs = await asyncio.gather(s.run("time.sleep(1)\n'first'"), s.run("time.sleep(1)\n'second'"),
                                          return_exceptions=True)
                after = await s.run("'after'")
            return rs, after

        rs, after = asyncio.run(main())
        busy = [r for r in rs if isinstance(r, agentjail.SessionBusy)]
        done = [r for r in rs if isinstance(r, agentjail.SessionResult)]
        self.assertEqual((len(busy), len(done)), (1, 1), rs)
        self.assertEqual((busy[0].status, busy[0].code), (409, "session_busy"))
        self.assertEqual(done[0].status, "ok")
        self.assertEqual((after.value, after.session.alive), ("'after'", True))

    def test_delete_then_gone(self):
        s = self.client.session()
        s.run("x = 1")
        s.close()
        s.close()  # idempotent
        again = self.client.attach_session(s.id)
        gone(self, lambda: again.run("x"), "deleted")
        gone(self, again.info, "deleted")
        again.close()  # a 404 or 410 is not an error
        self.assertNotIn(s.id, [i.id for i in self.client.sessions() if i.alive])
        unknown = self.client.attach_session(s.id[:12] + "Z" * 16 + s.id[28:])  # made at the same millisecond
        with self.assertRaises(agentjail.NotFound):
            unknown.run("1")
        self.wait_idle()

    def test_a_session_of_an_earlier_daemon_is_lost(self):
        # An id made before this daemon started (a daemon killed with -9
        # and started again made it): SessionLost, which says to start a
        # new session; closing it is not an error.
        old = self.client.attach_session("s-01ARZ3NDEKTSV4RRFFQ69G5FAV")
        for call in (lambda: old.run("1"), old.info):
            with self.assertRaisesRegex(agentjail.SessionLost, "earlier run of the agentjail daemon.*start a new session") as cm:
                call()
            self.assertEqual((cm.exception.status, cm.exception.code), (410, "session_lost"))
        old.close()

    def test_the_with_block_deletes_it_when_it_raises(self):
        with self.assertRaisesRegex(ValueError, "the agent gave up"):
            with self.client.session() as s:
                s.run("x = 1")
                raise ValueError("the agent gave up")
        self.assertTrue(s.closed)
        gone(self, self.client.attach_session(s.id).info, "deleted")

    def test_a_cancelled_task_deletes_it(self):
        ids = []

        async def block(c):
            async with c.session() as s:
                ids.append(s.id)
                await s.run("import time\ntime.sleep(30)")

        async def main():
            c = AsyncClient(DAEMON.socket, timeout=60)
            task = asyncio.ensure_future(block(c))
            for _ in range(400):
                await asyncio.sleep(0.025)
                if ids and (await c.health())["running"] >= 1:
                    break
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task

        t0 = time.monotonic()
        asyncio.run(main())
        self.assertLess(time.monotonic() - t0, 20)
        # gone: deleted (or ended by the cancelled call first: the reason is not checked)
        gone(self, self.client.attach_session(ids[0]).info)
        self.wait_idle()

    def test_hygiene_with_the_real_daemon(self):
        from test_sessions import HYGIENE
        for scenario, made in (("session_cancelled", 1), ("session_raised", 1), ("session_abandoned", 1),
                               ("session_unawaited", 0)):
            with self.subTest(scenario=scenario):
                code = HYGIENE.replace('"# hold"', '"import time; time.sleep(30)"')
                p = hygiene.run("-c", code, DAEMON.socket, scenario, "2", timeout=90)
                self.assertEqual((p.returncode, p.stderr), (0, ""))
                ids = p.stdout.split("\n")[0].split()
                self.assertEqual(len(ids), made, p.stdout)
                for sid in ids:
                    gone(self, self.client.attach_session(sid).info, "deleted" if scenario == "session_raised" else None)
        self.wait_idle()

    def test_files_env_and_workspace_last(self):
        with self.client.session(env={"MY_FLAG": "on"}, files={"data.csv": "a,b\n1,2\n", "raw.bin": b"\x00\xff"}) as s:
            r = s.run("import os\nrows = open('data.csv').read().split()\n"
                      "open('out.txt', 'w').write(os.environ['MY_FLAG'])\nlen(rows), open('raw.bin', 'rb').read()")
            self.assertEqual((r.status, r.value), ("ok", "(2, b'\\x00\\xff')"), r.stderr)
            r = s.run("open('more.txt').read() + open('out.txt').read()", files={"more.txt": "more:"},
                      collect=["out.txt"])
            self.assertEqual(r.value, "'more:on'")
            self.assertEqual(r.file("out.txt").read_text(), "on")

    def test_tests_and_stdin_in_a_call(self):
        with self.client.session() as s:
            s.run("def add(a, b):\n    return a - b\n")
            r = s.run("def add(a, b):\n    return a + b\n", tests=Tests("add", [Case("small", (1, 2), expected=3)]))
            self.assertEqual((r.tests.total, r.tests.passed, r.tests.all_passed), (1, 1, True))
            r = s.run("import sys\nsys.stdin.read().upper()", stdin="héllo")
            self.assertEqual(r.value, "'HÉLLO'")

    def test_a_call_past_its_wall_time_is_interrupted(self):
        with self.client.session() as s:
            s.run("x = 1")
            t0 = time.monotonic()
            r = s.run("import time\ntime.sleep(30)", limits={"wall_time_ms": 500})
            self.assertLess(time.monotonic() - t0, 10)
            self.assertEqual((r.status, r.kill_reason), ("killed", "wall_timeout"))
            self.assertEqual((r.session.alive, r.session.ended_reason), (True, ""))
            self.assertEqual(s.run("x").value, "1")

    def test_the_memory_limit_ends_it(self):
        with self.client.session(limits={"memory_bytes": 64 << 20}) as s:
            s.run("x = 1")
            r = s.run("b = bytearray(256 << 20)")
            self.assertEqual((r.status, r.kill_reason), ("killed", "memory_limit"))
            self.assertEqual((r.session.alive, r.session.ended_reason), (False, "memory_limit"))
            self.assertTrue(r.feedback)
            gone(self, lambda: s.run("x"), "memory_limit")

    def test_idle_timeout(self):
        s = self.client.session(idle_timeout_ms=1000)
        try:
            s.run("x = 1")
            deadline = time.monotonic() + 15
            while True:
                time.sleep(0.5)
                try:
                    info = s.info()
                except (agentjail.SessionEnded, agentjail.NotFound):
                    break
                if not info.alive:
                    self.assertEqual(info.ended_reason, "idle_timeout")
                    break
                self.assertLess(time.monotonic(), deadline, f"alive after its idle timeout: {info}")
            gone(self, lambda: s.run("x"), "idle_timeout")
        finally:
            s.close()

    def test_another_uid_gets_404(self):
        pkg = tempfile.mkdtemp(prefix="ajpkg-")
        self.addCleanup(shutil.rmtree, pkg, True)
        os.chmod(pkg, 0o755)
        shutil.copytree(os.path.join(PACKAGE_ROOT, "agentjail"), os.path.join(pkg, "agentjail"))

        def as_other(*args):
            p = subprocess.run(["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups",
                                "/usr/bin/python3", "-I", "-c", OTHER_CLIENT, pkg, DAEMON.socket] + list(args),
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            return json.loads(p.stdout)

        with self.client.session() as s:
            s.run("secret = 42")
            out = as_other("probe", s.id)
            theirs = out["mine"]
            self.addCleanup(as_other, "delete", theirs)
            for name in ("info", "run", "delete"):
                self.assertEqual(out[name], [404, "not_found"], f"{name} of root's session as uid {OTHER_UID}")
            self.assertEqual(out["unknown"], [404, "not_found"])  # the same answer as for an id that never existed
            self.assertEqual(out["lost"], [410, "session_lost"])  # an earlier daemon's: the same for anyone
            self.assertEqual(out["mine_value"], "42")
            self.assertEqual(out["listed"], [theirs], f"uid {OTHER_UID} lists only its own sessions")
            # and the other way round
            self.assertNotIn(theirs, [i.id for i in self.client.sessions()], "root lists only its own")
            self.assertIn(s.id, [i.id for i in self.client.sessions()])
            with self.assertRaises(agentjail.NotFound):
                self.client.attach_session(theirs).info()
            r = s.run("secret")  # the other uid's DELETE did not end it
            self.assertEqual((r.value, r.session.alive), ("42", True))
        self.assertEqual(as_other("delete", theirs), {"delete": "ok"})

    def test_example(self):
        p = subprocess.run([sys.executable, EXAMPLE, "--socket", DAEMON.socket], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("mean of b: 4.0", p.stdout)


class RunFieldsTest(Base):
    def test_environment_and_start(self):
        r = self.client.run("print(1)")
        self.assertEqual(r.environment, "default")
        self.assertIn(r.start, ("warm", "cold"))
        self.assertEqual(r.extra, {})
        for start in ("warm", "cold"):
            with self.subTest(start=start):
                r = self.client.run("print(1)", environment="default", start=start)
                self.assertEqual((r.status, r.environment), ("ok", "default"))
                self.assert_start(start, r.start)

    def test_unknown_environment_names_the_field(self):
        with self.assertRaises(agentjail.InvalidRequest) as cm:
            self.client.run("pass", environment="no-such-env")
        self.assertEqual(cm.exception.field, "environment")
        self.assertIn("default", str(cm.exception), "the message lists the names this daemon has")
        with self.assertRaises(agentjail.InvalidRequest) as cm:
            self.client.session(environment="no-such-env")
        self.assertEqual(cm.exception.field, "environment")

    def test_output_that_is_not_utf8_is_exact(self):
        r = self.client.run("import os\nos.write(1, b'\\xff\\xfe abc \\x80')\nos.write(2, b'err \\xc3')")
        self.assertEqual(r.status, "ok", r.stderr)
        self.assertEqual(r.stdout, "\ufffd\ufffd abc \ufffd")
        self.assertEqual(r.stdout_bytes, b"\xff\xfe abc \x80")
        self.assertEqual(r.stderr_bytes, b"err \xc3")
        self.assertEqual(base64.b64decode(r.stdout_base64), b"\xff\xfe abc \x80")
        r = self.client.run("print('héllo')")
        self.assertIsNone(r.stdout_base64)  # valid UTF-8: no base64 twin
        self.assertIsNone(r.stderr_base64)
        self.assertEqual(r.stdout_bytes, "héllo\n".encode())

    def test_file_names_that_are_not_utf8_are_exact(self):
        r = self.client.run("import os\nos.makedirs('out')\nopen(b'out/\\xff.txt', 'wb').write(b'x')\n"
                            "open('out/ok.txt', 'w').write('y')", collect=["out/*"])
        self.assertEqual(r.status, "ok", r.stderr)
        self.assertEqual(sorted(f.path_bytes for f in r.files), [b"out/ok.txt", b"out/\xff.txt"])
        odd = r.file(b"out/\xff.txt")
        self.assertEqual((odd.read_bytes(), base64.b64decode(odd.path_base64)), (b"x", b"out/\xff.txt"))
        self.assertIn("\ufffd", odd.path)
        self.assertIsNone(r.file("out/ok.txt").path_base64)

    def test_compat_passes_the_no_shared_state_feedback_through(self):
        # Issue 22: a NameError in a run that follows others; the daemon
        # says that runs share no state (and points to sessions).
        from agentjail.compat import CodeFeedbackExtractor, CodeSandbox
        sandbox = CodeSandbox(timeout=5, socket=DAEMON.socket)
        self.assertTrue(sandbox.run("total = 41").success)
        r = sandbox.run("print(total + 1)")
        self.assertEqual((r.success, r.raw.exception.type), (False, "NameError"))
        said = [f for f in r.feedback if "state" in f.lower()]
        self.assertTrue(said, r.feedback)
        self.assertIn("session", said[0].lower())
        self.assertIn(said[0], CodeFeedbackExtractor.extract(r))

    def test_a_session_call_is_lossless_too(self):
        with self.client.session() as s:
            r = s.run("import sys\nsys.stdout.buffer.write(b'\\x80ok'); sys.stdout.flush()")
            self.assertEqual(r.stdout_bytes, b"\x80ok")


if __name__ == "__main__":
    unittest.main()
