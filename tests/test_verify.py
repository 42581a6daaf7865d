"""``logwright verify``: the storage campaign finds planted bugs, and the command line behaves."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from logwright.cli import main
from logwright.verify import core
from logwright.verify.core import (
    EXIT_MISSED,
    EXIT_OK,
    EXIT_TOOL_ERROR,
    EXIT_UNDECIDED,
    EXIT_VIOLATED,
    Progress,
    Row,
    Verdict,
    exit_code,
    render_json,
    render_table,
    run_suites,
    summary,
)
from logwright.verify.formal import load_z3_module, z3_rows
from logwright.verify.storage_campaign import run_campaign


def test_a_small_campaign_holds_and_counts_its_work() -> None:
    result = run_campaign(first_seed=0, seeds=1, steps=8, after=2)
    assert result.violation is None, result.where
    assert result.crash_points > 20 and result.checks > result.crash_points


def test_the_campaign_catches_kafkas_periodic_start_offset_checkpoint() -> None:
    """hazard 12: with Kafka's behaviour an acknowledged DeleteRecords comes back."""
    result = run_campaign(seeds=1, first_seed=3, steps=16, bug="PeriodicStartOffsetCheckpoint")
    assert result.violation is not None
    assert result.violation.invariant == "NeverServeBelowLogStart"
    # The LogStartOffset twin is the oracle: its start offset fell below the acknowledged one.
    assert "LogStartOffset refinement" in str(result.violation)
    assert "invariant NeverServeBelowLogStart is violated" in str(result.violation)


def test_a_failing_suite_becomes_an_error_row_and_the_rest_run() -> None:
    def broken() -> list[Row]:
        raise RuntimeError("boom")

    def fine() -> list[Row]:
        return [Row("X", "m", Verdict.HOLDS, 1)]

    rows = run_suites([("broken", broken), ("fine", fine)])
    assert [r.verdict for r in rows] == [Verdict.ERROR, Verdict.HOLDS]
    assert '"failed": true' in render_json(rows)


def test_cli_lists_suites_and_rejects_unknown_ones() -> None:
    runner = CliRunner()
    listed = runner.invoke(main, ["verify", "--list"])
    assert listed.exit_code == 0 and "storage crash campaign" in listed.output
    assert [line.split()[0] for line in listed.output.splitlines()] == [
        "storage", "formal", "agreement", "traces"]
    bad = runner.invoke(main, ["verify", "--suite", "nope"])
    assert bad.exit_code == 2 and "unknown suite" in bad.output
    helped = runner.invoke(main, ["verify", "--help"]).output
    assert "invariant" in helped
    for code, word in ((1, "VIOLATED"), (2, "usage"), (3, "MISSED"), (4, "UNDECIDED"),
                       (5, "ERROR")):
        assert re.search(rf"^\s+{code}\s+.*{word}", helped, re.M), (code, helped)


# --- verdicts, exit codes, the summary, progress and the table at 80 columns ---------------------

def _row(verdict: Verdict, name: str = "Inv") -> Row:
    return Row(name, "m", verdict, 1)


@pytest.mark.parametrize(("verdicts", "code"), [
    ([], EXIT_OK),
    ([Verdict.HOLDS, Verdict.CAUGHT, Verdict.SKIPPED], EXIT_OK),
    ([Verdict.HOLDS, Verdict.VIOLATED], EXIT_VIOLATED),
    ([Verdict.CAUGHT, Verdict.MISSED], EXIT_MISSED),
    ([Verdict.HOLDS, Verdict.UNDECIDED], EXIT_UNDECIDED),
    ([Verdict.ERROR, Verdict.HOLDS], EXIT_TOOL_ERROR),
    # the most severe wins: 1 > 3 > 5 > 4
    ([Verdict.UNDECIDED, Verdict.ERROR, Verdict.MISSED, Verdict.VIOLATED], EXIT_VIOLATED),
    ([Verdict.UNDECIDED, Verdict.ERROR, Verdict.MISSED], EXIT_MISSED),
    ([Verdict.UNDECIDED, Verdict.ERROR], EXIT_TOOL_ERROR),
])
def test_exit_code_is_the_most_severe_verdicts(verdicts: list[Verdict], code: int) -> None:
    assert exit_code([_row(v) for v in verdicts]) == code
    assert exit_code([_row(v) for v in reversed(verdicts)]) == code
    assert (EXIT_OK, EXIT_VIOLATED, EXIT_MISSED, EXIT_UNDECIDED, EXIT_TOOL_ERROR) == (0, 1, 3, 4, 5)


