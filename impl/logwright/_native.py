"""The compiled build: the hot modules compiled with mypyc, beside their sources (docs/native.md).

The Python sources stay the only source of truth. ``logwright native build`` (what ``make
native`` runs, and ``make test``, ``make bench`` and ``make verify`` before their work)
compiles the modules of :data:`MODULES` with mypyc into C extension modules placed beside their
``.py`` files; Python's import system prefers an extension module to a source file of the same
name, so the compiled code runs from then on. The build writes a manifest: each compiled module's
source digest, the interpreter it was built for and the mypyc version.

Invariant upheld: **compiled code runs only when it was built from exactly the sources in the
tree.** :func:`guard`, run when the ``logwright`` package is imported and before any of its
modules loads, compares the manifest with the sources. If any compiled module's source changed
since the build (an edit, a checkout, a mutation tool's copy), if the interpreter is another, if
extension modules lie in the tree without a manifest, or if ``LOGWRIGHT_PURE`` is set, it puts a
finder first on ``sys.meta_path`` that loads every ``logwright`` module from its ``.py`` file: the
whole build is ignored, never part of it (compiled modules call each other directly, so one
stale module would leave its callers running its old code). :func:`status` says which it is and
why; ``logwright native status`` and ``make bench`` print it.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

PACKAGE = Path(__file__).resolve().parent
IMPL = PACKAGE.parent
ROOT = IMPL.parent
MANIFEST = PACKAGE / "_native_manifest.json"
PURE_ENV = "LOGWRIGHT_PURE"
"""Set (to anything but empty or ``0``) to run every module from its source."""
SUFFIX = str(sysconfig.get_config_var("EXT_SUFFIX"))
"""The file name ending of this interpreter's extension modules."""
GROUP = "logwright_native"
"""The name of the shared library that holds the compiled code (``<GROUP>__mypyc``)."""

MODULES: tuple[str, ...] = (
    # The trace checker and the twins it replays (logwright traces check; the Spark job).
    "logwright.verify.traces",
    "logwright.model.core",
    "logwright.model.controller_fencing.twin",
    "logwright.model.controller_fencing.bugs",
    "logwright.model.fetcher_failure.twin",
    "logwright.model.fetcher_failure.bugs",
    "logwright.model.log_start_offset.twin",
    "logwright.model.log_start_offset.bugs",
    "logwright.model.replica_move.twin",
    "logwright.model.replica_move.bugs",
    "logwright.model.stray_cleanup.twin",
    "logwright.model.stray_cleanup.bugs",
    "logwright.model.leader_election.twin",
    "logwright.model.leader_election.bugs",
    # The refinement projections, checked after every simulated event.
    "logwright.conformance.refinement",
    "logwright.conformance.log_start_offset",
    "logwright.conformance.stray_cleanup",
    "logwright.conformance.fetcher_failure",
    "logwright.conformance.controller_fencing",
    "logwright.conformance.replica_move",
    "logwright.conformance.leader_election",
    # The simulated world and the broker's produce and replication path.
    "logwright.world.scheduler",
    "logwright.world.network",
    "logwright.world.sim",
    "logwright.world.simfs",
    "logwright.world.clock",
    "logwright.world.realfs",
    "logwright.broker.broker",
    "logwright.broker.driver",
    "logwright.broker.replica_manager",
    "logwright.broker.fetch_adapters",
    "logwright.broker.fetcher",
    "logwright.broker.purgatory",
    "logwright.broker.delayed",
    "logwright.broker.partition",
    "logwright.broker.fencing",
    "logwright.broker.metadata_cache",
    "logwright.broker.log_dirs",
    "logwright.storage.segment",
    "logwright.storage.log",
    "logwright.storage.index",
    "logwright.storage.epoch_cache",
    "logwright.storage.checkpoint",
    "logwright.records.build",
    "logwright.records.scan",
    "logwright.records.record",
    "logwright.records.header",
    "logwright.records.varint",
    "logwright.protocol.channel",
    "logwright.cluster.client",
)
"""The modules the compiled build holds: the paths whose speed the benchmarks measure (the
simulator, the stateful test's refinement checks, the trace checker). Everything else always
runs from source."""


