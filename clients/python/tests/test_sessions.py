"""Sessions (issue 19) against a fake daemon that simulates them
(fakedaemon.FakeSessions): the requests on the wire, state across calls,
every error answer, and deletion when a `with`/`async with` block ends —
normally, by an exception, by a cancelled task, by a task abandoned in a
closed loop — with nothing left for `python3 -X dev -W error` to report."""

import asyncio
import base64
import sys
import textwrap
import threading
import time
import unittest

import agentjail
from agentjail import AsyncClient, Case, Client, Limits, Tests
from fakedaemon import FakeDaemon, FakeSessions, error, hold
import hygiene


def calls(d):
    return [f"{r.method} {r.path}" for r in d.requests]


class SessionTest(unittest.TestCase):
    def setUp(self):
        self.fake = FakeSessions()
        self.daemon = FakeDaemon(self.fake).__enter__()
        self.addCleanup(self.daemon.__exit__, None, None, None)
        self.addCleanup(self.fake.release.set)  # a held call must not outlive the test
        self.client = Client(self.daemon.path, timeout=10)

    def test_create_sends_only_what_was_given(self):
        s = self.client.session()
        req = self.daemon.requests[0]
        self.assertEqual((req.method, req.path, req.json), ("POST", "/v1/sessions", {}))
        self.assertTrue(s.id.startswith("s-"), s.id)
        self.assertEqual((s.environment, s.start, s.idle_timeout_ms), ("default", "warm", 600000))
        self.assertEqual(s.limits["memory_bytes"], 256 << 20)
        self.assertRegex(s.expires_at, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertIsNone(s.state)
        self.assertFalse(s.closed)
        s.close()

    def test_create_sends_every_field(self):
        s = self.client.session(environment="venv", limits=Limits(memory_bytes=64 << 20, cpu_time_ms=30000),
                                env={"MY_FLAG": "1"}, files={"data.csv": "a,b\n", "m.bin": b"\x00\xff"},
                                idle_timeout_ms=5000, start="cold")
        self.assertEqual(self.daemon.requests[0].json, {
            "environment": "venv", "limits": {"memory_bytes": 64 << 20, "cpu_time_ms": 30000},
            "env": {"MY_FLAG": "1"},
            "files": [{"path": "data.csv", "content": "a,b\n", "encoding": "utf-8"},
                      {"path": "m.bin", "content": base64.b64encode(b"\x00\xff").decode(), "encoding": "base64"}],
            "idle_timeout_ms": 5000, "start": "cold"})
        self.assertEqual((s.environment, s.start, s.idle_timeout_ms, s.limits["memory_bytes"]),
                         ("venv", "cold", 5000, 64 << 20))
        s.close()

    def test_run_sends_every_field(self):
        with self.client.session() as s:
            s.run("def add(a, b):\n    return a + b\n", stdin="in\n", files={"x.txt": "x"}, collect="out/*",
                  tests=Tests("add", [Case("small", (1, 2), expected=3)]), limits={"wall_time_ms": 500})
            req = self.daemon.requests[1]
        self.assertEqual((req.method, req.path), ("POST", f"/v1/sessions/{s.id}/run"))
        self.assertEqual(req.json, {"code": "def add(a, b):\n    return a + b\n", "stdin": "in\n",
                                    "files": [{"path": "x.txt", "content": "x", "encoding": "utf-8"}],
                                    "collect": ["out/*"], "limits": {"wall_time_ms": 500},
                                    "tests": {"function": "add", "cases": [
                                        {"name": "small", "args": [1, 2], "kwargs": {}, "expected": 3}]}})

    def test_state_value_and_an_exception_that_does_not_end_it(self):
        with self.client.session() as s:
            r = s.run("import math\nx = 41")
            self.assertEqual((r.status, r.value), ("ok", None))
            self.assertIsInstance(r, agentjail.SessionResult)
            self.assertEqual(r.session, agentjail.SessionState(s.id, 1, True, ""))
            r = s.run("print('side effect')\nx + 1")
            self.assertEqual((r.stdout, r.value), ("side effect\n", "42"))
            self.assertEqual(s.run("'a' * 3").value, "'aaa'")
            r = s.run("y = x\n1 / 0")
            self.assertEqual((r.status, r.exception.type, r.exception.line), ("error", "ZeroDivisionError", 2))
            self.assertEqual((r.session.alive, r.session.ended_reason, r.session.calls), (True, "", 4))
            self.assertIsNone(r.value)
            self.assertEqual(s.run("y + math.floor(0.5)").value, "41")
            self.assertEqual(s.state.calls, 5)
            for i in range(20):
                s.run("x += 1")
            self.assertEqual(s.run("x").value, "61")

    def test_info_and_list(self):
        with self.client.session() as s:
            s.run("x = 1")
            info = s.info()
            self.assertEqual(self.daemon.requests[-1].path, f"/v1/sessions/{s.id}")
            self.assertEqual((info.id, info.calls, info.alive, info.ended_reason, info.environment),
                             (s.id, 1, True, "", "default"))
            for name in ("created", "last_used", "expires_at"):
                self.assertRegex(getattr(info, name), r"Z$")
            self.assertIsInstance(info.memory_bytes, int)
            self.assertIsInstance(info.peak_memory_bytes, int)
            self.assertIsInstance(info.cpu_time_ms, float)
            self.assertEqual(info.extra, {})
            other = self.client.session()
            listed = self.client.sessions()
            self.assertEqual(self.daemon.requests[-1].path, "/v1/sessions")
            self.assertEqual(sorted(i.id for i in listed), sorted([s.id, other.id]))
            other.close()

    def test_exit_ends_the_session(self):
        with self.client.session() as s:
            r = s.run("import sys\nsys.exit(3)")
            self.assertEqual((r.status, r.exit_code), ("error", 3))
            self.assertEqual((r.session.alive, r.session.ended_reason), (False, "exited"))
            with self.assertRaises(agentjail.SessionEnded) as cm:
                s.run("1")
            e = cm.exception
            self.assertEqual((e.status, e.code, e.reason), (410, "session_ended", "exited"))
            self.assertIn("exited", str(e))
            self.assertEqual(s.info().alive, False)
        self.assertTrue(s.closed)  # the DELETE's 410 is not an error
        self.assertEqual(calls(self.daemon)[-1], f"DELETE /v1/sessions/{s.id}")

    def test_limits_that_end_the_call_or_the_session(self):
        with self.client.session() as s:
            s.run("x = 1")
            r = s.run("# wall\nwhile True: pass", limits={"wall_time_ms": 1000})
            self.assertEqual((r.status, r.kill_reason, r.session.alive), ("killed", "wall_timeout", True))
            self.assertEqual(s.run("x").value, "1")
            r = s.run("# memory\nb = bytearray(1 << 30)")
            self.assertEqual((r.status, r.kill_reason, r.session.alive, r.session.ended_reason),
                             ("killed", "memory_limit", False, "memory_limit"))
            with self.assertRaises(agentjail.SessionEnded) as cm:
                s.run("x")
            self.assertEqual(cm.exception.reason, "memory_limit")

    def test_idle_timeout(self):
        with self.client.session(idle_timeout_ms=100) as s:
            s.run("x = 1")
            time.sleep(0.3)
            with self.assertRaises(agentjail.SessionEnded) as cm:
                s.run("x")
            self.assertEqual(cm.exception.reason, "idle_timeout")
            self.assertEqual((s.info().alive, s.info().ended_reason), (False, "idle_timeout"))

    def test_a_second_concurrent_call_is_busy(self):
        with self.client.session() as s:
            out = []
            t = threading.Thread(target=lambda: out.append(s.run("# hold\nimport time; time.sleep(60)")))
            t.start()
            self.assertTrue(self.fake.held.wait(5))
            with self.assertRaises(agentjail.SessionBusy) as cm:
                s.run("1")
            self.assertEqual((cm.exception.status, cm.exception.code), (409, "session_busy"))
            self.fake.release.set()
            t.join(10)
            self.assertEqual(out[0].status, "ok")
            self.assertEqual(s.run("2").value, "2")

    def test_close_is_idempotent_and_a_closed_session_sends_nothing(self):
        s = self.client.session()
        s.close()
        s.close()
        with s:
            pass
        self.assertEqual(calls(self.daemon).count(f"DELETE /v1/sessions/{s.id}"), 1)
        self.assertEqual(self.fake.deleted, [s.id])
        n = len(self.daemon.requests)
        with self.assertRaises(agentjail.SessionEnded) as cm:
            s.run("1")
        self.assertEqual((cm.exception.status, cm.exception.reason), (None, "deleted"))
        with self.assertRaises(agentjail.SessionEnded):
            s.info()
        self.assertEqual(len(self.daemon.requests), n)

    def test_the_daemon_after_a_delete(self):
        s = self.client.session()
        s.close()
        again = self.client.attach_session(s.id)
        self.assertEqual(len(self.daemon.requests), 2)  # attaching asks nothing
        for call in (lambda: again.run("1"), again.info):
            with self.assertRaises(agentjail.SessionEnded) as cm:
                call()
            self.assertEqual((cm.exception.status, cm.exception.reason), (410, "deleted"))
        again.close()  # 410: not an error
        self.assertTrue(again.closed)
        unknown = self.client.attach_session("s-01JUNKNOWN0000000000000000")
        with self.assertRaises(agentjail.NotFound) as cm:
            unknown.info()
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "not_found"))
        unknown.close()  # 404: not an error either

    def test_ids_are_quoted_into_the_path(self):
        s = self.client.attach_session("../run")
        with self.assertRaises(agentjail.NotFound):
            s.run("1")
        self.assertEqual(self.daemon.requests[-1].path, "/v1/sessions/..%2Frun/run")
        with self.assertRaises(TypeError):
            self.client.attach_session("")

    def test_the_with_block_deletes_the_session(self):
        with self.client.session() as s:
            s.run("x = 1")
        self.assertEqual(self.fake.deleted, [s.id])
        self.assertTrue(s.closed)

    def test_the_with_block_deletes_it_when_the_block_raises(self):
        for exc in (ValueError("the agent gave up"), KeyboardInterrupt()):
            with self.subTest(exc=type(exc).__name__):
                with self.assertRaises(type(exc)):
                    with self.client.session() as s:
                        s.run("x = 1")
                        raise exc
                self.assertEqual(self.fake.deleted[-1], s.id)

    def test_a_failed_delete_does_not_hide_the_block_exception(self):
        def answer(req):
            if req.method == "DELETE":
                return error(500, "setup_failed", "cgroup: EBUSY")
            return self.fake(req)
        self.daemon.answer = answer
        with self.assertRaisesRegex(ValueError, "mine"):
            with self.client.session() as s:
                raise ValueError("mine")
        self.assertFalse(s.closed)
        with self.assertRaises(agentjail.SetupFailed):  # no exception in the block: the failure is raised
            with self.client.session():
                pass

    def test_too_many_sessions(self):
        self.fake.max_sessions = 1
        with self.client.session():
            with self.assertRaises(agentjail.TooManySessions) as cm:
                self.client.session()
            self.assertEqual((cm.exception.status, cm.exception.retry_after), (429, 1.0))
        with self.client.session():  # the first was deleted
            pass

    def test_invalid_requests_name_the_field(self):
        for kw, field in (({"limits": {"wall_time_ms": 1000}}, "limits.wall_time_ms"),
                          ({"environment": "nope"}, "environment"), ({"start": "hot"}, "start")):
            with self.subTest(kw=kw), self.assertRaises(agentjail.InvalidRequest) as cm:
                self.client.session(**kw)
            self.assertEqual(cm.exception.field, field)
        with self.client.session() as s:
            with self.assertRaises(agentjail.InvalidRequest) as cm:
                s.run("1", limits=Limits(memory_bytes=1 << 30))
            self.assertEqual(cm.exception.field, "limits.memory_bytes")

    def test_argument_mistakes_raise_before_sending(self):
        for kw in ({"idle_timeout_ms": "60s"}, {"environment": 1}, {"limits": 5}, {"files": 3}, {"env": ["A=1"]}):
            with self.subTest(kw=kw), self.assertRaises(TypeError):
                self.client.session(**kw)
        with self.client.session() as s:
            n = len(self.daemon.requests)
            for args, kw in (((b"1",), {}), (("1",), {"files": 3}), (("1",), {"tests": ["f"]})):
                with self.subTest(kw=kw), self.assertRaises(TypeError):
                    s.run(*args, **kw)
            self.assertEqual(len(self.daemon.requests), n)


