"""The model package's shape: what model/ may import, and one table of bug switches per module
that the twin, the Z3 encoding, the .cfg files, the TLA+ module and verify all agree on."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import re
import sys
from pathlib import Path

import pytest

import logwright.model
from logwright.model import BUG_TABLES, SPECS
from logwright.model.bugs import NO_BUG, Bug, BugTable
from logwright.model.cfg import parse_cfg
from logwright.verify.formal import configs, load_z3_module, snake_case, spec_dir

MODEL_DIR = Path(logwright.model.__file__).resolve().parent
SPEC = spec_dir()
FORBIDDEN_MODULES = {"subprocess", "os", "shutil", "tempfile", "socket", "multiprocessing",
                     "signal", "ctypes", "threading", "asyncio"}
"""Spark executors import model/: nothing there may run a process, read the environment or
touch the machine beyond reading a .cfg file it is given."""
FORBIDDEN_NAMES = {"environ", "getenv", "putenv", "system", "popen", "Popen"}


def forbidden_uses(source: str) -> list[str]:
    """What in ``source`` model/ must not do: import outside the standard library, numpy and
    logwright.model, import a forbidden standard module, or name the environment or a process."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif (isinstance(node, ast.ImportFrom) and node.module == "mypy_extensions"
              and [alias.name for alias in node.names] == ["mypyc_attr"]):
            pass  # the compiled build's class options: a decorator that does nothing in Python
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        elif isinstance(node, ast.ImportFrom):
            found.append("relative import")
        for module in modules:
            top = module.split(".")[0]
            own = module == "logwright.model" or module.startswith("logwright.model.")
            allowed = own or top == "numpy" or (top in sys.stdlib_module_names
                                                and top not in FORBIDDEN_MODULES)
            if not allowed:
                found.append(f"import {module}")
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_NAMES:
            found.append(f".{node.attr}")
        if isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            found.append(node.id)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "__import__", "exec", "eval"):
            found.append(node.func.id)
    return found


def test_the_import_check_catches_what_it_forbids() -> None:
    assert forbidden_uses("import subprocess\n") == ["import subprocess"]
    assert forbidden_uses("import os\nx = os.environ['A']\n") == ["import os", ".environ"]
    assert forbidden_uses("from logwright.storage import log\n") == ["import logwright.storage"]
    assert forbidden_uses("import z3\n") == ["import z3"]
    assert forbidden_uses("__import__('subprocess')\n") == ["__import__"]
    assert forbidden_uses("import numpy as np\nfrom logwright.model.core import Spec\n"
                          "from pathlib import Path\n") == []
    assert forbidden_uses("from mypy_extensions import mypyc_attr\n") == []
    assert forbidden_uses("import mypy_extensions\n") == ["import mypy_extensions"]
    assert forbidden_uses("from mypy_extensions import trait\n") == ["import mypy_extensions"]


MODEL_FILES = sorted(MODEL_DIR.rglob("*.py"))


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: str(p.relative_to(MODEL_DIR)))
def test_model_imports_only_the_standard_library_numpy_and_itself(path: Path) -> None:
    assert forbidden_uses(path.read_text(encoding="utf-8")) == []


def test_every_model_module_imports_and_holds_nothing_forbidden() -> None:
    names = [m.name for m in pkgutil.walk_packages(logwright.model.__path__, "logwright.model.")]
    assert len(names) >= 5 * 4 + 5  # five packages of three or four modules, and the engine
    for name in names:
        module = importlib.import_module(name)
        held = {k for k, v in vars(module).items()
                if getattr(v, "__name__", "").split(".")[0] in FORBIDDEN_MODULES}
        assert not held, f"{name} holds {held}"


def test_tlc_tooling_is_outside_model() -> None:
    assert not (MODEL_DIR / "tlc.py").exists()
    importlib.import_module("logwright.verify.tlc")


