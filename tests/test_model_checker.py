"""The explicit-state checker keeps TLC's semantics, on a spec small enough to reason about by hand.

The figures below are what TLC 2.20 printed (-workers 1 -deadlock) for this module:

    VARIABLES x, y
    Init == x \\in {0, 1} /\\ y = 0
    IncX == x' = x + 1 /\\ y' = y
    IncY == y' = y + 1 /\\ x' = x
    Next == IncX \\/ IncY
    Bound == x <= 2 /\\ y <= 2          \\* CONSTRAINT
    Inv == x + y < 100                  \\* 20 generated, 9 distinct, depth 4
    Inv == x < 3                        \\* violated after 3 states; 9 generated, 6 distinct

The second run shows that TLC checks invariants in states outside the CONSTRAINT (x = 3).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pytest

from logwright.model import INITIAL, Action, Invariant, Spec, State, check
from logwright.model.cfg import CfgError, ModelValue, parse_cfg
from logwright.model.checker import check_generic
from logwright.model.packed import Branch, Codes, Layout, Mask, PackedSpec
from logwright.verify.tlc import (
    NOT_INSTALLED,
    parse_tlc_output,
    run_sany,
    run_tlc,
    tlc_missing,
)

TINY_TLA = """---- MODULE Tiny ----
EXTENDS Naturals
CONSTANT Limit
VARIABLES x, y
Init == x \\in {0, 1} /\\ y = 0
IncX == x' = x + 1 /\\ y' = y
IncY == y' = y + 1 /\\ x' = x
Next == IncX \\/ IncY
Bound == x <= 2 /\\ y <= 2
Inv == x < Limit
====
"""


class Tiny(PackedSpec):
    """Two counters bounded by a CONSTRAINT; ``Inv`` is x < limit."""

    name = "Tiny"

    def __init__(self, limit: int = 100) -> None:
        self.limit = limit
        self.layout = Layout([("x", 8), ("y", 8)])

    def init_states(self) -> Iterable[State]:
        return [(0, 0), (1, 0)]

    def IncX(self, s: State) -> Iterable[State]:
        assert isinstance(s, tuple)
        return [(s[0] + 1, s[1])]

    def IncY(self, s: State) -> Iterable[State]:
        assert isinstance(s, tuple)
        return [(s[0], s[1] + 1)]

    def actions(self) -> Sequence[Action]:
        return [Action("IncX", self.IncX), Action("IncY", self.IncY)]

    def invariants(self) -> Sequence[Invariant]:
        return [("Inv", lambda s: s[0] < self.limit)]

    def constraint(self, s: State) -> bool:
        return s[0] <= 2 and s[1] <= 2  # type: ignore[index,no-any-return]

    def encode(self, s: State) -> int:
        assert isinstance(s, tuple)
        return self.layout.pack({"x": s[0], "y": s[1]})

    def decode(self, code: int) -> State:
        v = self.layout.unpack(code)
        return (v["x"], v["y"])

    def packed_successors(self, frontier: Codes) -> Iterable[Branch]:
        every = np.arange(frontier.size, dtype=np.int64)
        yield Branch(0, 0, every, frontier + self.layout.weight["x"])
        yield Branch(1, 0, every, frontier + self.layout.weight["y"])

    def packed_invariants(self, codes: Codes) -> Sequence[tuple[str, Mask]]:
        return [("Inv", self.layout.column(codes, "x") < self.limit)]

    def packed_constraint(self, codes: Codes) -> Mask | None:
        x, y = self.layout.column(codes, "x"), self.layout.column(codes, "y")
        return (x <= 2) & (y <= 2)


@pytest.mark.parametrize("packed", [False, True])
def test_figures_equal_tlc_with_a_constraint(packed: bool) -> None:
    r = check(Tiny(), packed=packed)
    assert (r.generated, r.distinct, r.depth) == (20, 9, 4)
    assert r.holds and r.violation is None
    assert r.engine == ("packed" if packed else "generic")


@pytest.mark.parametrize("packed", [False, True])
def test_violation_outside_the_constraint_is_reported_with_the_shortest_trace(
        packed: bool) -> None:
    spec = Tiny(limit=3)
    r = check(spec, packed=packed)
    assert r.violation is not None
    assert r.violation.invariant == "Inv"
    assert r.violation.steps == [(INITIAL, (1, 0)), ("IncX", (2, 0)), ("IncX", (3, 0))]
    assert r.depth == 3
    if not packed:  # one state at a time stops exactly where TLC stops
        assert (r.generated, r.distinct) == (9, 6)


def test_violation_in_an_initial_state() -> None:
    r = check(Tiny(limit=1), packed=False)
    assert r.violation is not None and len(r.violation) == 1
    assert r.violation.steps[0] == (INITIAL, (1, 0))


@pytest.mark.parametrize("packed", [False, True])
def test_max_states_stops_early(packed: bool) -> None:
    r = check(Tiny(), max_states=5, packed=packed)
    assert not r.complete and not r.holds
    assert r.distinct == 5


def test_counterexample_format_is_a_numbered_trace() -> None:
    spec = Tiny(limit=3)
    r = check(spec)
    assert r.violation is not None
    text = r.violation.format(spec)
    assert text.splitlines()[0] == "Invariant Inv is violated after 3 states:"
    assert "State 1: <Initial predicate>" in text and "State 3: IncX" in text
    assert "(3, 0)" in text


class _GenericOnly(Spec):
    name = "GenericOnly"

    def init_states(self) -> Iterable[State]:
        return [0]

    def actions(self) -> Sequence[Action]:
        return [Action("Inc", lambda s: [s + 1] if s < 4 else [])]  # type: ignore[operator]

    def invariants(self) -> Sequence[Invariant]:
        return []


def test_a_spec_without_the_fast_path_runs_generic_and_refuses_packed() -> None:
    r = check(_GenericOnly())
    assert (r.engine, r.distinct, r.depth, r.generated) == ("generic", 5, 5, 5)
    assert check_generic(Tiny()).distinct == 9
    with pytest.raises(ValueError, match="no packed fast path"):
        check(_GenericOnly(), packed=True)


def test_layout_round_trip_and_bounds() -> None:
    layout = Layout([("a", 3), ("b", 5), ("c", 2)])
    assert layout.size == 30
    for code in range(layout.size):
        assert layout.pack(layout.unpack(code)) == code
    assert list(layout.column(np.array([layout.pack({"a": 2, "b": 4, "c": 1})]), "b")) == [4]
    with pytest.raises(ValueError, match="outside"):
        layout.pack({"a": 3, "b": 0, "c": 0})
    with pytest.raises(ValueError, match="int64"):
        Layout([(f"f{i}", 1000) for i in range(7)])


def test_parse_cfg_reads_every_kind_of_value(tmp_path: Path) -> None:
    cfg = tmp_path / "M.cfg"
    cfg.write_text("""\\* a comment
