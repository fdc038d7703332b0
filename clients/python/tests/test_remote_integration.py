"""Remote access and many nodes (docs/contract.md §7) against real
daemons: three `$AGENTJAIL_BIN serve`, each with a `[remote]` TLS listener
on 127.0.0.1 and a certificate of the test CA (certs.py, `openssl`).

Same rules as test_integration.py (AGENTJAIL_BIN, root); without an
`openssl` binary the file skips itself (AGENTJAIL_REQUIRE_ALL=1: fails).

    AGENTJAIL_BIN=$PWD/bin/agentjail /usr/bin/python3 -X dev -W error \\
        -m unittest discover -s clients/python/tests -p test_remote_integration.py -v
"""

import asyncio
import os
import shutil
import socket
import textwrap
import threading
import time
import unittest
from unittest import mock

import agentjail
import certs
from agentjail import AsyncClient, Client
from test_integration import Daemon, require

TOKEN = "t-" + os.urandom(16).hex()
SLEEP = "import time; time.sleep(0.3); print('done')"


def make_pki():
    """A new directory with the test CA's certificate for localhost,
    127.0.0.1 and ::1, and the tokens file; and the path of ca.crt."""
    d, ca = certs.make_pki("localhost", "DNS:localhost,IP:127.0.0.1,IP:::1")
    write_tokens(d)
    return d, ca


def write_tokens(d):
    with open(os.path.join(d, "tokens"), "w") as f:
        f.write(f"tester {TOKEN}\n")
    os.chmod(os.path.join(d, "tokens"), 0o600)


async def _lost(client):
    # a node that has answered once (so its name is known), then went away
    node = client.remote.nodes()[0]
    node.name = "alpha"
    await client.attach_session("s-01ARZ3NDEKTSV4RRFFQ69G5FAV.alpha").run("1")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def remote_daemon(pki, name, k, extra="", admission="max_concurrent = 2"):
    port = free_port()
    config = textwrap.dedent(f"""\
        [remote]
        listen = "127.0.0.1:{port}"
        tls_cert = "{pki}/tls.crt"
        tls_key = "{pki}/tls.key"
        tokens_file = "{pki}/tokens"
        node = "{name}"

        [admission]
        {admission}

        [jail]
        uid_base = {2_100_000_000 + k * 100_000}
        uid_count = 1000
        """) + extra
    d = Daemon(config)
    d.port = port
    d.url = f"https://127.0.0.1:{port}"
    return d


class RemoteTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require()
        cls.pki, cls.ca = make_pki()
        cls.a = remote_daemon(cls.pki, "alpha", 1)
        cls.b = remote_daemon(cls.pki, "beta", 2)

    @classmethod
    def tearDownClass(cls):
        for d in (getattr(cls, "a", None), getattr(cls, "b", None)):
            if d is not None:
                d.stop()
        shutil.rmtree(cls.pki, ignore_errors=True)

    def client(self, *urls, **kw):
        kw.setdefault("token", TOKEN)
        return Client(urls=list(urls), ca=self.ca, timeout=60, **kw)

    def test_one_url_runs_and_says_its_node(self):
        r = Client(url=self.a.url, token=TOKEN, ca=self.ca, timeout=60).run("print(6 * 7)")
        self.assertEqual((r.status, r.stdout, r.node), ("ok", "42\n", "alpha"))

    def test_environment_url_and_token(self):
        with mock.patch.dict(os.environ, {"AGENTJAIL_URL": self.b.url, "AGENTJAIL_TOKEN": TOKEN}):
            r = Client(ca=self.ca, timeout=60).run("print(1)")
        self.assertEqual((r.stdout, r.node), ("1\n", "beta"))

    def test_token_file(self):
        path = os.path.join(self.pki, "mytoken")
        with open(path, "w") as f:
            f.write(TOKEN + "\n")
        r = Client(url=self.a.url, token_file=path, ca=self.ca, timeout=60).run("print(2)")
        self.assertEqual(r.stdout, "2\n")

    def test_missing_token_is_a_clear_error(self):
        with mock.patch.dict(os.environ, {"AGENTJAIL_TOKEN": ""}):
            with self.assertRaisesRegex(ValueError, "needs a bearer token: pass token= or token_file="):
                Client(url=self.a.url, ca=self.ca)

    def test_wrong_token_is_unauthorized(self):
        with self.assertRaises(agentjail.Unauthorized) as cm:
            self.client(self.a.url, token="wrong").run("print(1)")
        self.assertEqual(cm.exception.status, 401)
        self.assertIn("refused the bearer token", str(cm.exception))
        self.assertIsInstance(cm.exception, agentjail.Forbidden)

    def test_unknown_ca_fails_clearly(self):
        with self.assertRaisesRegex(agentjail.DaemonUnavailable, "did not verify.*pass ca="):
            Client(url=self.a.url, token=TOKEN, timeout=60).run("print(1)")

    def test_runs_spread_over_both_nodes(self):
        c = self.client(self.a.url, self.b.url)
        nodes = []

        def one():
            nodes.append(c.run(SLEEP).node)
        threads = [threading.Thread(target=one) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len(nodes), 8)
        self.assertEqual(set(nodes), {"alpha", "beta"}, nodes)

    def test_session_stays_on_its_node(self):
        c = self.client(self.a.url, self.b.url)
        for _ in range(3):
            with c.session() as s:
                self.assertIn(s.node, ("alpha", "beta"))
                self.assertTrue(s.id.endswith("." + s.node), s.id)
                s.run("x = 40")
                for i in range(4):
                    r = s.run(f"x + {i}")
                    self.assertEqual((r.value, r.node), (str(40 + i), s.node))
                again = c.attach_session(s.id)  # by the id's .node alone
                self.assertEqual(again.run("x").value, "40")

    def test_async_spreads_pins_and_loses(self):
        async def main():
            c = AsyncClient(urls=[self.a.url, self.b.url], token=TOKEN, ca=self.ca, timeout=60)
            rs = await asyncio.gather(*(c.run(SLEEP) for _ in range(8)))
            self.assertEqual({r.stdout for r in rs}, {"done\n"})
            self.assertEqual({r.node for r in rs}, {"alpha", "beta"})
            async with c.session() as s:
                await s.run("z = 7")
                for _ in range(3):
                    r = await s.run("z")
                    self.assertEqual((r.value, r.node), ("7", s.node))
            bad = AsyncClient(url=self.a.url, token="wrong", ca=self.ca)
            with self.assertRaises(agentjail.Unauthorized):
                await bad.run("print(1)")
            gone = AsyncClient(url=f"https://127.0.0.1:{free_port()}", token=TOKEN, ca=self.ca)
            with self.assertRaisesRegex(agentjail.SessionLost, "lives on node alpha"):
                await _lost(gone)
        asyncio.run(main())

    def test_streams_over_remote(self):
        code = "print('a', flush=True); import time; time.sleep(0.2); print('b')"
        c = self.client(self.a.url, self.b.url)
        events = list(c.run_stream(code))
        self.assertEqual("".join(e.data for e in events if e.kind == "stdout"), "a\nb\n")
        self.assertIn(events[-1].result.node, ("alpha", "beta"))
        with c.session() as s:
            seen = []
            r = s.run("print('x')", on_output=seen.append)
            self.assertEqual(("".join(e.data for e in seen), r.node), ("x\n", s.node))

        async def main():
            ac = AsyncClient(urls=[self.a.url, self.b.url], token=TOKEN, ca=self.ca, timeout=60)
            out = [e async for e in ac.run_stream(code)]
            self.assertEqual("".join(e.data for e in out if e.kind == "stdout"), "a\nb\n")
            self.assertIn(out[-1].result.node, ("alpha", "beta"))
            async with ac.session() as s:
                seen = []
                r = await s.run("print('y')", on_output=seen.append)
                self.assertEqual(("".join(e.data for e in seen), r.node), ("y\n", s.node))
            dead = free_port()
            refused = AsyncClient(urls=[f"https://127.0.0.1:{dead}", self.b.url], token=TOKEN, ca=self.ca, timeout=60)
            for _ in range(3):
                self.prefer(refused, dead)
                out = [e async for e in refused.run_stream("print(1)")]
                self.assertEqual(out[-1].result.node, "beta")
        asyncio.run(main())

    def test_discover_localhost(self):
        # localhost is 127.0.0.1 and ::1: the daemon listens on the first
        # only, so a run sent to ::1 is refused and goes to 127.0.0.1.
        c = Client(discover=f"dns:localhost:{self.a.port}", token=TOKEN, ca=self.ca, timeout=60)
        addrs = {n.addr for n in c.remote.nodes()}
        self.assertIn("127.0.0.1", addrs)
        for _ in range(4):
            self.assertEqual(c.run("print(3)").node, "alpha")

    def test_discover_follows_the_resolver(self):
        answers = [[(socket.AF_INET, "127.0.0.1")]]
        with mock.patch("agentjail._remote.resolve", lambda name, port: answers[0]):
            c = Client(discover=f"dns:localhost:{self.a.port}", token=TOKEN, ca=self.ca, timeout=60)
        self.assertEqual([n.addr for n in c.remote.nodes()], ["127.0.0.1"])
        c.remote.resolver = lambda name, port: answers[0]
        answers[0] = [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET, "127.0.0.2")]
        c.remote.refresh(force=True)  # too soon: at most once a second
        self.assertEqual(len(c.remote.nodes()), 1)
        time.sleep(1.05)
        c.remote.refresh(force=True)  # as after a connection failure
        self.assertEqual(sorted(n.addr for n in c.remote.nodes()), ["127.0.0.1", "127.0.0.2"])

    def prefer(self, client, port):
        """Make the node at port look best to the client (the others full),
        so that a run is sent there first."""
        for n in client.remote.nodes():
            n.free, n.seen = (100, time.monotonic() + 3600) if n.port == port else (0, 0.0)

    def test_refused_connection_goes_to_another_node(self):
        dead = free_port()
        c = self.client(f"https://127.0.0.1:{dead}", self.b.url)
        for _ in range(3):
            self.prefer(c, dead)
            self.assertEqual(c.run("print(1)").node, "beta")
        with self.assertRaisesRegex(agentjail.DaemonUnavailable, "refused the connection"):
            self.client(f"https://127.0.0.1:{dead}").run("print(1)")

    def test_full_node_429_goes_to_another_node(self):
        d = remote_daemon(self.pki, "delta", 4, admission="max_concurrent = 1\nqueue_length = 0")
        try:
            hold = threading.Thread(target=lambda: self.assertRaises(
                agentjail.Timeout, Client(d.socket, timeout=4).run, "import time; time.sleep(30)"))
            hold.start()
            deadline = time.monotonic() + 10
            while Client(d.socket, timeout=5).health().get("running", 0) < 1:
                self.assertLess(time.monotonic(), deadline, "the long run did not start")
                time.sleep(0.05)
            with self.assertRaises(agentjail.QueueFull):
                self.client(d.url).run("print(1)")
            c = self.client(d.url, self.b.url)
            for _ in range(3):
                self.prefer(c, d.port)
                self.assertEqual(c.run("print(1)").node, "beta")
            hold.join()
        finally:
            d.stop()

    def test_drained_node_is_skipped_then_its_session_is_lost(self):
        c = remote_daemon(self.pki, "gamma", 3)
        try:
            client = self.client(c.url)
            s = client.session()
            s.run("y = 5")
            Client(c.socket, timeout=10)._call("POST", agentjail._http.request("POST", "/v1/drain"))
            with self.assertRaises(agentjail.ShuttingDown) as cm:
                client.run("print(1)")
            self.assertEqual(cm.exception.code, "draining")
            both = self.client(c.url, self.b.url)
            for _ in range(4):  # gamma looks best, refuses before the start: beta runs it
                self.prefer(both, c.port)
                self.assertEqual(both.run("print(1)").node, "beta")
            c.stop()
            with self.assertRaisesRegex(agentjail.SessionLost, "lives on node gamma.*start a new session"):
                s.run("y")
            s.close()  # the node is gone: not an error
        finally:
            c.stop()


if __name__ == "__main__":
    unittest.main()
