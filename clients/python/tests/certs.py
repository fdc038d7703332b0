"""The test CA of the Python tests: a CA and a certificate of it, made
with `openssl` (EC P-256 keys, valid for two days). Without an `openssl`
binary the test that asks for them skips itself (AGENTJAIL_REQUIRE_ALL=1:
fails)."""

import os
import shutil
import subprocess
import tempfile
import unittest
from typing import Tuple


def make_pki(name: str, alt_names: str) -> Tuple[str, str]:
    """Writes into a new temporary directory a CA (ca.crt, ca.key) and a
    server certificate of it (tls.crt, tls.key) for the common name name
    and the subjectAltName alt_names, in openssl's form
    ("DNS:x,IP:127.0.0.1"). Returns the directory, which the caller
    removes, and the path of ca.crt."""
    if shutil.which("openssl") is None:
        if os.environ.get("AGENTJAIL_REQUIRE_ALL") == "1":
            raise AssertionError("openssl is needed to make the test CA (AGENTJAIL_REQUIRE_ALL=1)")
        raise unittest.SkipTest("no openssl binary to make the test CA")
    d = tempfile.mkdtemp(prefix="ajpki-")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=agentjail test CA", "-days", "2")
    run("req", *ec, "-keyout", "tls.key", "-out", "tls.csr", "-subj", f"/CN={name}")
    with open(os.path.join(d, "ext"), "w") as f:
        f.write(f"subjectAltName={alt_names}\n")
    run("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "tls.crt", "-days", "2", "-extfile", "ext")
    return d, os.path.join(d, "ca.crt")
