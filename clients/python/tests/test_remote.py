"""The remote client's arguments, node choice and discovery, without a
daemon (test_remote_integration.py has the real ones)."""

import os
import socket
import tempfile
import unittest
from unittest import mock

import agentjail
from agentjail import _remote
from agentjail.errors import from_response


def remote(**kw):
    args = dict(url=None, urls=None, discover=None, token="tok", token_file=None, ca=None, socket=None)
    args.update(kw)
    return _remote.remote_from(**args)


class ArgumentsTest(unittest.TestCase):
    def test_bad_urls_say_what_to_give(self):
        for url, msg in [("ftp://h:1", "https://HOST:PORT"), ("https://h:1/v1", "no path"),
                         ("h:8443", "https://HOST:PORT")]:
            with self.assertRaisesRegex(ValueError, msg):
                remote(url=url)
        with self.assertRaisesRegex(ValueError, "mix https:// and http://"):
            remote(urls=["https://a:1", "http://b:1"])
        with self.assertRaisesRegex(TypeError, "for one, pass url="):
            remote(urls="https://a:1")
        with self.assertRaisesRegex(ValueError, "pass one of url=, urls= and discover="):
            remote(url="https://a:1", urls=["https://b:1"])
        with self.assertRaisesRegex(ValueError, "dns:NAME:PORT"):
            remote(discover="srv:x:1")
        with self.assertRaisesRegex(ValueError, "not both"):
            remote(url="https://a:1", socket="/tmp/s.sock")

    def test_token_sources(self):
        with mock.patch.dict(os.environ, {"AGENTJAIL_TOKEN": "from-env", "AGENTJAIL_URL": "http://h:1"}):
            r = remote(token=None)
            self.assertEqual((r.token, [n.address for n in r.nodes()]), ("from-env", ["h:1"]))
            self.assertIsNone(remote(token=None, socket="/tmp/s.sock"))  # socket= wins over AGENTJAIL_URL
        with tempfile.NamedTemporaryFile("w") as f:
            f.write("  filed\n")
            f.flush()
            self.assertEqual(remote(url="http://h:1", token=None, token_file=f.name).token, "filed")
        with tempfile.NamedTemporaryFile("w") as f:
            with self.assertRaisesRegex(ValueError, "is empty"):
                remote(url="http://h:1", token=None, token_file=f.name)
        with mock.patch.dict(os.environ, {"AGENTJAIL_TOKEN": ""}):
            with self.assertRaisesRegex(ValueError, "needs a bearer token"):
                remote(url="http://h:1", token=None)
        with self.assertRaisesRegex(ValueError, "line break"):
            remote(url="http://h:1", token="a\r\nX-Evil: 1")
        with self.assertRaisesRegex(ValueError, "for remote access"):
            remote(token="t")

    def test_request_is_dressed_with_host_and_token(self):
        r = remote(url="http://node-1:8443")
        data = agentjail._http.request("GET", "/v1/health")
        out = r.dress(data, r.nodes()[0])
        self.assertIn(b"\r\nHost: node-1:8443\r\nAuthorization: Bearer tok\r\n", out)
        self.assertNotIn(b"Host: agentjail", out)

    def test_error_codes(self):
        self.assertIsInstance(from_response(421, "session_elsewhere", "on node-2", None), agentjail.SessionLost)
        lost = from_response(410, "session_lost", "an earlier run of the daemon", None)
        self.assertIsInstance(lost, agentjail.SessionLost, "a 410 of a daemon restarted: not SessionEnded")
        self.assertNotIsInstance(lost, agentjail.SessionEnded)
        self.assertEqual((lost.status, lost.code), (410, "session_lost"))
        self.assertIsInstance(from_response(401, "unauthorized", "no", None), agentjail.Unauthorized)
        self.assertIsInstance(from_response(503, "draining", "away", None), agentjail.ShuttingDown)


class PlacementTest(unittest.TestCase):
    def test_the_better_of_two_by_free_slots(self):
        r = remote(urls=["http://a:1", "http://b:1"])
        a, b = r.nodes()
        a.free, b.free = 0, 2
        a.seen = b.seen = 1e18  # fresh: no probe
        for _ in range(20):
            self.assertIs(r.pick([]), b)
        b.inflight = 3  # this client's runs there since: b has -1 now
        self.assertIs(r.pick([]), a)
        self.assertIs(r.pick([a]), b)  # tried already: the other
        self.assertIsNone(r.pick([a, b]))

    def test_stale_nodes_are_probed_once(self):
        r = remote(urls=["http://a:1", "http://b:1"])
        probed = []
        r.pick([], probed.append)
        self.assertEqual(len(probed), 2)
        r.pick([], probed.append)
        self.assertEqual(len(probed), 2, "probed again within STALE")

    def test_a_failed_node_is_passed_over(self):
        r = remote(urls=["http://a:1", "http://b:1"])
        a, b = r.nodes()
        r.failed(a)
        for _ in range(10):
            self.assertIs(r.pick([]), b)