def test_each_twin_is_apart_from_its_packed_encoding() -> None:
    from logwright.model.packed import PackedSpec

    for module, spec_class in SPECS.items():
        package = importlib.import_module(f"logwright.model.{snake_case(module)}")
        twin = importlib.import_module(f"{package.__name__}.twin")
        twin_class = getattr(twin, f"{module}Twin")
        assert not issubclass(twin_class, PackedSpec), module
        # A module may have no packed encoding (StrayCleanup: its network has no small fixed
        # shape); then the registered spec is the twin, which the generic engine explores.
        packed = (MODEL_DIR / snake_case(module) / "packed.py").exists()
        assert issubclass(spec_class, twin_class)
        assert issubclass(spec_class, PackedSpec) is packed, module
        # Its source (in the compiled build, twin.__file__ is the extension module beside it).
        source = (MODEL_DIR / snake_case(module) / "twin.py").read_text(encoding="utf-8")
        assert Path(twin.__file__ or "").parent == MODEL_DIR / snake_case(module)
        assert "import numpy" not in source and "np." not in source, module
        assert "def packed_" not in source and "def encode" not in source, module


# ---- bug switches -----------------------------------------------------------------------------

BUG_LITERAL = re.compile(r"\bbug\s*[!=]=\s*\"(\w+)\"")
TLA_BUG_LITERAL = re.compile(r"\bBug\s*[=#]\s*\"(\w+)\"")


def test_a_table_refuses_unknown_bugs_and_names_its_cfgs() -> None:
    table = BugTable("M", (Bug("A", "Inv", "what A does"), Bug("B", "Other", "what B does")))
    assert table.names == ("A", "B") and table.expected_violation == {"A": "Inv", "B": "Other"}
    assert table.check("none") == "none" and table.check("B") == "B"
    with pytest.raises(ValueError, match="unknown Bug 'C' for M; known: none, A, B"):
        table.check("C")
    assert table.cfg_name("A") == "M_bug_A.cfg" and table.cfg_name(NO_BUG) == "M.cfg"
    with pytest.raises(AssertionError):
        BugTable("M", (Bug("A", "I", ""), Bug("A", "I", "")))


@pytest.mark.parametrize("module", sorted(SPECS))
def test_the_bug_table_is_the_one_source_of_every_module(module: str) -> None:
    table = BUG_TABLES[module]
    names = set(table.names)
    assert table.module == module and names
    snake = snake_case(module)
    # The twin and its packed encoding test exactly the table's bugs, and use its table.
    package = MODEL_DIR / snake
    model_source = "".join((package / f).read_text(encoding="utf-8")
                           for f in ("twin.py", "packed.py") if (package / f).exists())
    assert set(BUG_LITERAL.findall(model_source)) - {NO_BUG} == names
    assert importlib.import_module(f"logwright.model.{snake}").BUG_TABLE is table
    # The .cfg files: one per bug, each switching on the bug its name says.
    on_disk = {c.stem.split("_bug_", 1)[1] for c in SPEC.glob(f"{module}_bug_*.cfg")}
    assert on_disk == names
    _, cfgs = configs(module)
    assert {parse_cfg(c)["constants"]["Bug"] for c in cfgs} == names
    assert {c.stem.split("_bug_", 1)[1] for c in cfgs} == names
    assert parse_cfg(SPEC / f"{module}.cfg")["constants"]["Bug"] == NO_BUG
    # The TLC figures violate the invariant the table says.
    figures = json.loads((SPEC / "tlc_figures.json").read_text(encoding="utf-8"))
    for bug in names:
        recorded = figures.get(table.cfg_name(bug), {}).get("violation")
        assert recorded in (None, table.expected_violation[bug]), bug
    # The TLA+ module tests exactly these bugs.
    tla = (SPEC / f"{module}.tla").read_text(encoding="utf-8")
    assert set(TLA_BUG_LITERAL.findall(tla)) - {NO_BUG} == names
    # The Z3 encoding reads the same table and tests exactly these bugs.
    z3_module = load_z3_module(module)
    assert z3_module is not None
    assert z3_module.BUG_TABLE is table
    z3_source = (SPEC / "z3" / f"{snake}.py").read_text(encoding="utf-8")
    assert set(BUG_LITERAL.findall(z3_source)) - {NO_BUG} == names
    assert "BUGS = " not in z3_source and "EXPECTED_VIOLATION = " not in z3_source
    with pytest.raises(ValueError, match="unknown Bug"):
        z3_module.system("NoSuchBug")
