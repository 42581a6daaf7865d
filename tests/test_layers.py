"""The house's floors: every module of the package imports only from floors below its own.

``FLOORS`` is the table of docs/architecture.md ("From a file's path, what it may import"): a
top-level module or folder of ``impl/logwright`` sits on one floor and may import any module on a
lower floor, never one on its own floor (other than itself) or above. So the layers cannot
grow a cycle or an upward arrow without this test failing, and a newcomer can tell from a file's
path what it may import. Imports under ``TYPE_CHECKING`` count too: they are arrows for a reader.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "impl" / "logwright"

FLOORS: dict[str, int] = {
    "errors": 0, "frozen": 0, "_native": 0,
    "identity": 1, "world": 1, "model": 1,
    "records": 2, "configs": 2,
    "storage": 3, "protocol": 3,
    "logmanager": 4, "controller": 4,
    "broker": 5,
    "cluster": 6,
    "__init__": 7,  # the package's front door: public names, imported lazily
    "conformance": 7,  # the implementation checked against the models' twins
    "wire": 7,  # Kafka's wire protocol in front of a cluster (logwright serve)
    "tools": 7,  # the operator tools' view of a cluster over the protocol
    "verify": 8,
    "cli": 9,
}


def unit_of(path: Path) -> str:
    """The top-level module or folder of the package that ``path`` belongs to."""
    parts = path.relative_to(PACKAGE).parts
    return parts[0].removesuffix(".py")


def logwright_imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, unit) for every import of another part of the package in ``path``."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "logwright":
                yield node.lineno, parts[1] if len(parts) > 1 else "__init__"


SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_every_part_of_the_package_has_a_floor() -> None:
    assert {unit_of(p) for p in SOURCES} == set(FLOORS)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_down_the_floors(path: Path) -> None:
    here = unit_of(path)
    wrong = [f"line {line}: {here} (floor {FLOORS[here]}) imports {there} "
             f"(floor {FLOORS[there]})"
             for line, there in logwright_imports(path)
             if there != here and FLOORS[there] >= FLOORS[here]]
    assert not wrong, "\n".join(wrong)


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The test itself can fail: an upward import is found."""
    fake = PACKAGE / "storage" / "example.py"
    source = "from logwright.broker import Broker\nimport logwright.cluster\n"
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom | ast.Import):
            found.append(node)
    assert unit_of(fake) == "storage" and len(found) == 2
    (tmp_path / "example.py").write_text(source)
    ups = list(logwright_imports(tmp_path / "example.py"))
    assert [u for _, u in ups] == ["broker", "cluster"]
    assert all(FLOORS[u] > FLOORS["storage"] for _, u in ups)
