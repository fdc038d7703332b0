"""The examples against fake daemons. examples/repair_loop.py: a fake that
judges the example's own scripted candidates (trusted code, run here with
exec) as the daemon would; the loop must print each round and exit 0 on the
fix. examples/session_steps.py: fakedaemon.FakeSessions, which runs each
step in a namespace kept across calls."""

import json
import os
import subprocess
import sys
import unittest

from fakedaemon import FakeDaemon, FakeSessions, reply, result
import hygiene

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
EXAMPLE = os.path.join(ROOT, "examples", "repair_loop.py")
SESSION_EXAMPLE = os.path.join(ROOT, "examples", "session_steps.py")


def judge(req):
    body = req.json
    ns = {}
    exec(body["code"], ns)
    fn = ns[body["tests"]["function"]]
    verdicts, feedback = [], []
    for case in body["tests"]["cases"]:
        out, raised = None, None
        try:
            out = fn(*case.get("args", []), **case.get("kwargs", {}))
        except Exception as e:  # the candidate's own exception
            raised = e
        if "expected_exception" in case:
            ok = raised is not None and case["expected_exception"] in [c.__name__ for c in type(raised).__mro__]
            detail = "OK" if ok else f"expected {case['expected_exception']}, got {type(raised).__name__ if raised else 'a return'}"
        elif raised is not None:
            ok, detail = False, f"raised {type(raised).__name__}: {raised}"
        elif "expected" in case:
            ok = out == case["expected"]
            detail = "OK" if ok else f"expected {json.dumps(case['expected'])}, got {json.dumps(out)}"
        else:
            ok = type(out).__name__ == case.get("expected_type", type(out).__name__)
            detail = "OK" if ok else f"expected type {case['expected_type']}, got {type(out).__name__}"
        verdicts.append({"name": case["name"], "passed": ok, "output": json.dumps(out), "detail": detail,
                         "duration_ms": 0.01})
        if not ok:
            feedback.append(f"Test \"{case['name']}\" failed: {detail}.")
    passed = sum(v["passed"] for v in verdicts)
    tests = {"total": len(verdicts), "passed": passed, "failed": len(verdicts) - passed,
             "all_passed": passed == len(verdicts), "results": verdicts}
    return reply(200, result(tests=tests, feedback=feedback))


class RepairLoopTest(unittest.TestCase):
    def test_loop_reaches_the_fix(self):
        with FakeDaemon(judge) as d:
            p = hygiene.run(EXAMPLE, "--socket", d.path, env=os.environ)
            rounds = len(d.requests)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stderr, "")
        self.assertEqual(rounds, 3)
        self.assertIn("round 1: ok, 3/5 tests pass", p.stdout)
        self.assertIn("feedback: Test \"even\" failed", p.stdout)
        self.assertIn("round 3: ok, 5/5 tests pass", p.stdout)
        self.assertTrue(p.stdout.rstrip().endswith("all tests pass after 3 round(s)"))

    def test_daemon_missing(self):
        p = subprocess.run([sys.executable, EXAMPLE, "--socket", "/nonexistent/agentjail.sock"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("no agentjail daemon socket", p.stderr)


class SessionStepsTest(unittest.TestCase):
    def test_steps_share_a_session(self):
        for mode in ([], ["--async"]):
            with self.subTest(mode=mode):
                fake = FakeSessions()
                with FakeDaemon(fake) as d:
                    p = hygiene.run(SESSION_EXAMPLE, "--socket", d.path, *mode, env=os.environ)
                self.assertEqual((p.returncode, p.stderr), (0, ""), p.stdout)
                self.assertIn("step load: ok, value 4\n", p.stdout)
                self.assertIn("step median: error: NameError", p.stdout)
                self.assertIn("step mean: ok, value 4.0\n  session: 4 call(s), alive=True", p.stdout)
                self.assertIn("report.txt: rows: 3, mean of b: 4.0\n", p.stdout)
                self.assertTrue(p.stdout.endswith("calls: 5\nsession deleted\n"), p.stdout)
                self.assertEqual(fake.deleted, list(fake.sessions))
                self.assertEqual(d.requests[0].json["files"][0]["path"], "data.csv")

    def test_daemon_missing(self):
        p = subprocess.run([sys.executable, SESSION_EXAMPLE, "--socket", "/nonexistent/agentjail.sock"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no agentjail daemon socket", p.stderr)


if __name__ == "__main__":
    unittest.main()
