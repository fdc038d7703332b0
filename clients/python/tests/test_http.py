"""The HTTP/1.1 response parser shared by both clients, fed in every way a
socket can deliver bytes."""

import json
import unittest

import agentjail
from agentjail import _http


def feed_all(data, method="POST", step=None):
    p = _http.ResponseParser(method)
    step = step or len(data) or 1
    for i in range(0, len(data), step):
        r = p.feed(data[i:i + step])
        if r is not None:
            return r
    return p.eof()


class ParserTest(unittest.TestCase):
    # real CRLFs and a "0" line inside the body: they must not end a chunk
    BODY = '{"id": "j-1", "stdout": "é"}\r\n0\r\n\r\n'.encode()

    def test_content_length_byte_by_byte(self):
        data = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nX-A: b\r\n\r\n%s" % (len(self.BODY), self.BODY)
        for step in (1, 2, 7, 1000):
            r = feed_all(data, step=step)
            self.assertEqual((r.status, r.body, r.header("x-a")), (200, self.BODY, "b"))

    def test_chunked_with_extensions_and_trailers(self):
        chunks = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(c), c) for c in (self.BODY[:5], self.BODY[5:]))
        data = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\nX-Trailer: y\r\n\r\n"
        for step in (1, 3, 1000):
            self.assertEqual(feed_all(data, step=step).body, self.BODY)

    def test_chunked_wins_over_content_length(self):
        data = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
        self.assertEqual(feed_all(data).body, b"{}")

    def test_interim_response_is_skipped(self):
        data = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
        self.assertEqual(feed_all(data, step=5).status, 200)

    def test_head_and_204_have_no_body(self):
        self.assertEqual(feed_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", method="HEAD").body, b"")
        self.assertEqual(feed_all(b"HTTP/1.1 204 No Content\r\n\r\n").body, b"")

    def test_body_to_end_of_connection(self):
        self.assertEqual(feed_all(b"HTTP/1.0 200 OK\r\n\r\n{}").body, b"{}")

    def test_bytes_after_the_response_are_ignored(self):
        p = _http.ResponseParser()
        r = p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}garbage")
        self.assertEqual(r.body, b"{}")
        self.assertIs(p.feed(b"more"), r)

    def test_truncations(self):
        for data in (b"", b"HTTP/1.1 200", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}",
                     b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n"):
            with self.subTest(data=data), self.assertRaises(agentjail.DaemonUnavailable):
                feed_all(data)

    def test_garbage(self):
        for data in (b"hello\r\n\r\n", b"HTTP/1.1 abc OK\r\n\r\n", b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
                     b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
                     b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                     b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n"):
            with self.subTest(data=data), self.assertRaises(agentjail.ProtocolError):
                feed_all(data)

    def test_head_too_large(self):
        p = _http.ResponseParser()
        with self.assertRaises(agentjail.ProtocolError):
            p.feed(b"HTTP/1.1 200 OK\r\n" + b"X: " + b"a" * 70000)


class RequestBytesTest(unittest.TestCase):
    def test_post(self):
        data = _http.request("POST", "/v1/run", {"code": "print('é')"})
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        self.assertEqual(lines[0], b"POST /v1/run HTTP/1.1")
        self.assertIn(b"Connection: close", lines)
        self.assertIn(b"Content-Length: %d" % len(body), lines)
        self.assertEqual(json.loads(body), {"code": "print('é')"})

    def test_get_has_no_body(self):
        data = _http.request("GET", "/v1/health")
        self.assertTrue(data.endswith(b"\r\n\r\n"))
        self.assertNotIn(b"Content-Length", data)


class RetryAfterTest(unittest.TestCase):
    def test_forms(self):
        self.assertEqual(_http.retry_after("7"), 7.0)
        self.assertEqual(_http.retry_after(" 0 "), 0.0)
        self.assertIsNone(_http.retry_after(None))
        self.assertIsNone(_http.retry_after("soon"))
        self.assertEqual(_http.retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), 0.0)  # in the past


if __name__ == "__main__":
    unittest.main()