def test_the_summary_counts_every_verdict_and_names_what_failed_or_is_undecided() -> None:
    rows = [_row(Verdict.HOLDS), _row(Verdict.HOLDS), _row(Verdict.CAUGHT),
            _row(Verdict.SKIPPED), Row("A", "z3 BMC (X, bug Y)", Verdict.MISSED),
            Row("B", "z3 spacer (CHC) (X)", Verdict.UNDECIDED), Row("C", "TLC", Verdict.ERROR)]
    line = summary(rows)
    assert line.startswith("2 hold, 1 caught, 2 failed, 1 undecided, 1 skipped: ")
    assert "A [z3 BMC (X, bug Y)] MISSED" in line and "C [TLC] ERROR" in line
    assert "B [z3 spacer (CHC) (X)] UNDECIDED" in line
    assert summary(rows[:3]) == "2 hold, 1 caught, 0 failed, 0 undecided, 0 skipped"
    assert '"exit_code": 3' in render_json(rows) and '"summary": "2 hold' in render_json(rows)


def test_progress_reports_each_check_as_it_starts_and_ends_even_when_one_crashes() -> None:
    out = io.StringIO()

    def crashing() -> list[Row]:
        return core.run_check("inner crash", lambda: 1 // 0 and [])  # type: ignore[func-returns-value]

    def fine() -> list[Row]:
        return core.run_check("inner fine", lambda: [_row(Verdict.HOLDS), _row(Verdict.CAUGHT)])

    rows = run_suites([("a", crashing), ("b", fine)], progress=Progress(out))
    assert [r.verdict for r in rows] == [Verdict.ERROR, Verdict.HOLDS, Verdict.CAUGHT]
    assert "ZeroDivisionError" in rows[0].detail
    lines = out.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "[start] suite a", "[start] inner crash", "[ end ] inner crash", "[ end ] suite a",
        "[start] suite b", "[start] inner fine", "[ end ] inner fine", "[ end ] suite b"]
    assert re.fullmatch(r"\[ end \] inner fine: 1 holds, 1 caught \(\d+\.\ds\)", lines[6])
    assert "1 ERROR" in lines[2]


def test_the_table_fits_80_columns_with_details_below_it() -> None:
    detail = "violated after 9 steps, rlimit 27,406,666 of 150,000,000; last step: " + "x" * 150
    rows = [Row("NoNewDataDeleted, NeverServeBelowLogStart", "python checker (LogStartOffset.cfg)",
                Verdict.HOLDS, 457_212, 0.8, "depth 23, = TLC figures"),
            Row("NeverServeBelowLogStart",
                "z3 BMC (LogStartOffset, bug FollowerRaisesStartBeforeHW)", Verdict.UNDECIDED,
                1, 12.4, detail),
            Row("NeverServeBelowLogStart", "crash campaign, bug PeriodicStartOffsetCheckpoint "
                "(Kafka's)", Verdict.CAUGHT, 34_311, 15.5, "seed 3"),
            Row("AtomicMoveSwap", "storage crash campaign", Verdict.VIOLATED, 1_234_567, 123.4)]
    out = io.StringIO()
    render_table(rows, Console(file=out, width=80, force_terminal=False))
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80, "\n".join(lines)
    text = out.getvalue()
    for word in ("NeverServeBelowLogStart", "FollowerRaisesStartBeforeHW)", "UNDECIDED",
                 "PeriodicStartOffsetCheckpoint", "1.2M", "123s", "12.4s", "457,212"):
        assert word in text, (word, text)  # whole, not folded across lines
    notes = [line for line in lines if re.match(r"\s*\d+\. ", line)]
    assert [n.split(".")[0].strip() for n in notes] == ["1", "2", "3"]
    assert "x" * 150 not in text and text.count("x") >= 150  # the long detail wrapped


