"""The compiled build's guard (logwright._native, docs/native.md): compiled code runs only when it
was built from exactly the sources in the tree, and never part of a build.

The end-to-end cases copy the package (with its build, when there is one) and import it in a
fresh interpreter: edited, stripped of its manifest, or with LOGWRIGHT_PURE set, every module
of the build must load from its ``.py`` file. ``make test`` builds first and sets
LOGWRIGHT_EXPECT_COMPILED, so there the build must also be active in this process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from logwright import _native

SUFFIX = _native.SUFFIX
PROBE = ("import importlib, json, logwright, logwright._native as n\n"
         "files = {m: importlib.import_module(m).__file__ for m in n.MODULES}\n"
         "s = n.status()\n"
         "print(json.dumps({'active': s.active, 'reason': s.reason, 'files': files}))\n")


def _probe(impl: Path, **env: str) -> dict[str, object]:
    """Import every module of the build from the package under ``impl`` in a new interpreter."""
    environ = {k: v for k, v in os.environ.items() if k != _native.PURE_ENV}
    environ.update(PYTHONPATH=str(impl), **env)
    out = subprocess.run([sys.executable, "-c", PROBE], env=environ, capture_output=True,
                         text=True, check=True, cwd=impl)
    result: dict[str, object] = json.loads(out.stdout)
    return result


def _from_source(files: object) -> bool:
    assert isinstance(files, dict)
    return all(str(f).endswith(".py") for f in files.values())


def _built() -> bool:
    return _native.MANIFEST.is_file()


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of the package as it is (sources, and the build if there is one)."""
    impl = tmp_path / "impl"
    impl.mkdir()
    shutil.copytree(_native.PACKAGE, impl / "logwright",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for shared in _native.IMPL.glob(f"{_native.GROUP}__mypyc*"):
        shutil.copy2(shared, impl / shared.name)
    return impl


def test_a_manifest_of_these_sources_is_up_to_date_and_any_edit_is_named() -> None:
    manifest: dict[str, object] = {
        "interpreter": _native._interpreter(),
        "modules": {m: _native._digest(_native.source_of(m)) for m in _native.MODULES}}
    assert _native.stale(manifest) == []
    edited = dict(manifest["modules"])  # type: ignore[call-overload]
    edited[_native.MODULES[-1]] = "0" * 64
    reasons = _native.stale({**manifest, "modules": edited})
    assert reasons == [f"{_native.MODULES[-1]} changed since the build"]
    other = _native.stale({**manifest, "interpreter": "cpython-27 .so"})
    assert len(other) == 1 and "built for cpython-27" in other[0]
    fewer = _native.stale({**manifest, "modules": dict(list(edited.items())[1:])})
    assert "the list of compiled modules changed" in fewer
    assert _native.stale({"interpreter": _native._interpreter()}) == [
        "the manifest names no modules"]


def test_the_build_runs_in_this_process_when_make_test_built_it() -> None:
    status = _native.status()
    if not os.environ.get("LOGWRIGHT_EXPECT_COMPILED"):
        pytest.skip(f"not run by make test: {status.describe()}")
    assert status.active, status.describe()
    import importlib
    for module in _native.MODULES:
        assert str(importlib.import_module(module).__file__).endswith(SUFFIX), module


def test_pure_is_asked_for(copy: Path) -> None:
    got = _probe(copy, LOGWRIGHT_PURE="1")
    assert got["active"] is False and got["reason"] == "LOGWRIGHT_PURE is set"
    assert _from_source(got["files"])


def test_a_build_runs_only_when_every_source_is_the_one_built(copy: Path) -> None:
    if not _built():
        pytest.skip("no compiled build in this tree (make native)")
    got = _probe(copy)
    assert got["active"] is True, got["reason"]
    files = got["files"]
    assert isinstance(files, dict) and all(str(f).endswith(SUFFIX) for f in files.values())
    # One module edited (the last compiled one, a comment): the whole build is ignored.
    edited = _native.source_of(_native.MODULES[-1], copy)
    edited.write_text(edited.read_text() + "\n# edited after the build\n")
    got = _probe(copy)
    assert got["active"] is False
    assert f"{_native.MODULES[-1]} changed since the build" in str(got["reason"])
    assert _from_source(got["files"])


def test_extension_modules_without_a_manifest_never_load(copy: Path) -> None:
    if not _built():
        pytest.skip("no compiled build in this tree (make native)")
    (copy / "logwright" / _native.MANIFEST.name).unlink()
    got = _probe(copy)
    assert got["active"] is False and "not built" in str(got["reason"])
    assert _from_source(got["files"])
    (copy / "logwright" / _native.MANIFEST.name).write_text("{not json")
    got = _probe(copy)
    assert got["active"] is False and "unreadable manifest" in str(got["reason"])
    assert _from_source(got["files"])


def test_the_cli_says_which_build_runs() -> None:
    out = subprocess.run([sys.executable, "-m", "logwright.cli", "native", "status"],
                         capture_output=True, text=True, check=False,
                         env={**os.environ, "LOGWRIGHT_PURE": "1"})
    assert out.stdout.strip() == "pure Python (LOGWRIGHT_PURE is set)", out.stderr
