"""Each packed encoding is its readable twin on every reachable state (logwright.model.agreement).

The suite "agreement" of ``logwright verify`` compares them on every shipped .cfg (minutes);
here every module with a packed encoding is compared, for its correct model and for each of its
bug switches, on a smaller configuration, every reachable state of it (seconds). Then mutants of
a packed encoding, each a small change a hurried edit could make, must be reported with the
state that shows them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from logwright.model import BUG_TABLES
from logwright.model.agreement import compare_with_twin
from logwright.model.controller_fencing import ControllerFencingSpec
from logwright.model.controller_fencing.twin import ControllerFencingConfig
from logwright.model.fetcher_failure import FetcherFailureSpec
from logwright.model.fetcher_failure.twin import FetcherFailureConfig
from logwright.model.log_start_offset import LogStartOffsetSpec
from logwright.model.log_start_offset.twin import LogStartOffsetConfig
from logwright.model.packed import Branch, PackedSpec
from logwright.model.replica_move import ReplicaMoveSpec
from logwright.model.replica_move.twin import ReplicaMoveConfig
from logwright.verify.agreement import compare_cfg, packed_modules
from logwright.verify.core import Verdict

SPEC = Path(__file__).resolve().parent.parent / "spec"


def small(module: str, bug: str) -> PackedSpec:
    """A configuration of ``module`` with every action enabled somewhere, a few thousand
    states at most."""
    if module == "LogStartOffset":
        return LogStartOffsetSpec(LogStartOffsetConfig(replicas=(1, 2), max_offset=1,
                                                       segment_size=1, bug=bug))
    if module == "ControllerFencing":
        return ControllerFencingSpec(ControllerFencingConfig(
            max_controller_epoch=2, max_broker_epoch=2, max_leader_epoch=1, max_in_flight=1,
            bug=bug))
    if module == "FetcherFailure":
        return FetcherFailureSpec(FetcherFailureConfig(num_partitions=2, num_fetchers=1,
                                                       max_leader_epoch=1, bug=bug))
    assert module == "ReplicaMove"
    return ReplicaMoveSpec(ReplicaMoveConfig(max_records=1, bug=bug))


CASES = [(m, bug) for m in packed_modules() for bug in ("none", *BUG_TABLES[m].names)]


def test_every_module_with_a_packed_encoding_is_compared() -> None:
    assert packed_modules() == ["LogStartOffset", "ControllerFencing", "FetcherFailure",
                                "ReplicaMove"]


@pytest.mark.parametrize(("module", "bug"), CASES)
def test_the_packed_encoding_is_the_twin_on_every_reachable_state(module: str, bug: str) -> None:
    spec = small(module, bug)
    agreement = compare_with_twin(spec)
    assert agreement.disagreement is None, agreement.disagreement
    assert agreement.complete and agreement.depth > 3
    assert 200 <= agreement.states <= 20_000, agreement.states  # small, and not trivial
    assert agreement.successors > agreement.states


def test_a_shipped_cfg_is_compared_whole_and_reported_as_a_row() -> None:
    row = compare_cfg("ReplicaMove", str(SPEC / "ReplicaMove.cfg"))
    assert row.verdict is Verdict.HOLDS, row.detail
    assert row.checks == 5_013 and row.method == "packed vs twin (ReplicaMove.cfg)"
    assert row.detail == ("every reachable state agrees: 5,013 states, 15,050 successors, "
                          "depth 27")
    capped = compare_cfg("ReplicaMove", str(SPEC / "ReplicaMove.cfg"), max_states=1_000)
    assert capped.verdict is Verdict.UNDECIDED and capped.checks == 1_000


# -- mutants of a packed encoding: each must be reported, with the state that shows it ----------

class DropsABranch(ReplicaMoveSpec):
    """The packed Append loses every other successor it computes."""

    def packed_successors(self, frontier: Any) -> Any:
        append = [name for name, _ in self.actions()].index("Append")
        for b in super().packed_successors(frontier):
            if b.action == append:
                keep = np.arange(b.codes.size) % 2 == 0
                b = Branch(b.action, b.branch, b.parents[keep], b.codes[keep])
            yield b


class SwapsTwoActions(ReplicaMoveSpec):
    """The packed successors of the first two actions are filed under each other's index."""

    def packed_successors(self, frontier: Any) -> Any:
        for b in super().packed_successors(frontier):
            yield b._replace(action={0: 1, 1: 0}.get(b.action, b.action))


class ReversedBranches(ReplicaMoveSpec):
    """Every action's branches numbered backwards: the same successors, in another order."""

    def packed_successors(self, frontier: Any) -> Any:
        for b in super().packed_successors(frontier):
            yield b._replace(branch=-b.branch)


class WeakerInvariant(ReplicaMoveSpec):
    """The packed AtomicMoveSwap holds everywhere."""

    def packed_invariants(self, codes: Any) -> Any:
        return [(name, np.ones(codes.size, dtype=bool) if name == "AtomicMoveSwap" else mask)
                for name, mask in super().packed_invariants(codes)]


class LossyCode(ReplicaMoveSpec):
    """decode forgets an acknowledgement."""

    def decode(self, code: int) -> Any:
        s = super().decode(code)
        return s._replace(acked=0) if s.acked == 1 else s


@pytest.mark.parametrize(("mutant", "says"), [
    (DropsABranch, "the readable twin alone reaches (1)"),
    (SwapsTwoActions, "action Append from state"),
    (ReversedBranches, "the same successors, in another order"),
    (WeakerInvariant, "invariant AtomicMoveSwap: the twin says False, the packed encoding True"),
    (LossyCode, "decode(encode(s)) is not s"),
])
def test_a_packed_encoding_that_drifts_from_its_twin_is_reported(mutant: type[ReplicaMoveSpec],
                                                                  says: str) -> None:
    spec = mutant(ReplicaMoveConfig(max_records=1, bug="SwapBeforeFlush"))
    agreement = compare_with_twin(spec)
    assert not agreement.agrees and not agreement.complete
    assert agreement.disagreement is not None and says in agreement.disagreement, \
        agreement.disagreement


def test_the_suite_runs_every_shipped_cfg_of_a_module_in_file_order() -> None:
    from logwright.verify.agreement import agreement_suite
    from logwright.verify.formal import configs

    rows = agreement_suite(["ReplicaMove"], workers=2)
    correct, bugs = configs("ReplicaMove")
    assert [r.method for r in rows] == [
        "packed vs twin (ReplicaMove.cfg)",
        *(f"packed vs twin (ReplicaMove, bug {c.stem.split('_bug_')[1]})" for c in bugs)]
    assert {r.verdict for r in rows} == {Verdict.HOLDS}
    assert rows[0].checks == 5_013 and correct.is_file()
