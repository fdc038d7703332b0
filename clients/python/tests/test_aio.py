"""The asyncio client against a fake daemon, and its hygiene in the caller's
event loop: failing runs, cancelled and timed-out tasks, un-awaited and
abandoned calls leave no "Exception ignored", no warning, no open socket."""

import asyncio
import gc
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

import agentjail
from agentjail import AsyncClient, Case, Tests
from backlog import FullBacklog
from fakedaemon import FakeDaemon, error, hold, raw, reply, result
import hygiene


class AsyncClientTest(unittest.TestCase):
    def test_run_and_health(self):
        health = {"status": "ok", "version": "x", "cgroup": "v1", "running": 0, "queued": 0}

        def answer(req):
            return reply(200, health) if req.path == "/v1/health" else reply(200, result(stdout="3\n"), chunked=True)

        async def main(path):
            c = AsyncClient(path)
            r = await c.run("print(1+2)", tests=Tests("f", [Case("a", (1,), expected=None)]))
            return r, await c.health()

        with FakeDaemon(answer) as d:
            r, h = asyncio.run(main(d.path))
            self.assertEqual(d.requests[0].json["tests"]["cases"][0]["expected"], None)
        self.assertEqual((r.status, r.stdout), ("ok", "3\n"))
        self.assertEqual(h, health)

    def test_environment_and_start(self):
        with FakeDaemon(lambda req: reply(200, result(environment="venv", start="cold"))) as d:
            r = asyncio.run(AsyncClient(d.path).run("pass", environment="venv", start="cold"))
            self.assertEqual(d.requests[0].json, {"code": "pass", "environment": "venv", "start": "cold"})
        self.assertEqual((r.environment, r.start), ("venv", "cold"))
        with self.assertRaises(TypeError):
            AsyncClient("/nonexistent/s.sock").run("pass", environment=1)

    def test_every_error_answer(self):
        cases = [
            (error(400, "invalid_request", "limits.pids: must be at most 1024"), agentjail.InvalidRequest),
            (error(403, "forbidden", "uid 1000 is not allowed"), agentjail.Forbidden),
            (error(413, "too_large", "too large"), agentjail.TooLarge),
            (error(429, "queue_full", "full", {"Retry-After": "2"}), agentjail.QueueFull),
            (error(503, "shutting_down", "stopping"), agentjail.ShuttingDown),
            (error(500, "setup_failed", "mount /proc: EPERM"), agentjail.SetupFailed),
            (raw(b""), agentjail.DaemonUnavailable),
            (raw(b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n{"), agentjail.DaemonUnavailable),
        ]
        for answer, exc in cases:
            with self.subTest(exc=exc.__name__), FakeDaemon(lambda req: answer) as d:
                async def main():
                    await AsyncClient(d.path).run("pass")
                with self.assertRaises(exc) as cm:
                    asyncio.run(main())
                if exc is agentjail.QueueFull:
                    self.assertEqual(cm.exception.retry_after, 2.0)
                if exc is agentjail.InvalidRequest:
                    self.assertEqual(cm.exception.field, "limits.pids")

    def test_missing_socket(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaises(agentjail.DaemonUnavailable):
                asyncio.run(AsyncClient(os.path.join(tmp, "no.sock")).run("pass"))

    def test_too_large_before_the_body_is_read(self):
        with FakeDaemon(max_body=1024) as d:
            with self.assertRaises(agentjail.TooLarge):
                asyncio.run(AsyncClient(d.path).run("x = 1\n" * (1 << 18)))

    def test_cancel_closes_the_connection(self):
        async def main(d):
            task = asyncio.create_task(AsyncClient(d.path).run("import time; time.sleep(60)"))
            while not d.received.is_set():
                await asyncio.sleep(0.01)
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task
            self.assertTrue(task.cancelled())

        with FakeDaemon(lambda req: hold()) as d:
            asyncio.run(main(d))
            self.assertTrue(d.gone.wait(5), "the daemon never saw the cancelled client go away")

    def test_wait_for_timeout_closes_the_connection(self):
        with FakeDaemon(lambda req: hold()) as d:
            with self.assertRaises(asyncio.TimeoutError):
                asyncio.run(asyncio.wait_for(AsyncClient(d.path).run("while True: pass"), 0.2))
            self.assertTrue(d.gone.wait(5))

    def test_client_timeout(self):
        with FakeDaemon(lambda req: hold()) as d:
            with self.assertRaises(agentjail.Timeout):
                asyncio.run(AsyncClient(d.path, timeout=0.2).run("while True: pass"))
            self.assertTrue(d.gone.wait(5))

    def test_waits_for_a_full_backlog(self):
        with FullBacklog(serve_after=0.3) as b:
            self.assertEqual(asyncio.run(AsyncClient(b.path).run("pass")).status, "ok")
            self.assertTrue(b.served.is_set())

    def test_timeout_on_a_backlog_that_stays_full(self):
        with FullBacklog(serve_after=None) as b:
            with self.assertRaises(agentjail.Timeout):
                asyncio.run(AsyncClient(b.path, timeout=0.3).run("pass"))

    def test_concurrent_runs(self):
        async def main(path):
            c = AsyncClient(path)
            return await asyncio.gather(*(c.run(f"print({i})") for i in range(10)))

        with FakeDaemon() as d:
            rs = asyncio.run(main(d.path))
        self.assertEqual([r.status for r in rs], ["ok"] * 10)

    def test_a_call_is_a_coroutine_for_asyncio(self):
        c = AsyncClient("/nonexistent/s.sock")
        call = c.run("pass")
        self.assertTrue(asyncio.iscoroutine(call))
        call.close()
        with self.assertRaises(RuntimeError):
            call.send(None)

    def test_argument_mistakes_raise_at_the_call(self):
        c = AsyncClient("/nonexistent/s.sock")
        with self.assertRaises(TypeError):
            c.run(b"print(1)")
        with self.assertRaises(TypeError):
            c.run("pass", files=42)
        with self.assertRaisesRegex(TypeError, "no JSON form"):
            c.run("pass", tests=Tests("f", [Case("set", ({1, 2},))]))
        with self.assertRaisesRegex(ValueError, "no JSON form"):
            c.run("pass", tests=Tests("f", [Case("nan", (float("nan"),))]))

    def test_unawaited_call_opens_nothing(self):
        with FakeDaemon() as d:
            call = AsyncClient(d.path).run("pass")
            del call
            gc.collect()
            self.assertEqual(d.requests, [])


# Each scenario runs in a fresh interpreter under -X dev -W error: any
# "Exception ignored", ResourceWarning, RuntimeWarning ("never awaited") or
# asyncio error log shows on its stderr, which must stay empty.
HYGIENE = textwrap.dedent("""
    import asyncio, gc, sys
    import agentjail
    from agentjail import AsyncClient

    path, scenario = sys.argv[1], sys.argv[2]
    c = AsyncClient(path)

    async def failing():
        for _ in range(3):
            try:
                await c.run("1/0")
            except agentjail.AgentjailError as e:
                pass
            else:
                raise SystemExit("no error")

    async def cancelled():
        t = asyncio.create_task(c.run("import time; time.sleep(60)"))
        await asyncio.sleep(0.2)
        t.cancel()
        try:
            await t
        except asyncio.CancelledError:
            pass
        else:
            raise SystemExit("not cancelled")

    async def timed_out():
        try:
            await asyncio.wait_for(c.run("while True: pass"), 0.2)
        except asyncio.TimeoutError:
            pass
        try:
            await AsyncClient(path, timeout=0.2).run("while True: pass")
        except agentjail.Timeout:
            pass

    async def taskgroup():
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(c.run("import time; time.sleep(60)"))
                tg.create_task(c.run("import time; time.sleep(60)"))
                await asyncio.sleep(0.2)
                raise ValueError("the agent gave up")
        except BaseExceptionGroup as eg:  # Python 3.11+, as TaskGroup
            assert [type(e) for e in eg.exceptions] == [ValueError], eg.exceptions

    def unawaited():
        for _ in range(5):
            c.run("print(1)")
            c.health()
        gc.collect()
        asyncio.run(asyncio.sleep(0))
        gc.collect()

    def abandoned():
        # A task still pending when its loop is closed (no asyncio.run):
        # asyncio reports the task itself; our socket must close quietly.
        loop = asyncio.new_event_loop()
        seen = []
        loop.set_exception_handler(lambda loop, ctx: seen.append(ctx["message"]))
        task = loop.create_task(c.run("import time; time.sleep(60)"))
        loop.run_until_complete(asyncio.sleep(0.2))
        loop.close()
        del task
        gc.collect()
        assert seen == ["Task was destroyed but it is pending!"], seen

    if scenario in ("unawaited", "abandoned"):
        globals()[scenario]()
    else:
        asyncio.run(globals()[scenario]())
    gc.collect()
    print("done")
""")


class HygieneTest(unittest.TestCase):
    def scenario(self, name, answer):
        with FakeDaemon(answer) as d:
            p = hygiene.run("-c", HYGIENE, d.path, name)
            self.assertEqual(p.stderr, "", f"{name}: the caller's interpreter saw:\n{p.stderr}")
            self.assertEqual((p.returncode, p.stdout), (0, "done\n"))
            return d

    def test_only_slow_step_lines_are_dropped(self):
        p = hygiene.run("-c", "import asyncio, sys, time\n"
                              "async def main():\n"
                              "    time.sleep(0.15)\n"
                              "asyncio.run(main())\n"
                              "print('kept', file=sys.stderr)\n")
        self.assertEqual((p.returncode, p.stderr), (0, "kept\n"))

    def test_failing_runs(self):
        answers = iter([error(500, "setup_failed", "x"), raw(b""),
                        raw(b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n{")])
        self.scenario("failing", lambda req: next(answers))

    def test_cancelled_task(self):
        d = self.scenario("cancelled", lambda req: hold())
        self.assertTrue(d.gone.is_set())

    def test_timed_out(self):
        self.scenario("timed_out", lambda req: hold())

    @unittest.skipIf(sys.version_info < (3, 11), "TaskGroup is Python 3.11+")
    def test_taskgroup(self):
        self.scenario("taskgroup", lambda req: hold())

    def test_unawaited_calls(self):
        d = self.scenario("unawaited", lambda req: reply(200, result()))
        self.assertEqual(d.requests, [])

    def test_abandoned_task(self):
        self.scenario("abandoned", lambda req: hold())

    def test_the_scenarios_can_fail(self):
        # The same check sees a plain coroutine that is never awaited: the
        # harness is able to catch what it looks for.
        code = "async def f(): pass\nf()\nimport gc; gc.collect()\n"
        p = subprocess.run([sys.executable, "-X", "dev", "-W", "error", "-c", code],
                           capture_output=True, text=True, timeout=60)
        self.assertIn("never awaited", p.stderr)


if __name__ == "__main__":
    unittest.main()
