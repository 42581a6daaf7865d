"""The runnable examples in README.md and docs/ run, and type-check under ``mypy --strict``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"


def python_blocks(page: str | Path) -> list[str]:
    path = page if isinstance(page, Path) else DOCS / page
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


def test_cluster_example_runs() -> None:
    blocks = python_blocks("cluster.md")
    assert len(blocks) >= 2, "docs/cluster.md has runnable examples"
    for code in blocks:
        exec(compile(code, "docs/cluster.md", "exec"), {})


def test_configs_examples_run() -> None:
    blocks = python_blocks("configs.md")
    assert len(blocks) >= 3, "docs/configs.md has runnable examples"
    for code in blocks:
        exec(compile(code, "docs/configs.md", "exec"), {})


def test_readme_example_runs() -> None:
    (code,) = python_blocks(ROOT / "README.md")
    exec(compile(code, "README.md", "exec"), {})


def test_examples_type_check_under_mypy_strict(tmp_path: Path) -> None:
    """The public names (Cluster, ClientConfig, the error types...) are visible to mypy, so a
    user's code that uses them as the docs do type-checks."""
    files = []
    for name, page in (("readme", ROOT / "README.md"), ("cluster", DOCS / "cluster.md")):
        for i, code in enumerate(python_blocks(page)):
            path = tmp_path / f"example_{name}_{i}.py"
            path.write_text(code)
            files.append(str(path))
    assert len(files) >= 3
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
         "--cache-dir", str(ROOT / ".mypy_cache"), *files],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_metrics_example_runs() -> None:
    blocks = python_blocks("metrics.md")
    assert blocks, "docs/metrics.md has a runnable example"
    for code in blocks:
        exec(compile(code, "docs/metrics.md", "exec"), {})


def test_storage_example_runs() -> None:
    blocks = python_blocks("storage.md")
    assert blocks, "docs/storage.md has a runnable example"
    for code in blocks:
        exec(compile(code, "docs/storage.md", "exec"), {})