CONSTANTS
  Replicas = {1, 2}   (* block (* nested *) *)
  MaxOffset = 3
  Bug = "none"
  Mode = none
  Neg = -2
  Flag = TRUE
  Tup = <<1, "a", r1>>
  Empty = {}
  F <- G
INIT Init NEXT Next
INVARIANTS TypeOK NeverServeBelowLogStart
CONSTRAINT Bound
CHECK_DEADLOCK FALSE
""")
    c = parse_cfg(cfg)
    assert c["constants"] == {
        "Replicas": frozenset({1, 2}), "MaxOffset": 3, "Bug": "none", "Mode": ModelValue("none"),
        "Neg": -2, "Flag": True, "Tup": (1, "a", ModelValue("r1")), "Empty": frozenset()}
    assert c["substitutions"] == {"F": "G"}
    assert (c["init"], c["next"], c["specification"]) == ("Init", "Next", None)
    assert c["invariants"] == ["TypeOK", "NeverServeBelowLogStart"]
    assert c["constraints"] == ["Bound"]
    assert c["check_deadlock"] is False


@pytest.mark.parametrize("text,message", [
    ("CONSTANTS\n  X = \n", "end of file"),
    ("CONSTANTS\n  X = {1, 2\nINIT Init\n", "expected"),
    ("INIT Init\nINIT Other\n", "given twice"),
    ("FOO Bar\n", "section keyword"),
    ("INVARIANT\n", "names nothing"),
    ("(* open\n", "unterminated"),
])
def test_parse_cfg_rejects_malformed_files(tmp_path: Path, text: str, message: str) -> None:
    cfg = tmp_path / "bad.cfg"
    cfg.write_text(text)
    with pytest.raises(CfgError, match=message):
        parse_cfg(cfg)


TLC_VIOLATION_OUTPUT = """Starting... (2026-11-21 13:45:36)
Computing initial states...
Finished computing initial states: 2 distinct states generated at 2026-11-21 13:45:36.
Error: Invariant Inv is violated.
Error: The behavior up to this point is:
State 1: <Initial predicate>
/\\ x = 1
/\\ y = 0

