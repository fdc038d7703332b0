"""Streamed output against the real daemon (docs/contract.md, "Streamed
output"): the iterator and callback forms, sync and asyncio, of a run and
of a session's call. Runs as test_integration.py does (AGENTJAIL_BIN, as
root); skipped otherwise."""

import asyncio
import time
import unittest

import agentjail
from agentjail import AsyncClient, Client
from test_integration import Daemon, require

# Prints a line, sleeps 1 s, prints another: the first line must come
# well before the run ends.
SLOW = "import sys, time\nprint('first', flush=True)\ntime.sleep(1)\nprint('second')\nprint('err', file=sys.stderr)"


class StreamTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require()
        cls.daemon = Daemon()
        cls.client = Client(cls.daemon.socket, timeout=60)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def check(self, timed, result):
        """timed: [(monotonic time, event)] of the output events, the
        result's last; the first line came well before the end."""
        self.assertEqual(timed[0][1].kind, "stdout")
        end = timed[-1][0]
        early = "".join(e.data for t, e in timed if e is not None and e.kind == "stdout" and t < end - 0.7)
        self.assertEqual(early, "first\n", "the first line came only at the end")
        out = "".join(e.data for _, e in timed if e is not None and e.kind == "stdout")
        err = "".join(e.data for _, e in timed if e is not None and e.kind == "stderr")
        self.assertEqual((out, err), (result.stdout, result.stderr))
        self.assertEqual((result.stdout, result.stderr), ("first\nsecond\n", "err\n"))

    def test_iterator(self):
        timed = [(time.monotonic(), e) for e in self.client.run_stream(SLOW)]
        self.assertEqual([e.kind for _, e in timed].count("result"), 1)
        self.assertEqual(timed[-1][1].kind, "result")
        r = timed[-1][1].result
        self.assertIsInstance(r, agentjail.Result)
        self.assertEqual(r.status, "ok")
        self.check(timed, r)

    def test_callback(self):
        timed = []
        r = self.client.run(SLOW, on_output=lambda e: timed.append((time.monotonic(), e)))
        timed.append((time.monotonic(), None))
        self.assertEqual(r.status, "ok")
        self.check(timed, r)

    def test_refusal_raises(self):
        with self.assertRaises(agentjail.InvalidRequest) as cm:
            list(self.client.run_stream("pass", limits={"memory_bytes": 1}))
        self.assertIn("limits.memory_bytes", str(cm.exception))

    def test_output_limit(self):
        events = list(self.client.run_stream("while True: print('x' * 1000, flush=True)",
                                             limits={"output_bytes": 10000}))
        r = events[-1].result
        self.assertEqual((r.status, r.kill_reason), ("killed", "output_limit"))
        self.assertEqual("".join(e.data for e in events[:-1]), r.stdout)
        self.assertLessEqual(len(r.stdout), 10000)

    def test_session(self):
        with self.client.session() as s:
            timed = [(time.monotonic(), e) for e in s.run_stream(SLOW + "\n6 * 7")]
            r = timed[-1][1].result
            self.assertEqual(r.value, "42")
            self.check(timed, r)
            self.assertEqual(s.state.calls, 1)
            timed = []
            r = s.run(SLOW, on_output=lambda e: timed.append((time.monotonic(), e)))
            timed.append((time.monotonic(), None))
            self.check(timed, r)
            self.assertEqual(s.state.calls, 2)

    def test_asyncio(self):
        async def main():
            c = AsyncClient(self.daemon.socket, timeout=60)
            timed = []
            async for e in c.run_stream(SLOW):
                timed.append((time.monotonic(), e))
            self.check(timed, timed[-1][1].result)

            timed = []

            async def note(e):
                timed.append((time.monotonic(), e))
            r = await c.run(SLOW, on_output=note)
            timed.append((time.monotonic(), None))
            self.check(timed, r)

            async with c.session() as s:
                timed = []
                async for e in s.run_stream(SLOW):
                    timed.append((time.monotonic(), e))
                self.check(timed, timed[-1][1].result)
                timed = []
                r = await s.run(SLOW, on_output=lambda e: timed.append((time.monotonic(), e)))
                timed.append((time.monotonic(), None))
                self.check(timed, r)
        asyncio.run(main())


if __name__ == "__main__":
    unittest.main()
