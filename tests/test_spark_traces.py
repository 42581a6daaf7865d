"""The trace checker on Spark (``traces check --master``) gives the single-process verdicts.

One local Spark session (``local[2]``) for the module. The corpus of traces/ and a generated
corpus with planted violations and every kind of bad input are checked by both engines; their
findings and figures must be equal, and the planted faults must each be found.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from logwright.cli import main
from logwright.verify.trace_outputs import verdicts
from logwright.verify.traces import CheckReport, check_paths

pyspark = pytest.importorskip("pyspark")
pq = pytest.importorskip("pyarrow.parquet")
pa = pytest.importorskip("pyarrow")

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "traces" / "corpus"


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from logwright.verify.spark import session

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    s = session("local[2]")
    yield s
    s.stop()


def _events(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (CORPUS / name).read_text().splitlines()]


def _write(path: Path, events: list[dict[str, Any]], trace: str) -> None:
    for i, e in enumerate(events):
        e["seq"], e["trace"] = i, trace
    path.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in events))


def _planted(tmp: Path) -> dict[str, str]:
    """A corpus with one fault per trace; returns trace id -> what must be reported."""
    expect: dict[str, str] = {}
    # A recorded value the twin does not produce: a mismatch.
    events = _events("retention-and-restart.jsonl")
    append = next(e for e in events if e["action"] == "Append")
    r = str(append["args"]["replica"])
    append["changed"] = {"leo": {r: append["changed"]["leo"][r] + 5}}
    _write(tmp / "mismatch.jsonl", events, "planted-mismatch")
    expect["planted-mismatch"] = "Append: mismatch"
    # An event the model does not enable.
    events = _events("retention-and-restart.jsonl")
    first = next(i for i, e in enumerate(events) if e["action"] == "Append")
    events.insert(first, dict(events[first], action="DeleteRecords",
                              args={"replica": events[first]["args"]["replica"], "o": 3},
                              changed={"logStart": {str(events[first]["args"]["replica"]): 3}}))
    _write(tmp / "not-enabled.jsonl", events, "planted-not-enabled")
    expect["planted-not-enabled"] = "DeleteRecords: not enabled"
    # An invariant broken: a leader outside its own ISR.
    events = _events("retention-and-restart.jsonl")
    next(e for e in events if e["action"] == "BecomeLeader")["changed"] = {"isr": []}
    _write(tmp / "invariant.jsonl", events, "planted-invariant")
    expect["planted-invariant"] = "invariant: TypeOK is violated"
    # Bad input, one kind per trace, in one file beside a good trace in Parquet.
    good = _events("zombie-controller.jsonl")
    base = _events("lazy-checkpoint.jsonl")
    lines: list[str] = []
    for trace, fault in (("bad-dup", "dup"), ("bad-gap", "gap"), ("bad-start", "start"),
                         ("bad-version", "version"), ("bad-field", "field"),
                         ("bad-value", "value")):
        evs = [dict(e, trace=trace, seq=i) for i, e in enumerate(base)]
        if fault == "dup":
            evs[5]["seq"] = 4
        elif fault == "gap":
            del evs[7]
        elif fault == "start":
            del evs[0]
        elif fault == "version":
            evs[3]["v"] = 99
        elif fault == "field":
            del evs[3]["changed"]
        else:
            evs[1]["args"] = {"c": "one"}
        lines += [json.dumps(e, sort_keys=True) for e in evs]
    lines.insert(10, "not json at all")
    (tmp / "bad.jsonl").write_text("\n".join(lines) + "\n")
    expect.update({"bad-dup": "sequence number 4 twice", "bad-gap": "events missing: seq 7",
                   "bad-start": "cut short at its start", "bad-version": "schema version 99",
                   "bad-field": "the event has no 'changed'", "bad-value": "a malformed event"})
    table = pa.Table.from_pylist([dict(e, trace="good-parquet", seq=i,
                                       args=json.dumps(e["args"]),
                                       changed=json.dumps(e["changed"]))
                                  for i, e in enumerate(good)])
    pq.write_table(table, tmp / "good.parquet")
    (tmp / "cut.jsonl").write_text(json.dumps(dict(good[0], trace="cut"))[:40])
    return expect


def test_both_engines_agree_on_the_corpus(spark: Any) -> None:
    from logwright.verify.spark import check_on_spark

    single = check_paths([str(ROOT / "traces")], CheckReport(track_states=True))
    run = check_on_spark([str(ROOT / "traces")], spark=spark, progress=False)
    assert single.ok and run.report.ok
    assert verdicts(run.report) == verdicts(single)
    assert run.distinct == single.distinct_states()
    assert run.report.traces == len(list((ROOT / "traces").rglob("*.jsonl")))


def test_both_engines_find_the_planted_faults_alike(spark: Any, tmp_path: Path) -> None:
    from logwright.verify.spark import check_on_spark

    expect = _planted(tmp_path)
    single = check_paths([tmp_path], CheckReport(track_states=True))
    run = check_on_spark([str(tmp_path)], spark=spark, partitions=3, progress=False)
    assert verdicts(run.report) == verdicts(single)
    assert run.distinct == single.distinct_states()
    found = [(f.trace, f"{f.action}: {f.kind}: {f.message}") for f in run.report.failures]
    found += [(b.trace, b.reason) for b in run.report.bad_input]
    for trace, words in expect.items():
        assert any(t == trace and words in what for t, what in found), (trace, found)
    lines_alone = [b for b in run.report.bad_input if not b.trace]
    assert {b.reason.split(":")[0] for b in lines_alone} == {"not JSON"}, lines_alone
    assert len(lines_alone) == 2  # the line of no trace, the line cut in half
    # The good trace (Parquet) and the planted violations were replayed, not dropped.
    assert run.report.outcomes[("ControllerFencing", "Deliver", "stutter")] >= 1
    assert run.report.traces == 3 + 6 + 1 + 0  # the cut line names no trace it can be read of


def _spread(tmp: Path) -> dict[str, str]:
    """Traces whose lines lie in more than one file, beside traces whole in one file, and one
    file much larger than the rest; returns trace id -> what must be reported."""
    def lines(events: list[dict[str, Any]], trace: str) -> list[str]:
        return [json.dumps(dict(e, trace=trace, seq=i), sort_keys=True)
                for i, e in enumerate(events)]

    def write(name: str, rows: list[str]) -> None:
        (tmp / name).write_text("".join(r + "\n" for r in rows))

    expect: dict[str, str] = {}
    base = _events("retention-and-restart.jsonl")
    # A whole good trace cut in two files, each half beside a trace whole in its file.
    split = lines(base, "split-good")
    write("a.jsonl", split[::2] + lines(_events("zombie-controller.jsonl"), "whole-a"))
    write("b.jsonl", lines(_events("fetcher-failure.jsonl"), "whole-b") + split[1::2])
    # A violation in a trace cut in two: found once, as in one file.
    bad = [dict(e) for e in base]
    append = next(e for e in bad if e["action"] == "Append")
    r = str(append["args"]["replica"])
    append["changed"] = {"leo": {r: append["changed"]["leo"][r] + 5}}
    cut = lines(bad, "split-mismatch")
    write("c.jsonl", cut[:40])
    write("d.jsonl", cut[40:])
    expect["split-mismatch"] = "Append: mismatch"
    # Good lines in one file, a line of bad input naming the trace in another: not replayed.
    named = lines(_events("lazy-checkpoint.jsonl"), "split-named")
    wrong = json.loads(named[3])
    wrong["v"] = 99
    write("e.jsonl", named[:3] + named[4:])
    write("f.jsonl", [json.dumps(wrong, sort_keys=True),
                      *lines(_events("jbod-moves.jsonl"), "whole-f")])
    expect["split-named"] = "schema version 99"
    # A sequence number in two files: a duplicate, as in one file.
    dup = lines(_events("zombie-controller.jsonl"), "split-dup")
    write("g.jsonl", dup)
    write("h.jsonl", [dup[4]])
    expect["split-dup"] = "sequence number 4 twice"
    # Only bad lines name this trace, in two files.
    write("i.jsonl", ['{"trace": "only-bad", "v": 99}'])
    write("j.jsonl", ['{"trace": "only-bad", "v": 98}'])
    # One file far larger than the rest (checked the long way), one of whose traces has its
    # last lines in a small file.
    many = [row for k in range(12) for row in lines(base, f"big-{k}")]
    shared = lines(_events("lazy-checkpoint.jsonl"), "big-shared")
    write("k-big.jsonl", many + shared[:-5])
    write("l.jsonl", shared[-5:])
    return expect


@pytest.mark.parametrize("partitions", [1, 3, 16])
def test_both_engines_agree_on_traces_spread_over_files(spark: Any, tmp_path: Path,
                                                        partitions: int) -> None:
    """A trace is checked where its file is read only when no other file holds a line of it;
    otherwise it is gathered by trace id and checked whole: the verdicts are the single
    process's either way, whatever the number of tasks."""
    from logwright.verify.spark import check_on_spark

    expect = _spread(tmp_path)
    single = check_paths([tmp_path], CheckReport(track_states=True))
    run = check_on_spark([str(tmp_path)], spark=spark, partitions=partitions, progress=False)
    assert verdicts(run.report) == verdicts(single)
    assert run.distinct == single.distinct_states()
    assert run.report.files == single.files == 12
    found = [(f.trace, f"{f.action}: {f.kind}: {f.message}") for f in run.report.failures]
    found += [(b.trace, b.reason) for b in run.report.bad_input]
    for trace, words in expect.items():
        assert any(t == trace and words in what for t, what in found), (trace, found)
    assert {t for t, _ in found} == set(expect) | {"only-bad"}, found
    assert len([f for f in run.report.failures if f.trace == "split-mismatch"]) == 1
    # 12 + 1 in the big file, 3 whole in a small one, 4 split, 1 named only by bad lines.
    assert run.report.traces == 21