class AsyncSessionTest(unittest.TestCase):
    def setUp(self):
        self.fake = FakeSessions()
        self.daemon = FakeDaemon(self.fake).__enter__()
        self.addCleanup(self.daemon.__exit__, None, None, None)
        self.addCleanup(self.fake.release.set)
        self.client = AsyncClient(self.daemon.path, timeout=10)

    def test_async_with(self):
        async def main():
            async with self.client.session(environment="venv", limits={"memory_bytes": 64 << 20}) as s:
                self.assertIsInstance(s, agentjail.AsyncSession)
                self.assertEqual(s.environment, "venv")
                await s.run("x = 20")
                r = await s.run("x * 2 + 2")
                info = await s.info()
                listed = await self.client.sessions()
            return s, r, info, listed

        s, r, info, listed = asyncio.run(main())
        self.assertEqual((r.value, r.session.calls, info.calls), ("42", 2, 2))
        self.assertEqual([i.id for i in listed], [s.id])
        self.assertTrue(s.closed)
        self.assertEqual(self.fake.deleted, [s.id])
        self.assertEqual(self.daemon.requests[0].json, {"environment": "venv", "limits": {"memory_bytes": 64 << 20}})

    def test_await_and_close(self):
        async def main():
            s = await self.client.session()
            r = await s.run("1 + 1")
            await s.close()
            await s.close()
            with self.assertRaises(agentjail.SessionEnded):
                await s.run("1")
            return s, r

        s, r = asyncio.run(main())
        self.assertEqual(r.value, "2")
        self.assertEqual(calls(self.daemon).count(f"DELETE /v1/sessions/{s.id}"), 1)

    def test_errors(self):
        async def main():
            async with self.client.session() as s:
                held = asyncio.ensure_future(s.run("# hold"))
                while not self.fake.held.is_set():
                    await asyncio.sleep(0.01)
                with self.assertRaises(agentjail.SessionBusy):
                    await s.run("1")
                self.fake.release.set()
                self.assertEqual((await held).status, "ok")
                await s.run("raise SystemExit(0)")
                with self.assertRaises(agentjail.SessionEnded) as cm:
                    await s.run("1")
                self.assertEqual(cm.exception.reason, "exited")
            with self.assertRaises(agentjail.NotFound):
                await self.client.attach_session("s-nope").info()

        asyncio.run(main())

    def test_an_exception_in_the_block_deletes_it(self):
        async def main():
            async with self.client.session() as s:
                await s.run("x = 1")
                raise ValueError("the agent gave up")

        with self.assertRaisesRegex(ValueError, "gave up"):
            asyncio.run(main())
        self.assertEqual(len(self.fake.deleted), 1)

    def test_a_cancelled_block_deletes_it(self):
        async def block(ids):
            async with self.client.session() as s:
                ids.append(s.id)
                await s.run("# hold\nimport time; time.sleep(60)")

        async def main():
            ids = []
            task = asyncio.ensure_future(block(ids))
            while not self.fake.held.is_set():
                await asyncio.sleep(0.01)
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task
            self.assertTrue(task.cancelled())
            return ids

        ids = asyncio.run(main())
        self.assertEqual(self.fake.deleted, ids)
        self.assertEqual(self.fake.cancelled, ids)  # the held call's connection was closed first

    def test_a_timeout_around_the_block_deletes_it(self):
        async def block():
            async with self.client.session() as s:
                await s.run("# hold")

        with self.assertRaises(asyncio.TimeoutError):
            asyncio.run(asyncio.wait_for(block(), 0.3))
        self.assertEqual(len(self.fake.deleted), 1)

    def test_a_second_cancel_does_not_stop_the_delete(self):
        deleting = threading.Event()

        def answer(req):
            if req.method == "DELETE":
                deleting.set()
                time.sleep(0.3)  # a slow DELETE, during which the task is cancelled again
            return self.fake(req)
        self.daemon.answer = answer

        async def block():
            async with self.client.session() as s:
                await s.run("# hold")

        async def main():
            task = asyncio.ensure_future(block())
            while not self.fake.held.is_set():
                await asyncio.sleep(0.01)
            task.cancel()
            while not deleting.is_set():
                await asyncio.sleep(0.01)
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task

        asyncio.run(main())
        self.assertEqual(len(self.fake.deleted), 1)

    def test_a_cancel_while_it_is_made_deletes_what_was_made(self):
        def answer(req):
            if req.method == "POST" and req.path == "/v1/sessions":
                time.sleep(0.3)  # the daemon is making it
            return self.fake(req)
        self.daemon.answer = answer

        async def block():
            async with self.client.session() as s:
                await s.run("x = 1")

        async def main():
            task = asyncio.ensure_future(block())
            while not self.daemon.received.is_set():
                await asyncio.sleep(0.01)
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task

        asyncio.run(main())
        self.assertEqual(len(self.fake.sessions), 1)
        self.assertEqual(self.fake.deleted, list(self.fake.sessions))
        self.assertNotIn("/run", " ".join(calls(self.daemon)))

    def test_a_delete_that_hangs_is_a_timeout(self):
        def answer(req):
            return hold() if req.method == "DELETE" else self.fake(req)
        self.daemon.answer = answer

        async def main(client):
            async with client.session() as s:
                await s.run("x = 1")
            return s

        with self.assertRaises(agentjail.Timeout):
            asyncio.run(main(AsyncClient(self.daemon.path, timeout=0.3)))
        with self.assertRaises(agentjail.Timeout):
            with Client(self.daemon.path, timeout=0.3).session():
                pass

    def test_an_unawaited_session_sends_nothing(self):
        opener = self.client.session()
        self.assertTrue(asyncio.iscoroutine(opener))
        opener.close()
        s = self.client.attach_session("s-1")
        s.run("1")
        s.info()
        s.close()
        self.assertEqual(self.daemon.requests, [])
        with self.assertRaises(TypeError):
            self.client.session(idle_timeout_ms="1s")
        with self.assertRaises(TypeError):
            s.run(b"1")