def test_a_proof_out_of_its_resource_limit_is_undecided_the_same_every_time() -> None:
    """A tiny rlimit on real proofs: UNDECIDED (exit 4), never a proof, a bug or a crash."""
    for _ in range(2):
        rows = z3_rows("ControllerFencing", rlimit=2_000)
        assert rows and all(r.verdict is Verdict.UNDECIDED for r in rows), rows
        assert all("undecided" in r.detail and "rlimit 2,0" in r.detail for r in rows), rows
        assert exit_code(rows) == EXIT_UNDECIDED
    # the same proofs with their default limits decide
    assert {r.verdict for r in z3_rows("ControllerFencing")} == {Verdict.HOLDS, Verdict.CAUGHT}


def test_induction_and_bmc_out_of_their_resource_limit_are_undecided() -> None:
    z3_module = load_z3_module("StrayCleanup")
    assert z3_module is not None
    proof = z3_module.prove("none", rlimit=5_000)[0]
    assert not proof.holds and proof.undecided and "rlimit 5,000" in proof.detail
    refuted = z3_module.prove("NoAgeGuard", rlimit=5_000)[0]
    assert not refuted.holds and refuted.undecided and not refuted.counterexample
    decided = z3_module.prove("NoAgeGuard")[0]
    assert not decided.holds and not decided.undecided and decided.counterexample


def test_verify_in_a_pipe_prints_progress_the_table_and_the_summary() -> None:
    env = {k: v for k, v in os.environ.items() if k != "TLA2TOOLS_JAR"}
    env["COLUMNS"] = "80"
    done = subprocess.run([sys.executable, "-m", "logwright.cli", "verify", "--suite", "formal",
                           "--module", "ControllerFencing"],
                          capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    progress = done.stderr.splitlines()
    assert progress[0] == "[start] suite formal"
    # One module (the quickest): every module's rows run under make verify, not here.
    assert "[start] ControllerFencing: z3" in progress
    assert progress.index("[start] ControllerFencing: z3") < next(
        i for i, line in enumerate(progress) if line.startswith("[ end ] ControllerFencing: z3"))
    assert re.fullmatch(r"\[ end \] suite formal: \d+ holds, \d+ caught, 1 skipped \(\d+\.\ds\)",
                        progress[-1])
    assert not any("LogStartOffset" in line for line in progress), "only the module asked"
    out = done.stdout.splitlines()
    assert max(len(line) for line in out) <= 80
    assert re.fullmatch(r"\d+ hold, \d+ caught, 0 failed, 0 undecided, 1 skipped", out[-1])


def test_verify_refuses_an_unknown_module() -> None:
    done = subprocess.run([sys.executable, "-m", "logwright.cli", "verify", "--module", "Nope"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "unknown module(s): Nope" in done.stderr, done.stderr


def test_an_undecided_spacer_proof_is_reported_with_no_bounded_search_after_it() -> None:
    """Regression: a Spacer proof that ran out of its (then wall-clock) limit was followed by a
    16-step BMC that ran for 10 more minutes. Now it is UNDECIDED at once, and verify proves
    NeverServeBelowLogStart by induction, not by Spacer."""
    rows = z3_rows("ControllerFencing", rlimit=2_000)
    proof = rows[0]
    assert proof.method == "z3 spacer (CHC) (ControllerFencing)", proof.method
    assert proof.verdict is Verdict.UNDECIDED and "BMC" not in proof.detail
    lso = load_z3_module("LogStartOffset")
    assert lso is not None
    proofs = lso.prove("none")
    assert [(p.invariant, p.method, p.holds) for p in proofs] == [
        ("NoNewDataDeleted", "z3 induction", True),
        ("NeverServeBelowLogStart", "z3 induction", True),
        ("CommittedDataOnIsr", "z3 induction", True)]


def test_the_traces_suite_skips_without_pyspark_and_its_planted_fault_is_refused(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The suite ``traces`` says what to install when pyspark is missing (one skipped row), and
    the mismatch it plants is one the checker refuses (the row that must say caught)."""
    from logwright.verify import trace_suite
    from logwright.verify.traces import check_paths

    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark now raises ImportError
    [row] = trace_suite.trace_suite()
    assert row.verdict == Verdict.SKIPPED and "pip install 'logwright[spark]'" in row.detail
    source = Path(__file__).resolve().parents[1] / "traces" / "corpus" / "demo.jsonl"
    trace_suite.plant_mismatch(source, tmp_path / "planted.jsonl")
    report = check_paths([tmp_path / "planted.jsonl"])
    assert [f.kind for f in report.failures] == ["mismatch"]
    assert report.failures[0].action == "Append" and report.failures[0].trace == "planted-mismatch"
