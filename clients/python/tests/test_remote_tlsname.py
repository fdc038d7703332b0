"""tls_server_name: a daemon reached by IP whose certificate names only the
Service (agentjail.agentjail.svc), as pods of a Kubernetes DaemonSet are.
One real `$AGENTJAIL_BIN serve` with a [remote] listener on 127.0.0.1 and a
certificate of the test CA (certs.py, `openssl`).

Same rules as test_integration.py (AGENTJAIL_BIN, root); without an
`openssl` binary the file skips itself (AGENTJAIL_REQUIRE_ALL=1: fails).

    AGENTJAIL_BIN=$PWD/bin/agentjail /usr/bin/python3 -X dev -W error \\
        -m unittest discover -s clients/python/tests -p test_remote_tlsname.py -v
"""

import asyncio
import os
import shutil
import unittest
from unittest import mock

import agentjail
import certs
from agentjail import AsyncClient, Client
from test_integration import require
from test_remote_integration import TOKEN, remote_daemon, write_tokens

NAME = "agentjail.agentjail.svc"


def make_service_pki():
    """A new directory with the test CA's certificate that names NAME alone
    (no IP), and the tokens file; and the path of ca.crt."""
    d, ca = certs.make_pki(NAME, f"DNS:{NAME}")
    write_tokens(d)
    return d, ca


class TLSServerNameTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require()
        cls.pki, cls.ca = make_service_pki()
        cls.d = remote_daemon(cls.pki, "pod-a", 7)

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "d", None) is not None:
            cls.d.stop()
        shutil.rmtree(cls.pki, ignore_errors=True)

    def setUp(self):
        env = mock.patch.dict(os.environ, {"AGENTJAIL_TLS_SERVER_NAME": ""})
        env.start()
        self.addCleanup(env.stop)

    def test_by_ip_with_the_service_name(self):
        c = Client(url=self.d.url, token=TOKEN, ca=self.ca, timeout=60, tls_server_name=NAME)
        r = c.run("print(6 * 7)")
        self.assertEqual((r.status, r.stdout, r.node), ("ok", "42\n", "pod-a"))
        # A session's calls go to its endpoint, an IP too: the same name.
        with c.session() as s:
            s.run("x = 41")
            self.assertEqual(s.run("print(x + 1)").stdout, "42\n")

    def test_by_ip_without_it_fails_and_says_what_to_pass(self):
        c = Client(url=self.d.url, token=TOKEN, ca=self.ca, timeout=60)
        with self.assertRaises(agentjail.DaemonUnavailable) as e:
            c.run("print(1)")
        msg = str(e.exception)
        self.assertIn("does not name '127.0.0.1'", msg)
        self.assertIn("tls_server_name=", msg)

    def test_a_name_the_certificate_lacks(self):
        c = Client(url=self.d.url, token=TOKEN, ca=self.ca, timeout=60, tls_server_name="other.example")
        with self.assertRaisesRegex(agentjail.DaemonUnavailable, "does not name 'other.example'"):
            c.run("print(1)")

    def test_from_the_environment(self):
        with mock.patch.dict(os.environ, {"AGENTJAIL_TLS_SERVER_NAME": NAME}):
            r = Client(url=self.d.url, token=TOKEN, ca=self.ca, timeout=60).run("print(2)")
        self.assertEqual(r.stdout, "2\n")

    def test_asyncio_client(self):
        async def go():
            ok = await AsyncClient(url=self.d.url, token=TOKEN, ca=self.ca, tls_server_name=NAME).run("print(3)")
            try:
                await AsyncClient(url=self.d.url, token=TOKEN, ca=self.ca).run("print(4)")
            except agentjail.DaemonUnavailable as e:
                return ok, str(e)
            return ok, ""
        r, err = asyncio.run(go())
        self.assertEqual((r.stdout, r.node), ("3\n", "pod-a"))
        self.assertIn("tls_server_name=", err)

    def test_bad_arguments(self):
        with self.assertRaisesRegex(ValueError, "the URLs are http://"):
            Client(url="http://127.0.0.1:1", token=TOKEN, tls_server_name=NAME)
        with self.assertRaisesRegex(ValueError, "a DNS name the certificate carries"):
            Client(url=self.d.url, token=TOKEN, tls_server_name="https://x")
        with self.assertRaisesRegex(ValueError, "for remote access"):
            Client(socket="/tmp/s.sock", tls_server_name=NAME)


if __name__ == "__main__":
    unittest.main()