@dataclass(frozen=True)
class Status:
    """Whether the compiled build runs, and why (or why not)."""

    active: bool
    modules: tuple[str, ...]
    reason: str

    def describe(self) -> str:
        """One line for a person: ``compiled (57 modules, mypyc 1.x)`` or ``pure Python (why)``."""
        if self.active:
            return f"compiled build ({len(self.modules)} modules; {self.reason})"
        return f"pure Python ({self.reason})"


_STATUS = Status(False, (), "not checked yet")


def source_of(module: str, impl: Path = IMPL) -> Path:
    """The ``.py`` file of ``module`` under ``impl``."""
    return impl.joinpath(*module.split(".")).with_suffix(".py")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _interpreter() -> str:
    return f"{sys.implementation.cache_tag} {SUFFIX}"


def _built_extensions(impl: Path = IMPL) -> list[Path]:
    """The extension modules under the package (and the shared library beside it)."""
    found = sorted((impl / "logwright").rglob(f"*{SUFFIX}"))
    shared = impl / f"{GROUP}__mypyc{SUFFIX}"
    return [*found, shared] if shared.exists() else found


def is_build_file(path: Path) -> bool:
    """Whether ``path`` is part of the compiled build (an extension module or the manifest)."""
    return path.name == MANIFEST.name or path.name.endswith(SUFFIX)


def stale(manifest: dict[str, object], impl: Path = IMPL) -> list[str]:
    """The reasons ``manifest`` does not describe the build of the sources under ``impl``: each
    module whose source changed, another interpreter, another module list. Empty: up to date."""
    reasons: list[str] = []
    if manifest.get("interpreter") != _interpreter():
        reasons.append(f"built for {manifest.get('interpreter')}, running {_interpreter()}")
    digests = manifest.get("modules")
    if not isinstance(digests, dict):
        return [*reasons, "the manifest names no modules"]
    if tuple(digests) != MODULES:
        reasons.append("the list of compiled modules changed")
    for module, digest in digests.items():
        src = source_of(str(module), impl)
        if not src.is_file() or _digest(src) != digest:
            reasons.append(f"{module} changed since the build")
    return reasons


class _SourceOnly(importlib.abc.MetaPathFinder):
    """Loads every ``logwright`` submodule from its ``.py`` file, never an extension module."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("logwright.") or path is None:
            return None
        tail = fullname.rpartition(".")[2]
        for entry in path:
            src = Path(entry) / f"{tail}.py"
            if src.is_file():
                return importlib.util.spec_from_file_location(fullname, src)
        return None  # a package (its __init__.py is never compiled): the usual finders


def guard() -> Status:
    """Decide, once, before any compiled module loads, whether the compiled build may run; if
    not, make every ``logwright`` module load from source. Returns :func:`status`."""
    global _STATUS
    if any(isinstance(f, _SourceOnly) for f in sys.meta_path):
        return _STATUS
    early = [m for m in MODULES if m in sys.modules]
    assert not early, f"{early} loaded before the compiled build was checked"
    reason = ""
    manifest: dict[str, object] = {}
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        reason = f"{PURE_ENV} is set"
    else:
        try:
            manifest = json.loads(MANIFEST.read_text())
        except FileNotFoundError:
            reason = "not built (make native)"
        except (OSError, ValueError) as exc:
            reason = f"unreadable manifest {MANIFEST.name}: {exc}"
        else:
            problems = stale(manifest)
            if problems:
                more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
                reason = f"the build is stale: {problems[0]}{more} (make native)"
    if reason:
        # Whether or not anything is built: an extension module without a valid manifest is
        # never loaded.
        sys.meta_path.insert(0, _SourceOnly())
        _STATUS = Status(False, (), reason)
    else:
        _STATUS = Status(True, MODULES, f"mypyc {manifest.get('mypyc', '?')}")
    return _STATUS


def status() -> Status:
    """Whether this process runs the compiled build, and why."""
    return _STATUS


def clean(impl: Path = IMPL) -> int:
    """Remove the build (extension modules and manifest); returns the files removed."""
    removed = 0
    for path in [*_built_extensions(impl), impl / "logwright" / MANIFEST.name]:
        if path.exists():
            path.unlink()
            removed += 1
    return removed


_SETUP = """\
# Written by logwright._native.build: mypyc's setuptools build of the compiled modules.
import setuptools
from concurrent.futures import ThreadPoolExecutor
from distutils.ccompiler import CCompiler
from mypyc.build import mypycify


