"""The package's build backend (PEP 517, PEP 660), standard library only.

`pip install clients/python` then needs nothing from an index: pip's
isolated build environment installs `requires = []` and imports this module
from the source tree (`backend-path`). setuptools would have to be
downloaded, or present together with `wheel`, which a fresh venv lacks.

It builds a pure-Python wheel of the `agentjail` package, an sdist, and an
editable wheel (a .pth file pointing at this source tree).
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "agentjail"
PACKAGE = "agentjail"
SUMMARY = "Client of the agentjail daemon: run untrusted Python in a Linux namespace/cgroup/seccomp jail"
REQUIRES_PYTHON = ">=3.9"
# Zip entries get one fixed time (or SOURCE_DATE_EPOCH): reproducible wheels.
_EPOCH = time.gmtime(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")))[:6]


def _version():
    with open(os.path.join(ROOT, PACKAGE, "__init__.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("no __version__ in agentjail/__init__.py")
    return m.group(1)


def _metadata():
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {_version()}",
        f"Summary: {SUMMARY}",
        f"Requires-Python: {REQUIRES_PYTHON}",
        "Classifier: Operating System :: POSIX :: Linux",
        "Classifier: Programming Language :: Python :: 3",
        "Classifier: Framework :: AsyncIO",
        "Description-Content-Type: text/markdown",
    ]
    readme = os.path.join(ROOT, "README.md")
    body = ""
    if os.path.exists(readme):
        with open(readme, encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


def _package_files():
    base = os.path.join(ROOT, PACKAGE)
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".py", ".typed")):
                full = os.path.join(dirpath, name)
                yield os.path.relpath(full, ROOT).replace(os.sep, "/"), full


class _Wheel:
    def __init__(self, path):
        self._zip = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED)
        self._record = []

    def add(self, arcname, data):
        if isinstance(data, str):
            data = data.encode("utf-8")
        info = zipfile.ZipInfo(arcname, _EPOCH)
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self._zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self._record.append(f"{arcname},sha256={digest},{len(data)}")

    def close(self, dist_info):
        self._record.append(f"{dist_info}/RECORD,,")
        info = zipfile.ZipInfo(f"{dist_info}/RECORD", _EPOCH)
        info.external_attr = 0o644 << 16
        self._zip.writestr(info, "\n".join(self._record) + "\n")
        self._zip.close()


def _build(wheel_directory, editable):
    version = _version()
    dist_info = f"{NAME}-{version}.dist-info"
    filename = f"{NAME}-{version}-py3-none-any.whl"
    w = _Wheel(os.path.join(wheel_directory, filename))
    if editable:
        w.add(f"__editable__.{NAME}.pth", ROOT + "\n")
    else:
        for arcname, full in _package_files():
            with open(full, "rb") as f:
                w.add(arcname, f.read())
    w.add(f"{dist_info}/METADATA", _metadata())
    w.add(f"{dist_info}/WHEEL", "Wheel-Version: 1.0\nGenerator: agentjail _build/backend.py\n"
                                "Root-Is-Purelib: true\nTag: py3-none-any\n")
    w.add(f"{dist_info}/top_level.txt", PACKAGE + "\n")
    w.close(dist_info)
    return filename


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _build(wheel_directory, editable=False)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _build(wheel_directory, editable=True)


def build_sdist(sdist_directory, config_settings=None):
    version = _version()
    base = f"{NAME}-{version}"
    filename = f"{base}.tar.gz"
    files = [("pyproject.toml", os.path.join(ROOT, "pyproject.toml")),
             ("README.md", os.path.join(ROOT, "README.md")),
             ("_build/backend.py", os.path.join(ROOT, "_build", "backend.py"))]
    files += list(_package_files())
    tests = os.path.join(ROOT, "tests")
    for name in sorted(os.listdir(tests)):
        if name.endswith(".py"):
            files.append((f"tests/{name}", os.path.join(tests, name)))
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))

    def add(tar, arcname, data):
        info = tarfile.TarInfo(f"{base}/{arcname}")
        info.size, info.mtime, info.mode = len(data), mtime, 0o644
        tar.addfile(info, io.BytesIO(data))

    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        add(tar, "PKG-INFO", _metadata().encode("utf-8"))
        for arcname, full in files:
            if os.path.exists(full):
                with open(full, "rb") as f:
                    add(tar, arcname, f.read())
    return filename
