"""The named-fault catalogue of ``make mutants`` still fits the code.

Every mutant's anchor must occur exactly once in its file, so a refactor that moves a guard fails
here, naming the mutant, instead of silently turning ``make mutants`` into a no-op. Planting a
mutant must change the file, keep it valid Python, and never touch the repository itself.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
from mutation.catalogue import MUTANTS, ROOT, AnchorError, Mutant, apply, check_all, check_anchor


def test_every_anchor_occurs_exactly_once() -> None:
    assert check_all() == []


def test_names_are_the_issues_and_unique() -> None:
    names = [m.name for m in MUTANTS]
    assert len(names) == len(set(names)) >= 11
    for m in MUTANTS:
        assert m.file.startswith("impl/logwright/"), m.name
        assert m.anchor != m.replacement, m.name
        assert m.loss.strip(), m.name


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_planting_changes_the_copy_only_and_stays_python(mutant: Mutant, tmp_path: Path) -> None:
    target = tmp_path / mutant.file
    target.parent.mkdir(parents=True)
    shutil.copy(ROOT / mutant.file, target)
    before = (ROOT / mutant.file).read_text(encoding="utf-8")
    apply(mutant, tmp_path)
    after = target.read_text(encoding="utf-8")
    assert after != before
    assert mutant.replacement in after
    ast.parse(after)  # the mutant must run, not fail at import
    assert (ROOT / mutant.file).read_text(encoding="utf-8") == before


def test_a_moved_anchor_is_reported_by_name(tmp_path: Path) -> None:
    m = MUTANTS[0]
    target = tmp_path / m.file
    target.parent.mkdir(parents=True)
    target.write_text("nothing to see\n", encoding="utf-8")
    with pytest.raises(AnchorError, match=m.name):
        check_anchor(m, tmp_path)
    target.write_text(m.anchor + "\n" + m.anchor + "\n", encoding="utf-8")
    with pytest.raises(AnchorError, match="2 times"):
        check_anchor(m, tmp_path)
    assert any(m.name in p for p in check_all(tmp_path))


def test_never_applied_to_the_repository() -> None:
    with pytest.raises(AssertionError):
        apply(MUTANTS[0], ROOT)
