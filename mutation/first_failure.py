"""A pytest plugin for ``make mutants``: the first failing test's id, the moment it fails.

Loaded with ``-p mutation.first_failure`` by the runner. When the environment names a file in
``LOGWRIGHT_FIRST_FAILURE``, the first failed test report (setup, call or teardown; with xdist,
as the controller receives it) or failed collection writes its node id there, once. The runner
watches for that file, so the time to catch is the time to the first failure, not to the end of
whatever tests were still running beside it.
"""

from __future__ import annotations

import os

import pytest

ENV = "LOGWRIGHT_FIRST_FAILURE"


def _record(nodeid: str) -> None:
    path = os.environ.get(ENV)
    if not path:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return  # not the first
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(nodeid)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Record the first failed test phase."""
    if report.failed and not hasattr(report, "wasxfail"):
        _record(report.nodeid)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """Record a module that does not even import (a mutant that breaks the code outright)."""
    if report.failed:
        _record(f"{report.nodeid} (collection)")
