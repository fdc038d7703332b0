"""A run's and a session call's `command` (an argv instead of code): the
request the client builds, then, with the real daemon (AGENTJAIL_BIN, as
test_integration.py), the results."""

import asyncio
import unittest

from agentjail import AsyncClient, Client
from agentjail.types import build_request, build_session_run
from test_integration import Daemon, require


class BuildTest(unittest.TestCase):
    def test_command_request(self):
        self.assertEqual(build_request(command=["ls", "-la"]), {"command": ["ls", "-la"]})
        self.assertEqual(build_request(command=("bash", "-c", "x"), stdin="in", start="cold"),
                         {"command": ["bash", "-c", "x"], "stdin": "in", "start": "cold"})
        self.assertEqual(build_session_run(command=["pwd"]), {"command": ["pwd"]})
        self.assertEqual(build_request("pass"), {"code": "pass"})

    def test_command_mistakes(self):
        for kwargs, err, says in [
            ({"code": "pass", "command": ["ls"]}, TypeError, "not both"),
            ({}, TypeError, "give code"),
            ({"command": "ls -la"}, TypeError, "not a single string"),
            ({"command": []}, ValueError, "must not be empty"),
            ({"command": ["ls", 5]}, TypeError, "command[1]"),
        ]:
            with self.assertRaises(err, msg=kwargs) as cm:
                build_request(**kwargs)
            self.assertIn(says, str(cm.exception))


class CommandIntegrationTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require()
        cls.daemon = Daemon()
        cls.client = Client(cls.daemon.socket, timeout=60)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def test_run_command(self):
        r = self.client.run(command=["bash", "-c", "cat in.txt; echo err >&2; exit 3"], files={"in.txt": "hi"})
        self.assertEqual((r.status, r.exit_code, r.stdout, r.stderr), ("error", 3, "hi", "err\n"))
        r = self.client.run(command=["no-such-program-here"])
        self.assertEqual(r.exit_code, 127)
        self.assertIn("the program 'no-such-program-here' is not installed in environment 'default'", r.feedback[0])
        seen = []
        r = self.client.run(command=["echo", "streamed"], on_output=seen.append)
        self.assertEqual(r.stdout, "streamed\n")
        self.assertEqual("".join(e.data for e in seen), "streamed\n")

    def test_async_run_command(self):
        async def go():
            return await AsyncClient(self.daemon.socket, timeout=60).run(command=["echo", "async"])
        self.assertEqual(asyncio.run(go()).stdout, "async\n")

    def test_session_command(self):
        with self.client.session() as s:
            s.run("open('made.txt', 'w').write('by python')")
            r = s.run(command=["bash", "-c", "cat made.txt; exit 4"])
            self.assertEqual((r.status, r.exit_code, r.stdout), ("error", 4, "by python"))
            self.assertTrue(s.state.alive)


if __name__ == "__main__":
    unittest.main()