# Each scenario runs in a fresh interpreter under -X dev -W error, as
# test_aio.HYGIENE does: its stderr must stay empty. It prints the ids of
# the sessions it made; the test checks that each was deleted.
HYGIENE = textwrap.dedent("""
    import asyncio, gc, sys
    import agentjail
    from agentjail import AsyncClient

    path, scenario = sys.argv[1], sys.argv[2]
    delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0.3  # for a call to be under way
    c = AsyncClient(path)
    ids = []

    async def hold_in_a_session():
        async with c.session() as s:
            ids.append(s.id)
            await s.run("# hold")

    async def session_cancelled():
        t = asyncio.ensure_future(hold_in_a_session())
        await asyncio.sleep(delay)
        t.cancel()
        try:
            await t
        except asyncio.CancelledError:
            pass
        else:
            raise SystemExit("not cancelled")

    async def session_raised():
        try:
            async with c.session() as s:
                ids.append(s.id)
                await s.run("x = 1")
                raise ValueError("the agent gave up")
        except ValueError:
            pass

    async def session_timed_out():
        try:
            await asyncio.wait_for(hold_in_a_session(), delay)
        except asyncio.TimeoutError:
            pass

    async def session_taskgroup():
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(hold_in_a_session())
                tg.create_task(hold_in_a_session())
                await asyncio.sleep(delay)
                raise ValueError("the agent gave up")
        except BaseExceptionGroup as eg:  # Python 3.11+, as TaskGroup
            assert [type(e) for e in eg.exceptions] == [ValueError], eg.exceptions

    async def session_left_running():
        # asyncio.run cancels the tasks still running when main returns
        asyncio.ensure_future(hold_in_a_session())
        await asyncio.sleep(delay)

    def session_unawaited():
        opener = c.session()
        s = c.attach_session("s-0")
        s.run("1"); s.info(); s.close()
        del opener, s
        gc.collect()
        asyncio.run(asyncio.sleep(0))
        gc.collect()

    def session_abandoned():
        # A task inside `async with` still pending when its loop is closed:
        # when the coroutine is collected, the session is deleted with a
        # blocking call (nothing can be awaited then).
        loop = asyncio.new_event_loop()
        seen = []
        loop.set_exception_handler(lambda loop, ctx: seen.append(ctx["message"]))
        task = loop.create_task(hold_in_a_session())
        loop.run_until_complete(asyncio.sleep(delay))
        loop.close()
        del task
        gc.collect()
        assert seen == ["Task was destroyed but it is pending!"], seen

    if scenario in ("session_unawaited", "session_abandoned"):
        globals()[scenario]()
    else:
        asyncio.run(globals()[scenario]())
    gc.collect()
    print(" ".join(ids))
    print("done")
""")


