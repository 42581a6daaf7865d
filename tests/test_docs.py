"""The docs stand alone and their examples run.

Conventions for README.md and docs/*.md (docs/cli.md states them for readers):

* a ```python block runs: each page's python blocks run in order in one namespace, in a
  temporary working directory;
* a ```console block runs from the repository's root: each ``$ logwright ...`` line is a
  command, and the lines after it (when given) its exact output, stdout for a success and
  stderr for a failure; the expected exit code is 1 for output starting ``error:``, 2 for
  ``Usage:``, else 0;
* a ```text block (or a block without a language) is shown, never run; any other language for
  a shell (sh, bash, shell) is refused, so a command cannot silently go unchecked.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from logwright.cli import main
from logwright.errors import Errors

ROOT = Path(__file__).parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```", re.S | re.M)
SHELLS = {"sh", "bash", "shell", "zsh"}


def blocks(page: Path, language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(page.read_text()) if lang == language]


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_python_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__doc_example__"}
    for code in blocks(page, "python"):
        exec(compile(code, page_id(page), "exec"), namespace)


def test_the_pages_that_teach_the_api_have_runnable_examples() -> None:
    for name in ("README.md", "docs/cluster.md", "docs/controller.md", "docs/broker.md"):
        assert blocks(ROOT / name, "python"), f"{name} has a runnable example"
    assert blocks(ROOT / "docs/cli.md", "console"), "docs/cli.md has runnable commands"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_no_shell_block_goes_unchecked(page: Path) -> None:
    languages = {lang for lang, _ in FENCE.findall(page.read_text())}
    assert not languages & SHELLS, (
        f"{page_id(page)}: a shell block must be `console` (runs: `$ logwright ...`) or `text`")


def console_steps(body: str) -> list[tuple[list[str], list[str]]]:
    steps: list[tuple[list[str], list[str]]] = []
    for line in body.rstrip("\n").split("\n"):
        if line.startswith("$ "):
            argv = shlex.split(line[2:])
            assert argv[0] == "logwright", f"only logwright commands run here: {line}"
            steps.append((argv[1:], []))
        else:
            assert steps, f"output before any command: {line!r}"
            steps[-1][1].append(line)
    return steps


def expected_code(output: list[str]) -> int:
    first = output[0] if output else ""
    return 1 if first.startswith("error:") else 2 if first.startswith("Usage:") else 0


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p, "console")], ids=page_id)
def test_console_blocks_run(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    for body in blocks(page, "console"):
        for argv, output in console_steps(body):
            result = CliRunner().invoke(main, argv, prog_name="logwright")
            code = expected_code(output)
            assert result.exit_code == code, (argv, result.output, result.stderr)
            if output:
                shown = result.stdout if code == 0 else result.stderr
                assert shown.rstrip("\n").split("\n") == output, argv


def test_a_console_example_really_runs_as_a_process() -> None:
    """One example from docs/cli.md through a real process: the stderr line and the exit code
    a shell sees."""
    command = str(Path(sys.executable).parent / "logwright")
    done = subprocess.run([command, "demo", "--real", "README.md"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr == "error: data path README.md exists and is not a directory\n"


def test_error_code_table_matches_errors() -> None:
    text = (ROOT / "docs/kafka-compatibility.md").read_text()
    rows = dict(re.findall(r"\| ([A-Z_]+) \| (\d+) ", text))
    rows.update(re.findall(r"\| [A-Z_]+ \| \d+ \| ([A-Z_]+) \| (\d+) \|", text))
    expected = {e.name: str(int(e)) for e in Errors if e is not Errors.NONE}
    assert rows == expected


# ---- the docs and the code stand alone ----------------------------------------------------------

OUTSIDE = re.compile("|".join([
    r"HAZARDS\.md", r"KAFKA" r"-FACTS", r"\bDESIGN\.md", r"\bSTYLE\.md", r"\.\./shared",
    r"\bHAZARDS" r" \d", r"/wo" r"rk/",
]))


def outside_references(paths: list[Path]) -> list[str]:
    found = []
    for path in paths:
        try:
            text = path.read_text()
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    return found


NOT_SOURCES = {".git", ".venv", "out", "build", "dist", "__pycache__", ".mypy_cache",
               ".ruff_cache", ".pytest_cache", ".hypothesis", "mutants"}


def tracked_files() -> list[Path]:
    """The project's files: git's list in a clone, else (a copy without .git, as ``make
    mutants`` makes) every file outside the build and cache directories."""
    if (ROOT / ".git").exists():
        listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                                check=True).stdout.split()
        paths = [ROOT / name for name in listed]
    else:
        paths = [p for p in ROOT.rglob("*") if p.is_file()
                 and not NOT_SOURCES & set(p.relative_to(ROOT).parts)
                 and not any(part.endswith(".egg-info") for part in p.parts)]
    return [p for p in paths if p != ROOT / "tests" / "test_docs.py"]


def test_no_tracked_file_names_a_file_outside_the_repository() -> None:
    found = outside_references(tracked_files())
    assert not found, "\n".join(found[:50])


def test_the_new_pages_stand_alone() -> None:
    pages = [ROOT / "docs" / name for name in ("hazards.md", "kafka-compatibility.md", "cli.md")]
    assert not outside_references(pages)
    assert outside_references([ROOT / "tests/test_docs.py"]) == [], "the patterns are split"


def test_examples_type_check_under_mypy_strict(tmp_path: Path) -> None:
    """The public names (Cluster, ClientConfig, the error types...) are visible to mypy, so a
    user's code that uses them as the docs do type-checks."""
    files = []
    for page in (ROOT / "README.md", ROOT / "docs" / "cluster.md"):
        for i, code in enumerate(blocks(page, "python")):
            path = tmp_path / f"example_{page.stem}_{i}.py"
            path.write_text(code)
            files.append(str(path))
    assert len(files) >= 3
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
         "--cache-dir", str(ROOT / ".mypy_cache"), *files],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
