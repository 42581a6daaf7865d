"""The runnable examples in docs/ run."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).parents[1] / "docs"


def python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), re.S)


def test_cluster_example_runs() -> None:
    blocks = python_blocks("cluster.md")
    assert blocks, "docs/cluster.md has a runnable example"
    for code in blocks:
        exec(compile(code, "docs/cluster.md", "exec"), {})


def test_metrics_example_runs() -> None:
    blocks = python_blocks("metrics.md")
    assert blocks, "docs/metrics.md has a runnable example"
    for code in blocks:
        exec(compile(code, "docs/metrics.md", "exec"), {})
