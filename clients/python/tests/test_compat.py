"""agentjail.compat: the subprocess CodeSandbox shape on top of the daemon."""

import asyncio
import os
import tempfile
import unittest

import agentjail
from agentjail.compat import EXPECT_NONE, CodeFeedbackExtractor, CodeSandbox, ExecutionResult, SandboxResult, TestCase
from fakedaemon import FakeDaemon, error, reply, result

ADD = "def add(a, b):\n    return a - b\n"
MEMORY_SENTENCE = ("The program was killed because it used more than its memory limit of 64.0 MiB (peak 64.0 MiB); "
                   "use less memory, e.g. process data in chunks or use generators.")
WALL_SENTENCE = ("The program was killed after running for 2.0 s of wall-clock time, its limit; look for an infinite "
                 "loop, a blocking read or a long sleep.")


def tests_report(*verdicts):
    results = [{"name": n, "passed": p, "output": o, "detail": d, "duration_ms": 0.01} for n, p, o, d in verdicts]
    passed = sum(1 for r in results if r["passed"])
    return {"total": len(results), "passed": passed, "failed": len(results) - passed,
            "all_passed": passed == len(results) and bool(results), "results": results}


class RequestTest(unittest.TestCase):
    def test_limits_and_cases(self):
        with FakeDaemon() as d:
            CodeSandbox(timeout=2.5, max_memory_mb=64, socket=d.path).run(ADD, "add", [
                TestCase("small", (1, 2), expected_output=3),
                TestCase("unchecked", (1, 2)),
                TestCase("none", (0, 0), {"x": 1}, expected_output=EXPECT_NONE, expected_type="NoneType"),
                TestCase("raises", (None, 2), expected_exception="TypeError", weight=2),
            ])
            body = d.requests[0].json
        # timeout bounds CPU time too: it stays the one time limit, as in the subprocess shape
        self.assertEqual(body["limits"], {"wall_time_ms": 2500, "cpu_time_ms": 2500, "memory_bytes": 64 << 20})
        self.assertEqual(body["tests"], {"function": "add", "cases": [
            {"name": "small", "args": [1, 2], "kwargs": {}, "expected": 3},
            {"name": "unchecked", "args": [1, 2], "kwargs": {}},
            {"name": "none", "args": [0, 0], "kwargs": {"x": 1}, "expected": None, "expected_type": "NoneType"},
            {"name": "raises", "args": [None, 2], "kwargs": {}, "expected_exception": "TypeError"},
        ]})

    def test_no_cases_sends_no_tests(self):
        with FakeDaemon() as d:
            r = CodeSandbox(socket=d.path).run("print(45)", "add")
            self.assertNotIn("tests", d.requests[0].json)
        self.assertEqual((r.success, r.all_passed, r.score), (True, False, 0.0))

    def test_environment_env_files_and_collect(self):
        out = result(environment="venv", files=[{"path": "out/a.txt", "size": 2, "encoding": "utf-8", "content": "hi"}])
        with FakeDaemon(lambda req: reply(200, out)) as d:
            sandbox = CodeSandbox(socket=d.path, environment="venv", env={"A": "1", "B": "1"},
                                  files={"data.csv": "a\n", "shared.txt": "old"}, collect="out/*")
            r = sandbox.run("pass", env={"B": "2"}, files={"shared.txt": b"new"}, collect=["out/*", "log.txt"])
            body = d.requests[0].json
            sandbox.run("pass", environment="default")
            second = d.requests[1].json
            asyncio.run(CodeSandbox(socket=d.path).arun("pass", environment="venv", env={"C": "3"}))
            third = d.requests[2].json
            CodeSandbox(socket=d.path).run("pass")
            plain = d.requests[3].json
        self.assertEqual(body["environment"], "venv")
        self.assertEqual(body["env"], {"A": "1", "B": "2"})
        self.assertEqual(body["files"], [{"path": "data.csv", "content": "a\n", "encoding": "utf-8"},
                                         {"path": "shared.txt", "content": "bmV3", "encoding": "base64"}])
        self.assertEqual(body["collect"], ["out/*", "log.txt"])
        self.assertEqual((second["environment"], second["env"], second["collect"]),
                         ("default", {"A": "1", "B": "1"}, ["out/*"]))
        self.assertEqual((third["environment"], third["env"]), ("venv", {"C": "3"}))
        self.assertEqual(set(plain), {"code", "limits"})  # the seed-compatible call sends what it did
        self.assertEqual(r.environment, "venv")
        self.assertEqual(r.file("out/a.txt").read_text(), "hi")
        self.assertEqual([f.path for f in r.files], ["out/a.txt"])
        with self.assertRaises(TypeError):
            CodeSandbox(socket=d.path, files=3).run("pass")

    def test_setup_code_runs_first(self):
        with FakeDaemon() as d:
            CodeSandbox(socket=d.path).run("print(x)", setup_code="x = 1\n\n")
            self.assertEqual(d.requests[0].json["code"], "x = 1\nprint(x)")

    def test_non_json_arguments_name_the_case(self):
        with self.assertRaisesRegex(TypeError, "'sets'"):
            CodeSandbox(socket="/nonexistent.sock").run(ADD, "add", [TestCase("sets", ({1, 2},))])

    def test_sandbox_failures_raise(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaises(agentjail.DaemonUnavailable):
                CodeSandbox(socket=os.path.join(tmp, "s.sock")).run("pass")
        with FakeDaemon(lambda req: error(500, "setup_failed", "mount: EPERM")) as d:
            with self.assertRaises(agentjail.SetupFailed):
                CodeSandbox(socket=d.path).run("pass")

    def test_queue_full_is_retried(self):
        answers = iter([error(429, "queue_full", "full", {"Retry-After": "0"}), reply(200, result())])
        with FakeDaemon(lambda req: next(answers)) as d:
            self.assertTrue(CodeSandbox(socket=d.path).run("pass").success)
            self.assertEqual(len(d.requests), 2)

    def test_queue_full_past_the_timeout_raises(self):
        with FakeDaemon(lambda req: error(429, "queue_full", "full", {"Retry-After": "60"})) as d:
            with self.assertRaises(agentjail.QueueFull):
                CodeSandbox(timeout=1, socket=d.path).run("pass")


class ResultTest(unittest.TestCase):
    CASES = [TestCase("small", (1, 2), expected_output=3, weight=3),
             TestCase("zero", (0, 0), expected_output=0, weight=1),
             TestCase("str", ("a", "b"), expected_output="ab", weight=1)]

    def run_with(self, res, cases=None, **kw):
        with FakeDaemon(lambda req: reply(200, res)) as d:
            return CodeSandbox(socket=d.path, **kw).run(ADD, "add", self.CASES if cases is None else cases)

    def test_failed_cases(self):
        res = result(tests=tests_report(("small", False, "-1", "expected 3, got -1"), ("zero", True, "0", "OK"),
                                        ("str", False, "\"x\"", "expected \"ab\", got \"x\"")),
                     feedback=["Test \"small\" failed: add(1, 2) returned -1, expected 3."],
                     wall_time_ms=1500.0, peak_memory_bytes=10 << 20)
        r = self.run_with(res)
        self.assertIsInstance(r, ExecutionResult)
        self.assertIs(SandboxResult, ExecutionResult)
        self.assertEqual((r.success, r.all_passed, r.exit_code), (False, False, 0))
        self.assertAlmostEqual(r.score, 1 / 5)
        self.assertEqual((r.duration, r.max_memory_mb), (1.5, 10.0))
        self.assertEqual([t["name"] for t in r.test_results], ["small", "zero", "str"])
        self.assertEqual(r.test_results[0], {"name": "small", "passed": False, "output": "-1", "expected": "3",
                                             "detail": "expected 3, got -1", "duration_ms": 0.01, "weight": 3})
        self.assertEqual(r.test_results[2]["output"], "'x'")  # repr, as the subprocess shape showed it
        hints = CodeFeedbackExtractor.extract(r)
        self.assertEqual(hints[0], "Test \"small\" failed: add(1, 2) returned -1, expected 3.")
        self.assertIn("Test 'str' failed: expected \"ab\", got \"x\"", hints)
        self.assertEqual(sum("small" in h for h in hints), 1)  # the daemon already said it

        d = r.to_dict()
        self.assertEqual(set(d) >= {"success", "exit_code", "stdout", "stderr", "exception", "duration",
                                    "max_memory_mb", "test_results", "all_passed"}, True)
        self.assertEqual((d["duration"], d["max_memory_mb"]), ("1.50s", "10.0"))

    def test_all_passed(self):
        res = result(tests=tests_report(("small", True, "3", "OK"), ("zero", True, "0", "OK"), ("str", True, "\"ab\"", "OK")))
        r = self.run_with(res)
        self.assertEqual((r.success, r.all_passed, r.score), (True, True, 1.0))
        self.assertEqual(CodeFeedbackExtractor.extract(r), [])

    def test_program_died_before_the_cases(self):
        res = result(status="error", exit_code=1, tests=None, stderr="Traceback...\nNameError: name 'x' is not defined\n",
                     exception={"type": "NameError", "message": "name 'x' is not defined", "line": 1,
                                "traceback": "Traceback (most recent call last):\n  File \"main.py\", line 1\nNameError: name 'x' is not defined"},
                     feedback=["NameError at line 1: name 'x' is not defined."])
        r = self.run_with(res)
        self.assertEqual((r.success, r.all_passed, r.score, r.exit_code), (False, False, 0.0, 1))
        self.assertTrue(all(not t["passed"] and t["detail"].startswith("not run") for t in r.test_results))
        self.assertTrue(r.exception.endswith("NameError: name 'x' is not defined"))
        hints = CodeFeedbackExtractor.extract(r)
        self.assertEqual(hints[0], "NameError at line 1: name 'x' is not defined.")
        self.assertIn(CodeFeedbackExtractor.ERROR_PATTERNS["NameError"], hints)

    def test_killed_by_the_wall_timeout(self):
        res = result(status="killed", exit_code=137, signal="SIGKILL", kill_reason="wall_timeout",
                     feedback=["The program was killed after running for 2.0 s of wall-clock time, its limit."])
        r = self.run_with(res, cases=[], timeout=2)
        self.assertFalse(r.success)
        self.assertEqual(r.kill_reason, "wall_timeout")
        self.assertTrue(r.exception.startswith("TimeoutError: Timeout after 2s."), r.exception)
        self.assertIn(CodeFeedbackExtractor.ERROR_PATTERNS["TimeoutError"], CodeFeedbackExtractor.extract(r))

    def test_killed_by_memory(self):
        res = result(status="killed", exit_code=137, kill_reason="memory_limit", memory_limit_bytes=64 << 20,
                     feedback=[MEMORY_SENTENCE])
        r = self.run_with(res, cases=[], max_memory_mb=64)
        self.assertEqual(r.exception, f"MemoryError: {MEMORY_SENTENCE} The limit is CodeSandbox's max_memory_mb=64: "
                                      "raise it if the program needs more.")

    # Issue 22: with tests, the daemon's first sentence is about the tests;
    # the exception must still name the limit that was hit and what to change.
    def test_killed_by_memory_in_a_tested_function(self):
        res = result(status="killed", exit_code=137, signal="SIGKILL", kill_reason="memory_limit",
                     memory_limit_bytes=64 << 20,
                     tests=tests_report(("big", False, "", "not run: the program was killed (memory_limit) during 'big'")),
                     feedback=["1 of 1 tests failed.", MEMORY_SENTENCE])
        r = self.run_with(res, cases=[TestCase("big", (1,), expected_output=1)], max_memory_mb=64)
        self.assertTrue(r.exception.startswith("MemoryError: The program was killed because it used more than its "
                                               "memory limit of 64.0 MiB"), r.exception)
        self.assertIn("max_memory_mb=64", r.exception)
        self.assertNotIn("tests failed", r.exception)
        self.assertEqual((r.success, r.all_passed, r.score), (False, False, 0.0))

    def test_infinite_loop_in_a_tested_function(self):
        res = result(status="killed", exit_code=137, signal="SIGKILL", kill_reason="wall_timeout", wall_time_ms=2000.4,
                     tests=tests_report(("loop", False, "", "not run: the program was killed (wall_timeout) during 'loop'")),
                     feedback=["1 of 1 tests failed.", WALL_SENTENCE])
        r = self.run_with(res, cases=[TestCase("loop", (1,), expected_output=1)], timeout=2)
        self.assertEqual(r.exception, f"TimeoutError: Timeout after 2s. {WALL_SENTENCE} The limit is CodeSandbox's "
                                      "timeout=2: raise it if the program needs longer.")
        self.assertIn(CodeFeedbackExtractor.ERROR_PATTERNS["TimeoutError"], CodeFeedbackExtractor.extract(r))

    def test_killed_by_cpu_time(self):
        res = result(status="killed", exit_code=137, kill_reason="cpu_timeout", cpu_time_ms=2001.0,
                     feedback=["1 of 1 tests failed."])  # no sentence of the daemon's: the client makes one
        r = self.run_with(res, cases=[TestCase("x", (1,))], timeout=2)
        self.assertEqual(r.exception, "TimeoutError: The program was killed after using 2.0 s of CPU time, past its "
                                      "limit; make the algorithm faster or look for an infinite loop. The limit is "
                                      "CodeSandbox's timeout=2: raise it if the program needs longer.")

    def test_other_kills_name_the_reason(self):
        res = result(status="killed", exit_code=137, kill_reason="output_limit", feedback=[
            "The program was killed because it printed more than its output limit; print less."])
        self.assertEqual(self.run_with(res, cases=[]).exception,
                         "Killed: The program was killed because it printed more than its output limit; print less.")
        res = result(status="killed", exit_code=137, kill_reason="memory_limit", memory_limit_bytes=32 << 20, feedback=[])
        self.assertEqual(self.run_with(res, cases=[], max_memory_mb=32).exception,
                         "MemoryError: The program was killed because it used more than its memory limit of 32.0 MiB; "
                         "use less memory. The limit is CodeSandbox's max_memory_mb=32: raise it if the program needs more.")

    def test_success_all_passed_and_score_agree(self):
        passed = tests_report(("small", True, "3", "OK"), ("zero", True, "0", "OK"), ("str", True, "\"ab\"", "OK"))
        some = tests_report(("small", True, "3", "OK"), ("zero", False, "1", "expected 0, got 1"),
                            ("str", True, "\"ab\"", "OK"))
        table = [
            # (status, tests, cases?) -> (success, all_passed, score)
            (("ok", None, False), (True, False, 0.0)),
            (("error", None, False), (False, False, 0.0)),
            (("ok", passed, True), (True, True, 1.0)),
            (("ok", some, True), (False, False, 4 / 5)),
            (("error", None, True), (False, False, 0.0)),
        ]
        for (status, tests, with_cases), want in table:
            with self.subTest(status=status, tests=bool(tests), cases=with_cases):
                r = self.run_with(result(status=status, exit_code=0 if status == "ok" else 1, tests=tests),
                                  cases=None if with_cases else [])
                self.assertEqual((r.success, r.all_passed), want[:2])
                self.assertAlmostEqual(r.score, want[2])
                self.assertEqual(r.score == 1.0, r.all_passed)

    def test_name_error_after_other_runs_passes_the_feedback_through(self):
        # The daemon says that runs share no state; the compat layer keeps it, first.
        said = ["NameError at line 1: name 'df' is not defined.",
                "Each run starts a fresh interpreter: runs share no state, so 'df' from an earlier run does not exist "
                "here; define it in this run, or use a session to keep state across calls."]
        res = result(status="error", exit_code=1, feedback=said,
                     exception={"type": "NameError", "message": "name 'df' is not defined", "line": 1,
                                "traceback": "Traceback (most recent call last):\nNameError: name 'df' is not defined"})
        r = self.run_with(res, cases=[])
        self.assertEqual(r.feedback, said)
        hints = CodeFeedbackExtractor.extract(r)
        self.assertEqual(hints[:2], said)
        self.assertIn("fresh interpreter", CodeFeedbackExtractor.ERROR_PATTERNS["NameError"])

    def test_import_hints_do_not_claim_standard_library_only(self):
        for name in ("ImportError", "ModuleNotFoundError"):
            self.assertNotIn("standard library", CodeFeedbackExtractor.ERROR_PATTERNS[name])

    def test_fallback_feedback(self):
        r = ExecutionResult(success=False, stderr="boom\n")
        self.assertEqual(CodeFeedbackExtractor.extract(r), ["The code failed: check its logic and edge cases.",
                                                            "Error: boom"])

    def test_extract_takes_an_agentjail_result(self):
        res = agentjail.Result.from_dict(result(status="error", exit_code=1,
                                                exception={"type": "ZeroDivisionError", "message": "division by zero",
                                                           "line": 2, "traceback": ""},
                                                feedback=["ZeroDivisionError at line 2."]))
        hints = CodeFeedbackExtractor.extract(res)
        self.assertEqual(hints[0], "ZeroDivisionError at line 2.")
        self.assertIn(CodeFeedbackExtractor.ERROR_PATTERNS["ZeroDivisionError"], hints)

    def test_arun(self):
        with FakeDaemon() as d:
            r = asyncio.run(CodeSandbox(socket=d.path).arun("print(45)"))
        self.assertTrue(r.success)
        self.assertEqual(r.stdout, "45\n")


class TestCaseTest(unittest.TestCase):
    def test_to_dict_like_the_shape(self):
        self.assertEqual(TestCase("a", (1, 2), expected_output=3).to_dict(),
                         {"name": "a", "input_args": "(1, 2)", "expected_output": "3"})
        self.assertEqual(TestCase("b", [1], expected_exception="ValueError").to_dict(),
                         {"name": "b", "input_args": "(1,)", "expected_exception": "ValueError"})


if __name__ == "__main__":
    unittest.main()