def test_the_cli_writes_the_outputs_on_spark(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    _planted(tmp_path / "in")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["traces", "check", str(tmp_path / "in"), "--master",
                                       "local[2]", "--out", str(out), "-q"])
    assert result.exit_code == 1, result.output
    assert "session started in" in result.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["engine"] == "spark" and summary["verdict"] == "failed"
    assert summary["violations"] == 3
    assert summary["bad_input"] == 9  # a seq twice leaves one missing too: two in bad-dup
    assert summary["violations_by_invariant_or_kind"] == {"TypeOK": 1, "mismatch": 1,
                                                          "not enabled": 1}
    assert summary["session_start_seconds"] >= 0 and summary["work_seconds"] > 0
    violations = pq.read_table(out / "violations.parquet").to_pylist()
    assert {v["trace"] for v in violations} == {"planted-mismatch", "planted-not-enabled",
                                                "planted-invariant"}
    assert all(v["state_before"] and v["state_after"] for v in violations)
    coverage = pq.read_table(out / "coverage.parquet").to_pylist()
    assert {"model", "action", "outcome", "events"} == set(coverage[0])
    assert any(c["outcome"] == "refused" for c in coverage)
    assert len(pq.read_table(out / "bad_input.parquet")) == 9
    assert (out / "coverage.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The single-process engine writes the same findings.
    again = tmp_path / "again"
    CliRunner().invoke(main, ["traces", "check", str(tmp_path / "in"), "--out", str(again),
                              "-q"])
    assert pq.read_table(again / "violations.parquet").equals(
        pq.read_table(out / "violations.parquet"))
    assert pq.read_table(again / "bad_input.parquet").equals(
        pq.read_table(out / "bad_input.parquet"))
    assert pq.read_table(again / "coverage.parquet").equals(
        pq.read_table(out / "coverage.parquet"))
    single = json.loads((again / "summary.json").read_text())
    assert single["engine"] == "single process"
    assert single["distinct_abstract_states"] == summary["distinct_abstract_states"]
    assert single["actions_never_exercised"] == summary["actions_never_exercised"]


def test_seeded_fuzz_runs_give_the_same_results_on_spark_and_in_processes(
        spark: Any, tmp_path: Path) -> None:
    from logwright.verify.seed_runs import run_seeds

    local = run_seeds(range(4), 12, tmp_path / "local", workers=1)
    on_spark = run_seeds(range(4), 12, tmp_path / "spark", spark=spark)
    assert on_spark.verdicts() == local.verdicts()
    assert [r.seed for r in local.results] == [0, 1, 2, 3]
    assert all(r.steps == 12 and r.trace_events > 0 for r in local.results)
    for r in local.results:  # the same seed records the same trace, byte for byte
        assert (tmp_path / "local" / r.trace).read_bytes() == \
            (tmp_path / "spark" / r.trace).read_bytes()


def test_fuzz_seeds_needs_an_out_dir_and_no_state_machine_options(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["fuzz", "--seeds", "2"])
    assert result.exit_code == 2 and "give --out DIR" in result.stderr
    result = CliRunner().invoke(main, ["fuzz", "--seeds", "2", "--max-examples", "3", "--out",
                                       str(tmp_path)])
    assert result.exit_code == 2 and "not the state machine" in result.stderr
    result = CliRunner().invoke(main, ["fuzz", "--master", "local[1]"])
    assert result.exit_code == 2 and "go with --seeds" in result.stderr
