"""The wheel carries what ``logwright verify`` needs: built from a copy of the source tree,
installed in a fresh venv, run from a directory outside any checkout, the formal suite finds
every TLA+ module, its .cfg files, the TLC figures and the Z3 encodings, and a module's checks pass.

It builds offline (``--no-build-isolation``, with the setuptools and wheel of the dev extras)
and installs the wheel alone (``--no-deps``); the fresh venv sees the dependencies through a
path to this venv's site-packages, not its ``.pth`` files, so the editable install of the
checkout stays out of sight.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from logwright.model import SPECS
from logwright.verify.formal import configs, snake_case, spec_dir

pytestmark = pytest.mark.wheel

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "impl", "spec")


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{args} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh venv with the wheel installed: its bin/ and an environment to run it in."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "states", "build")
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        else:
            shutil.copy2(path, src / name)
    dist = root / "dist"
    _run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation",
          "--no-index", "-q", "-w", str(dist)], cwd=src)
    wheels = list(dist.glob("logwright-*.whl"))
    assert len(wheels) == 1, wheels
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    bin_dir = env_dir / "bin"
    _run([sys.executable, "-m", "pip", "--python", str(bin_dir / "python"), "install",
          "--no-deps", "--no-index", "-q", str(wheels[0])], cwd=root)
    site = Path(_run([str(bin_dir / "python"), "-c",
                      "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=root)
                .strip())
    # The dependencies, from this venv: a plain path line, so none of its .pth files run.
    (site / "_logwright_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("LOGWRIGHT_SPEC_DIR", "PYTHONPATH", "TLA2TOOLS_JAR")}
    shutil.rmtree(src)  # nothing of the source tree is left to find
    return bin_dir, env


def test_the_installed_copy_finds_every_module_cfg_and_encoding(
        installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    bin_dir, env = installed
    probe = (
        "import json, logwright\n"
        "from logwright.model import SPECS\n"
        "from logwright.verify.formal import configs, load_z3_module, spec_dir, tlc_figures\n"
        "out = {'package': logwright.__file__, 'spec': str(spec_dir()),\n"
        "       'figures': sorted(tlc_figures()), 'modules': {}}\n"
        "for m in SPECS:\n"
        "    correct, bugs = configs(m)\n"
        "    z = load_z3_module(m)\n"
        "    out['modules'][m] = {'tla': (spec_dir() / f'{m}.tla').is_file(),\n"
        "        'cfg': correct.is_file(), 'bugs': [b.name for b in bugs],\n"
        "        'z3': z.__file__ if z is not None else None}\n"
        "print(json.dumps(out))\n"
    )
    found = json.loads(_run([str(bin_dir / "python"), "-c", probe], cwd=tmp_path, env=env))
    prefix = str(bin_dir.parent)
    assert found["package"].startswith(prefix), found["package"]
    assert found["spec"].startswith(prefix) and found["spec"].endswith("_spec"), found["spec"]
    expected_figures = sorted(json.loads((spec_dir() / "tlc_figures.json").read_text()))
    assert found["figures"] == expected_figures
    assert set(found["modules"]) == set(SPECS)
    for module, seen in found["modules"].items():
        _, bugs = configs(module)
        assert seen["tla"] and seen["cfg"], module
        assert seen["bugs"] == [b.name for b in bugs] and seen["bugs"], module
        if (spec_dir() / "z3" / f"{snake_case(module)}.py").is_file():
            assert seen["z3"] is not None and seen["z3"].startswith(prefix), module


def test_the_installed_command_lists_and_runs_the_formal_suite(
        installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    bin_dir, env = installed
    listed = _run([str(bin_dir / "logwright"), "verify", "--list"], cwd=tmp_path, env=env)
    assert [line.split()[0] for line in listed.splitlines()] == ["storage", "formal", "agreement",
                                                                 "traces"]
    # One small module end to end: the previous test shows the installed copy finds every
    # module's files, and each module's checks run from the source tree in their own tests
    # (the whole suite here took minutes of make test's budget).
    module = "ControllerFencing"
    done = subprocess.run([str(bin_dir / "logwright"), "verify", "--suite", "formal", "--json",
                           "-q", "--module", module], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(done.stdout)["rows"]
    methods = {r["method"] for r in rows}
    assert f"python checker ({module}.cfg)" in methods, methods
    assert any(m.startswith("z3 ") and f"({module}" in m for m in methods), methods
    assert not any("LogStartOffset" in m for m in methods), "only the module asked"
    assert {r["verdict"] for r in rows} <= {"holds", "caught", "skipped"}
