"""EventParser: a streamed answer's bytes, however they are cut, make the
same events; errors, refused at once or at the end, raise."""

import json
import unittest

import agentjail
from agentjail.stream import EventParser


def chunked(status, ctype, body):
    head = f"HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
    out = head
    for i in range(0, len(body), 7):
        part = body[i:i + 7]
        out += f"{len(part):x}\r\n".encode() + part + b"\r\n"
    return out + b"0\r\n\r\n"


RESULT = {"id": "j-1", "status": "ok", "exit_code": 0, "stdout": "a\xe9\n", "stderr": "", "files": []}
STREAM = (b'{"event":"stdout","data":"a"}\n'
          b'{"event":"stdout","data":"\\u00e9\\ufffd\\n","data_base64":"w6n/Cg=="}\n'
          b'{"event":"future","x":1}\n'
          + json.dumps(dict(RESULT, event="result")).encode() + b"\n")


def parse(data, step):
    p = EventParser(lambda obj: obj)
    events = []
    for i in range(0, len(data), step):
        events += p.feed(data[i:i + step])
    events += p.eof() if not p.finished else []
    return events


class EventParserTest(unittest.TestCase):
    def test_any_cut(self):
        data = chunked(200, "application/x-ndjson", STREAM)
        for step in (1, 3, 64, len(data)):
            events = parse(data, step)
            self.assertEqual([e.kind for e in events], ["stdout", "stdout", "result"], step)
            self.assertEqual(events[1].raw, b"\xc3\xa9\xff\n")
            self.assertEqual(events[0].data + events[1].data, "a\xe9\ufffd\n")
            self.assertEqual(events[2].result["id"], "j-1")
            self.assertNotIn("event", events[2].result)

    def test_error_event_raises(self):
        body = b'{"event":"stdout","data":"x"}\n{"event":"error","http_status":500,"error":{"code":"setup_failed","message":"boom"}}\n'
        p = EventParser(lambda obj: obj)
        with self.assertRaises(agentjail.SetupFailed) as cm:
            p.feed(chunked(200, "application/x-ndjson", body))
        self.assertIn("boom", str(cm.exception))

    def test_plain_error_raises(self):
        body = b'{"error":{"code":"invalid_request","message":"limits.memory_bytes: too small"}}\n'
        data = f"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
        with self.assertRaises(agentjail.InvalidRequest):
            parse(data, 5)

    def test_cut_short(self):
        data = chunked(200, "application/x-ndjson", STREAM[:40])[:-5]
        with self.assertRaises(agentjail.DaemonUnavailable):
            parse(data, 10)


if __name__ == "__main__":
    unittest.main()
