"""``logwright verify``: the storage campaign finds planted bugs, and the command line behaves."""

from __future__ import annotations

from click.testing import CliRunner

from logwright.cli import main
from logwright.verify.core import Row, Verdict, render_json, run_suites
from logwright.verify.storage_campaign import run_campaign


def test_a_small_campaign_holds_and_counts_its_work() -> None:
    result = run_campaign(seeds=1, steps=8, after=2)
    assert result.violation is None, result.where
    assert result.crash_points > 20 and result.checks > result.crash_points


def test_the_campaign_catches_kafkas_periodic_start_offset_checkpoint() -> None:
    """HAZARDS 12: with Kafka's behaviour an acknowledged DeleteRecords comes back."""
    result = run_campaign(seeds=1, first_seed=3, steps=16, bug="PeriodicStartOffsetCheckpoint")
    assert result.violation is not None
    assert result.violation.invariant == "NeverServeBelowLogStart"
    assert "went back" in str(result.violation)


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
    bad = runner.invoke(main, ["verify", "--suite", "nope"])
    assert bad.exit_code == 2 and "unknown suite" in bad.output
    assert "invariant" in runner.invoke(main, ["verify", "--help"]).output
