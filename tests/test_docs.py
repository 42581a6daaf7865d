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


def test_configs_examples_run() -> None:
    blocks = python_blocks("configs.md")
    assert len(blocks) >= 3, "docs/configs.md has runnable examples"
    for code in blocks:
        exec(compile(code, "docs/configs.md", "exec"), {})