def compile_in_parallel(self, sources, output_dir=None, macros=None, include_dirs=None,
                        debug=0, extra_preargs=None, extra_postargs=None, depends=None):
    # setuptools compiles an extension's C files one after the other; these are independent.
    macros, objects, extra_postargs, pp_opts, build = self._setup_compile(
        output_dir, macros, include_dirs, sources, depends, extra_postargs)
    cc_args = self._get_cc_args(pp_opts, debug, extra_preargs)

    def one(obj):
        src, ext = build[obj]
        self._compile(obj, src, ext, cc_args, extra_postargs, pp_opts)

    with ThreadPoolExecutor({jobs}) as pool:
        list(pool.map(one, objects))
    return objects


CCompiler.compile = compile_in_parallel
setuptools.setup(
    name="logwright_native", package_dir={{"": "impl"}},
    ext_modules=mypycify({paths!r}, opt_level="3", debug_level="0", multi_file=True,
                         group_name={group!r}))
"""
"""The build script: one shared library (``GROUP``) whose C is split per module
(``multi_file``) and compiled ``jobs`` files at a time, without debug information: the same
speed as one C file, in about a third of the compiler's time."""


def build(jobs: int = 2, force: bool = False, quiet: bool = True) -> str:
    """Compile :data:`MODULES` in place (mypyc, then the C compiler); a no-op when the manifest
    says the build is of these sources. Returns what it did. Raises RuntimeError when the
    compiler fails (its output in the message) or mypyc is not installed."""
    try:
        manifest = json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        manifest = {}
    if manifest and not force and not stale(manifest):
        return f"up to date: {len(MODULES)} modules"
    import subprocess

    try:
        import mypyc
        from mypy.version import __version__ as mypy_version
    except ImportError as exc:  # pragma: no cover - the dev extra installs mypy
        raise RuntimeError("mypyc is not installed (pip install mypy)") from exc
    clean()
    digests = {m: _digest(source_of(m)) for m in MODULES}  # what is compiled is what was read
    work = ROOT / "build" / "native"
    work.mkdir(parents=True, exist_ok=True)
    setup = work / "setup.py"
    paths = [str(source_of(m).relative_to(ROOT)) for m in MODULES]
    setup.write_text(_SETUP.format(jobs=jobs, paths=paths, group=GROUP))
    env = {**os.environ, "PYTHONPATH": str(Path(mypyc.__file__).parent.parent)}
    env.pop(PURE_ENV, None)
    done = subprocess.run(
        [sys.executable, str(setup), "build_ext", "--inplace", "--parallel", str(jobs),
         "--build-temp", str(work / "temp")],
        cwd=ROOT, env=env, capture_output=quiet, text=True, check=False)
    if done.returncode != 0:
        clean()
        tail = "\n".join(((done.stdout or "") + (done.stderr or "")).splitlines()[-20:])
        raise RuntimeError(f"the compiled build failed (pure Python runs instead):\n{tail}")
    missing = [m for m in MODULES
               if not source_of(m).with_name(source_of(m).stem + SUFFIX).is_file()]
    if missing:
        clean()
        raise RuntimeError(f"the build left no extension module for {', '.join(missing)}")
    MANIFEST.write_text(json.dumps({"interpreter": _interpreter(), "mypyc": mypy_version,
                                    "modules": digests}, indent=1) + "\n")
    return f"built: {len(MODULES)} modules"
