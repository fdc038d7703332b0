# Runs one module of CPython's own test suite (Debian's
# libpython3.11-testsuite) with regrtest, as `python3 -m test MODULE`
# does, and prints one line per test that failed or erred, from
# regrtest's JUnit report: "CASE <test id> <fail|error> <last line>".
# Then "DONE <module> <tests> <skipped> <exit code>", or, when regrtest
# wrote no report (it crashed or timed out), "CRASH <module> <exit code>"
# and the end of its log. nsjail/cpython_test.go judges these lines
# against expected_failures.txt.
#
# regrtest's --junit-xml also buffers each test's output, and a test
# whose helper thread fails after the buffer is gone makes unittest
# crash the whole module (sys.stderr has no getvalue): test_socket's
# threaded cases do when their socket is refused. The driver keeps the
# report but not the buffering.
import os, subprocess, sys, xml.etree.ElementTree as ET

DRIVER = """
import sys
from test import support
def runner(stream, verbosity, capture_output=False):
    return support.testresult.get_test_runner(stream, verbosity, capture_output=False)
support.get_test_runner = runner
sys.argv[0] = "python3 -m test"
from test.libregrtest import main
main()
"""

module, timeout = os.environ["CPYTHON_TEST_MODULE"], os.environ["CPYTHON_TEST_TIMEOUT"]
report = "/tmp/junit.xml"
with open("/tmp/regrtest.log", "w+b") as log:
    rc = subprocess.run([sys.executable, "-c", DRIVER, "--junit-xml", report, "--timeout", timeout, module],
                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT).returncode
    log.seek(0)
    tail = log.read()[-6000:].decode(errors="replace")
tests = skipped = failed = 0
if os.path.exists(report):
    for case in ET.parse(report).iter("testcase"):
        tests += 1
        for kind in ("failure", "error"):
            e = case.find(kind)
            if e is not None:
                text = (e.get("message") or e.text or "").strip().splitlines()
                print("CASE", case.get("name"), "fail" if kind == "failure" else "error", (text[-1] if text else "")[:300])
                failed += 1
                break
        else:
            skipped += case.find("skipped") is not None
if tests == 0:
    print("CRASH", module, rc)
    sys.stdout.write(tail)
else:
    print("DONE", module, tests, skipped, rc)
    if rc != 0 and failed == 0:  # regrtest failed outside any test: say what it said
        print("LOG", *tail.splitlines()[-30:], sep="\n")
