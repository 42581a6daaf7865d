"""``logwright check``: TLC's figures and verdict for any .cfg, on one core or several.

The counts, depth and violation the command prints are TLC's (spec/tlc_figures.json, recorded
from TLC on the same files), read back with the same parser that reads TLC's own output; a
search spread over two threads finds exactly what one thread finds, trace included; bad input
is one line and a documented exit code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from logwright.cli import main
from logwright.model import SPECS, check
from logwright.verify.tlc import parse_tlc_output

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "spec"
TLC = json.loads((SPEC / "tlc_figures.json").read_text())


def _module(cfg: str) -> str:
    return cfg.removesuffix(".cfg").split("_")[0]


@pytest.mark.parametrize("cfg", ["ReplicaMove.cfg", "ControllerFencing.cfg",
                                 "LeaderElection_small.cfg",
                                 "FetcherFailure_bug_FailWholeFetcher.cfg",
                                 "LogStartOffset_bug_AckBeforeDurable.cfg",
                                 "StrayCleanup_bug_NoAgeGuard.cfg"])
def test_the_command_prints_tlc_s_figures_and_verdict(cfg: str) -> None:
    module = _module(cfg)
    run = CliRunner().invoke(main, ["check", module, "--cfg", str(SPEC / cfg), "--workers", "2"])
    expected = TLC[cfg]
    assert run.exit_code == (0 if expected["violation"] is None else 1), run.output
    read = parse_tlc_output(run.stdout, module, cfg)
    assert read.ok and read.violation == expected["violation"]
    assert (read.distinct, read.depth) == (expected["distinct"], expected["depth"])
    if expected["violation"] is None:
        assert read.generated == expected["generated"]
    else:  # a violation stops TLC amid a level, the packed engine after the level's successors
        assert len(read.trace) == expected["depth"]
        assert read.trace[0].action == "Initial predicate"
    assert "Progress(" in run.stderr and "Finished in" in run.stderr


@pytest.mark.parametrize("cfg", sorted(p.name for p in SPEC.glob("*.cfg")
                                       if _module(p.name) in {"LogStartOffset",
                                                              "ControllerFencing",
                                                              "FetcherFailure", "ReplicaMove"}
                                       and p.name != "ReplicaMoves.cfg"))
def test_two_workers_find_what_one_finds(cfg: str) -> None:
    spec = SPECS[_module(cfg)].from_cfg(SPEC / cfg)  # type: ignore[attr-defined]
    one, two = check(spec, workers=1), check(spec, workers=2)
    assert one.engine == two.engine == "packed"
    assert (one.generated, one.distinct, one.depth, one.left_on_queue) == (
        two.generated, two.distinct, two.depth, two.left_on_queue)
    assert (one.violation is None) == (two.violation is None)
    if one.violation is not None and two.violation is not None:
        assert one.violation.invariant == two.violation.invariant
        assert one.violation.steps == two.violation.steps


@pytest.mark.parametrize("limit", [1, 2, 1_000, 4_999])
def test_two_workers_stop_where_one_stops(limit: int) -> None:
    spec = SPECS["ReplicaMove"].from_cfg(SPEC / "ReplicaMove.cfg")  # type: ignore[attr-defined]
    one, two = check(spec, limit, workers=1), check(spec, limit, workers=2)
    assert not one.complete and not two.complete
    assert (one.generated, one.distinct, one.depth) == (two.generated, two.distinct, two.depth)
    assert one.distinct == limit


def test_max_states_is_an_incomplete_verdict() -> None:
    run = CliRunner().invoke(main, ["check", "ReplicaMove", "--max-states", "100", "-q"])
    assert run.exit_code == 4
    assert run.stdout.startswith("Search stopped after 100 distinct states")
    assert run.stderr == ""


def test_the_default_cfg_is_the_module_s_own_and_progress_goes_to_stderr() -> None:
    run = CliRunner().invoke(main, ["check", "ReplicaMove", "--workers", "1"])
    assert run.exit_code == 0
    assert run.stdout.splitlines() == [
        "Model checking completed. No error has been found.",
        "15051 states generated, 5013 distinct states found, 0 states left on queue.",
        "The depth of the complete state graph search is 27."]
    progress = [ln for ln in run.stderr.splitlines() if ln.startswith("Progress(")]
    assert len(progress) == 27 and "5,013 distinct states found" in progress[-1]


@pytest.mark.parametrize(("args", "code", "message"), [
    (["check", "NoSuchModule"], 2, "unknown module 'NoSuchModule'"),
    (["check", "ReplicaMove", "--cfg", str(SPEC / "LogStartOffset.cfg")], 1,
     "not a configuration of ReplicaMove"),
    (["check", "StrayCleanup", "--engine", "packed"], 1, "has no packed engine"),
    (["check", "ReplicaMove", "--workers", "0"], 2, "--workers"),
    (["check", "ReplicaMove", "--cfg", "/no/such.cfg"], 1, "/no/such.cfg"),
])
def test_bad_input_is_one_line_and_an_exit_code(args: list[str], code: int,
                                                message: str) -> None:
    run = CliRunner().invoke(main, args)
    assert run.exit_code == code, run.output
    assert message in run.stderr
    assert run.stdout == ""


def test_the_code_set_agrees_with_a_python_set_through_growth_and_collisions() -> None:
    import numpy as np

    from logwright.model.packed import CodeSet

    rng = np.random.default_rng(7)
    codes = CodeSet(capacity=4)
    model: set[int] = set()
    for round_ in range(40):
        # Codes from a small range collide often; a few huge ones exercise the hash's top bits.
        batch = np.unique(np.concatenate([rng.integers(0, 5_000, 300),
                                          rng.integers(0, 2**62, 5)])).astype(np.int64)
        held = codes.contains(batch)
        assert held.tolist() == [int(c) in model for c in batch], round_
        new = batch[~held]
        codes.add(new)
        model.update(int(c) for c in new)
        assert codes.size == len(model)
        assert 2 * codes.size <= codes.nbytes // 8  # never more than half full
    probe = np.arange(0, 6_000, dtype=np.int64)
    assert codes.contains(probe).tolist() == [int(c) in model for c in probe]


def test_constants_too_large_for_64_bits_fall_back_to_the_generic_engine(tmp_path: Path) -> None:
    """Three replicas and four offsets of LogStartOffset do not pack into one int64 code: auto
    runs the generic engine, and asking for the packed one is an error that says why."""
    cfg = tmp_path / "LogStartOffset_wide.cfg"
    cfg.write_text((SPEC / "LogStartOffset.cfg").read_text()
                   .replace("Replicas = {1, 2}", "Replicas = {1, 2, 3}")
                   .replace("MaxOffset = 2", "MaxOffset = 3"))
    spec = SPECS["LogStartOffset"].from_cfg(cfg)  # type: ignore[attr-defined]
    assert not spec.packed_available()
    run = CliRunner().invoke(main, ["check", "LogStartOffset", "--cfg", str(cfg),
                                    "--max-states", "2000"])
    assert run.exit_code == 4, run.output
    assert "generic engine" in run.stderr
    assert run.stdout.startswith("Search stopped after 2,000 distinct states")
    refused = CliRunner().invoke(main, ["check", "LogStartOffset", "--cfg", str(cfg),
                                        "--engine", "packed"])
    assert refused.exit_code == 1 and "do not fit in 64 bits" in refused.stderr