class DiscoverTest(unittest.TestCase):
    def test_resolved_again_after_the_refresh_interval(self):
        answers = [[(socket.AF_INET, "10.0.0.1"), (socket.AF_INET6, "fd00::1")]]
        calls = []

        def fake(name, port):
            calls.append((name, port))
            return answers[0]
        now = [1000.0]
        with mock.patch("agentjail._remote.time.monotonic", lambda: now[0]):
            r = remote(discover="dns:svc.example:8443", resolver=fake)
            self.assertEqual(calls, [("svc.example", 8443)])
            nodes = r.nodes()
            self.assertEqual([n.address for n in nodes], ["10.0.0.1:8443", "[fd00::1]:8443"])
            self.assertEqual({n.host for n in nodes}, {"svc.example"})  # the name the certificate must have
            nodes[0].free = 5
            answers[0] = [(socket.AF_INET, "10.0.0.1"), (socket.AF_INET, "10.0.0.2")]
            now[0] += _remote.REFRESH - 1
            self.assertEqual(len(r.nodes()), 2)
            self.assertEqual(len(calls), 1)
            now[0] += 2
            got = r.nodes()
            self.assertEqual([n.addr for n in got], ["10.0.0.1", "10.0.0.2"])
            self.assertEqual(got[0].free, 5, "a node kept keeps what the client knows")
            answers[0] = []  # a failing lookup keeps the last good list

            def broken(name, port):
                raise socket.gaierror("temporary failure")
            r.resolver = broken
            now[0] += 2
            r.refresh(force=True)
            self.assertEqual(len(r.nodes()), 2)
            # ... only until the next try, RETRY seconds on, not REFRESH
            answers[0] = [(socket.AF_INET, "10.0.0.2")]
            r.resolver = fake
            now[0] += _remote.RETRY / 2
            self.assertEqual(len(r.nodes()), 2)
            now[0] += _remote.RETRY
            self.assertEqual([n.addr for n in r.nodes()], ["10.0.0.2"], "a failed lookup is tried again soon")

    def test_a_slow_failing_lookup_backs_off(self):
        """A lookup that fails after its resolver's timeout is tried again
        RETRY after its end, then less and less often; forced refreshes
        (a node that failed) wait for that too."""
        now = [1000.0]
        calls = []

        def slow_broken(name, port):
            calls.append(now[0])
            now[0] += 5.0  # the resolver's timeout
            raise socket.gaierror("timed out")
        with mock.patch("agentjail._remote.time.monotonic", lambda: now[0]):
            r = remote(discover="dns:svc.example:8443", resolver=lambda n, p: [(socket.AF_INET, "10.0.0.1")])
            r.resolver = slow_broken
            now[0] += _remote.REFRESH + 1
            self.assertEqual(len(r.nodes()), 1)  # looks up, fails, keeps the list
            self.assertEqual(len(calls), 1)
            for _ in range(5):
                r.nodes()
                r.failed(r.nodes()[0])
            self.assertEqual(len(calls), 1, "no lookup within RETRY of the failed one's end")
            now[0] += _remote.RETRY
            r.nodes()
            self.assertEqual(len(calls), 2, "tried again after RETRY")
            now[0] += _remote.RETRY
            r.nodes()
            self.assertEqual(len(calls), 2, "then after twice that")
            now[0] += _remote.RETRY
            r.nodes()
            self.assertEqual(len(calls), 3)
            r.resolver = lambda n, p: [(socket.AF_INET, "10.0.0.2")]
            now[0] += _remote.REFRESH
            self.assertEqual([n.addr for n in r.nodes()], ["10.0.0.2"])
            self.assertEqual(r._backoff, _remote.RETRY, "a good lookup ends the back-off")

    def test_unresolvable_name_at_start(self):
        def broken(name, port):
            raise socket.gaierror("Name or service not known")
        with self.assertRaisesRegex(agentjail.DaemonUnavailable, "cannot resolve nowhere.invalid"):
            remote(discover="dns:nowhere.invalid:8443", resolver=broken)


if __name__ == "__main__":
    unittest.main()