class SessionHygieneTest(unittest.TestCase):
    def scenario(self, name, made):
        fake = FakeSessions()
        with FakeDaemon(fake) as d:
            p = hygiene.run("-c", HYGIENE, d.path, name)
            fake.release.set()
        self.assertEqual(p.stderr, "", f"{name}: the caller's interpreter saw:\n{p.stderr}")
        self.assertEqual(p.returncode, 0)
        ids, done = p.stdout.split("\n")[:2]
        self.assertEqual(done, "done")
        ids = ids.split()
        self.assertEqual(len(ids), made)
        self.assertEqual(sorted(fake.deleted), sorted(ids), f"{name}: sessions not deleted")
        self.assertEqual(sorted(fake.sessions), sorted(ids))
        return fake

    def test_cancelled(self):
        fake = self.scenario("session_cancelled", 1)
        self.assertEqual(len(fake.cancelled), 1)

    def test_raised(self):
        self.scenario("session_raised", 1)

    def test_timed_out(self):
        self.scenario("session_timed_out", 1)

    @unittest.skipIf(sys.version_info < (3, 11), "TaskGroup is Python 3.11+")
    def test_taskgroup(self):
        self.scenario("session_taskgroup", 2)

    def test_left_running_when_asyncio_run_ends(self):
        self.scenario("session_left_running", 1)

    def test_unawaited(self):
        self.scenario("session_unawaited", 0)

    def test_abandoned(self):
        self.scenario("session_abandoned", 1)


if __name__ == "__main__":
    unittest.main()
