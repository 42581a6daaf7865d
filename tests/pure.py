"""Running a test against the sources when this process runs the compiled build (docs/native.md).

A few tests reach a code path through a stand-in object only Python's own code accepts (an
object claiming 2**31 bytes, where the compiled code takes bytes alone and a real 2 GiB value
would be needed). Under the compiled build they run themselves once more in a fresh interpreter
with every module from its source, and pass only if that run passes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from logwright import _native

ROOT = Path(__file__).resolve().parent.parent


def compiled() -> bool:
    """Whether this process runs the compiled build."""
    return _native.status().active


def passes_from_source(nodeid: str) -> None:
    """Run the test ``nodeid`` (``tests/test_x.py::test_y[param]``) with LOGWRIGHT_PURE=1 in a
    fresh interpreter; AssertionError with its output unless exactly it ran and passed."""
    env = {**os.environ, _native.PURE_ENV: "1"}
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", nodeid],
                         cwd=ROOT, env=env,
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0 and "1 passed" in out.stdout, out.stdout[-3000:] + out.stderr
