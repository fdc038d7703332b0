"""`pip install clients/python` works offline: the build backend is in the
tree and needs nothing but the standard library (pyproject.toml)."""

import os
import subprocess
import sys
import tempfile
import unittest

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def require_venv():
    try:
        import ensurepip  # noqa: F401  (Debian ships it in python3-venv)
    except ImportError:
        why = "python3 -m venv needs ensurepip (Debian: apt-get install python3-venv)"
        if os.environ.get("AGENTJAIL_REQUIRE_ALL") == "1":
            raise AssertionError(f"{why} (AGENTJAIL_REQUIRE_ALL=1)")
        raise unittest.SkipTest(why)


class InstallTest(unittest.TestCase):
    def test_pip_install_offline_in_a_venv(self):
        require_venv()
        with tempfile.TemporaryDirectory(prefix="ajvenv-") as tmp:
            venv = os.path.join(tmp, "venv")
            subprocess.run([sys.executable, "-m", "venv", venv], check=True, capture_output=True, timeout=120)
            py = os.path.join(venv, "bin", "python")
            env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
            env.pop("PYTHONPATH", None)
            p = subprocess.run([py, "-m", "pip", "install", "--no-index", PACKAGE_ROOT], capture_output=True,
                               text=True, timeout=300, env=env, cwd=tmp)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            p = subprocess.run([py, "-X", "dev", "-W", "error", "-c",
                                "import agentjail, agentjail.aio, agentjail.compat; print(agentjail.__file__)"],
                               capture_output=True, text=True, timeout=60, env=env, cwd=tmp)
            self.assertEqual(p.stderr, "")
            self.assertTrue(p.stdout.startswith(venv), p.stdout)
            self.assertFalse(os.path.exists(os.path.join(PACKAGE_ROOT, "build")), "the build wrote into the tree")


if __name__ == "__main__":
    unittest.main()