State 2: <IncX line 5, col 9 to line 5, col 28 of module Tiny>
/\\ x = 2
/\\ y = 0

State 3: <IncX line 5, col 9 to line 5, col 28 of module Tiny>
/\\ x = 3
/\\ y = (1 :> 0 @@
  2 :> 1)

9 states generated, 6 distinct states found, 2 states left on queue.
The depth of the complete state graph search is 3.
Finished in 00s at (2026-11-21 13:45:36)
"""


def test_parse_tlc_output_of_a_violation() -> None:
    r = parse_tlc_output(TLC_VIOLATION_OUTPUT, "Tiny", "Tiny.cfg")
    assert r.ok and r.violation == "Inv"
    assert (r.generated, r.distinct, r.left_on_queue, r.depth) == (9, 6, 2, 3)
    assert [s.action for s in r.trace] == ["Initial predicate", "IncX", "IncX"]
    assert r.trace[2].variables == {"x": "3", "y": "(1 :> 0 @@ 2 :> 1)"}


def test_parse_tlc_output_of_a_violated_action_property() -> None:
    """Regression: TLC reports a ``[][A]_v`` property (LogStartOffset's DurableStartMonotone) as
    an action property; it was read as a tool error, not as the violation it is."""
    out = TLC_VIOLATION_OUTPUT.replace("Error: Invariant Inv is violated.",
                                       "Error: Action property Mono is violated.")
    r = parse_tlc_output(out, "Tiny", "Tiny.cfg")
    assert r.ok and r.violation == "Mono" and len(r.trace) == 3


def test_parse_tlc_output_of_an_error() -> None:
    r = parse_tlc_output("Error: The constraint x specified in the configuration file\n", "T")
    assert not r.ok and r.error is not None and "constraint" in r.error


def test_tlc_missing_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TLA2TOOLS_JAR", raising=False)
    message = tlc_missing()
    assert message is not None and message.startswith(NOT_INSTALLED.split(":")[0])
    assert "https://github.com/tlaplus/tlaplus/releases" in message
    r = run_tlc("Nowhere.tla")
    assert not r.ok and r.error == NOT_INSTALLED


@pytest.mark.skipif(tlc_missing() is not None, reason="TLC not installed (TLA2TOOLS_JAR)")
def test_tlc_and_the_checker_agree_on_tiny(tmp_path: Path) -> None:
    (tmp_path / "Tiny.tla").write_text(TINY_TLA)
    (tmp_path / "Tiny.cfg").write_text(
        "CONSTANT Limit = 3\nINIT Init\nNEXT Next\nINVARIANT Inv\nCONSTRAINT Bound\n")
    assert run_sany(tmp_path / "Tiny.tla").ok
    tlc = run_tlc(tmp_path / "Tiny.tla")
    ours = check(Tiny(limit=3), packed=False)
    assert ours.violation is not None
    assert tlc.violation == ours.violation.invariant
    assert (tlc.generated, tlc.distinct, len(tlc.trace)) == (ours.generated, ours.distinct, 3)
    assert sorted(os.listdir(tmp_path)) == ["Tiny.cfg", "Tiny.tla"]  # no states/, no TE spec
