"""ReplicaMove's trace events (traces/SCHEMA.md, "ReplicaMove") and their replay by
``logwright traces check`` against the twin (logwright.verify.traces).

A move's events are emitted by the log manager and the dir-move fetcher where they act; the
checker replays each as a path of twin steps that must contain the event's own action, from the
state so far to the recorded one, with AtomicMoveSwap after it. Shown here: every case generated
from the model, driven through the code with a recorder, replays clean and together they take
every action the code performs; the corpus's JBOD trace replays clean; a trace tampered the ways
a broken swap or copier would write it is refused, naming the event; a planted fault in the swap
is refused from its own trace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from mutation.catalogue import ROOT, by_name
from mutation.catalogue import apply as plant

from logwright.conformance import model_based_move as mv
from logwright.verify.traces import check_paths
from logwright.world.trace import open_trace

SEED = 20261123
CORPUS = ROOT / "traces" / "corpus" / "jbod-moves.jsonl"


def _record(case: mv.Case, path: Path, seed: int = SEED) -> None:
    driver = mv.MoveDriver(seed)
    recorder = open_trace(path, driver.clock, "generated")
    driver = mv.MoveDriver(seed, trace=recorder)
    try:
        for move in case.moves:
            driver.apply(move)
    finally:
        driver.close()
        recorder.close()


def test_every_generated_case_recorded_replays_clean(tmp_path: Path) -> None:
    actions: Counter[str] = Counter()
    cases = list(mv.generated_cases(SEED))
    for i, case in enumerate(cases):
        path = tmp_path / f"{i}.jsonl"
        _record(case, path)
        report = check_paths([path])
        assert report.ok, (case.id, report.failures[0].format())
        actions.update(report.actions)
    assert {a.removeprefix("ReplicaMove.") for a in actions if a.startswith("ReplicaMove.")} == {
        "Copy", "Flush", "FollowStart", "TruncateSource", "BeginSwap", "RenameFutureLive",
        "FsyncDir", "RenameSourceDelete", "EndSwap", "FailDir"}


def _events() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CORPUS.read_text().splitlines()]


def _check(events: list[dict[str, Any]], tmp_path: Path) -> Any:
    for i, e in enumerate(events):  # numbered again in list order: a whole trace
        e["seq"] = i
    path = tmp_path / "tampered.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return check_paths([path])


def _moves(events: list[dict[str, Any]], action: str) -> list[int]:
    return [i for i, e in enumerate(events) if e["model"] == "ReplicaMove"
            and e["action"] == action]


def test_the_corpus_move_trace_replays_clean(tmp_path: Path) -> None:
    report = _check(_events(), tmp_path)
    assert report.ok
    assert report.actions["ReplicaMove.EndSwap"] == 2
    assert report.actions["ReplicaMove.FailDir"] == 1


def test_a_copy_read_elsewhere_than_the_future_logs_end_is_misplaced(tmp_path: Path) -> None:
    """KAFKA-9087's symptom, as a trace would show it: the copier read at another offset."""
    events = _events()
    i = _moves(events, "Copy")[3]
    events[i]["args"]["offset"] += 1
    report = _check(events, tmp_path)
    assert [(f.action, f.kind) for f in report.failures] == [("Copy", "invariant")]
    assert "AtomicMoveSwap" in report.failures[0].message


def test_a_rename_before_the_future_log_is_fsynced_is_refused(tmp_path: Path) -> None:
    """The swap's S2 missing: the future log's fsync is not recorded before S3."""
    events = _events()
    rename = _moves(events, "RenameFutureLive")[0]
    flush = max(i for i in _moves(events, "Flush") if i < rename)
    assert events[flush]["args"]["l"] == "fut" and events[flush]["changed"].get("dur")
    moved = events[flush]["changed"].pop("dur")
    events[rename + 1]["changed"]["dur"] = moved  # fsynced only after the rename
    report = _check(events, tmp_path)
    assert [(f.action, f.kind) for f in report.failures] == [("RenameFutureLive",
                                                                "not enabled")]


def test_an_append_to_the_source_during_the_swap_is_refused(tmp_path: Path) -> None:
    events = _events()
    rename = _moves(events, "RenameFutureLive")[0]
    vol = events[rename - 1]["changed"].get("vol") or {}
    src = next(e["changed"]["vol"]["src"] for e in reversed(events[:rename])
               if e["model"] == "ReplicaMove" and e["instance"] == events[rename]["instance"]
               and "vol" in e["changed"])
    events[rename]["changed"]["vol"] = {**vol, "src": src + 1, "fut": src}
    report = _check(events, tmp_path)
    assert [f.action for f in report.failures] == ["RenameFutureLive"]


def test_an_event_naming_another_action_than_its_change_is_a_mismatch(tmp_path: Path) -> None:
    events = _events()
    i = _moves(events, "RenameSourceDelete")[0]
    events[i]["action"] = "RenameFutureLive"
    report = _check(events, tmp_path)
    assert [(f.action, f.kind) for f in report.failures] == [("RenameFutureLive", "mismatch")]
    assert "RenameSourceDelete" in report.failures[0].message


def test_a_planted_swap_fault_is_refused_from_its_own_trace(tmp_path: Path) -> None:
    """The catalogue's 'rename before the future is flushed' planted in a copy of the package:
    the corpus's JBOD scenario recorded there fails the check at the rename."""
    (tmp_path / "impl").mkdir()
    import shutil
    shutil.copytree(ROOT / "impl", tmp_path / "impl", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copytree(ROOT / "traces", tmp_path / "traces",
                    ignore=shutil.ignore_patterns("__pycache__"))
    plant(by_name("rename before the future is flushed"), tmp_path)
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, "traces")
        from pathlib import Path
        import logwright
        assert logwright.__file__.startswith({str(tmp_path)!r})
        import generate_corpus
        from logwright.verify.traces import check_paths
        generate_corpus.jbod_moves(Path("run.jsonl"))
        report = check_paths(["run.jsonl"])
        print(sorted({{(f.model, f.action, f.kind) for f in report.failures}}))
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(tmp_path / "impl")})
    assert out.returncode == 0, out.stderr[-3000:]
    assert "('ReplicaMove', 'RenameFutureLive', 'not enabled')" in out.stdout


@pytest.mark.parametrize("version", [2, 3])
def test_versions_2_and_3_are_read(version: int, tmp_path: Path) -> None:
    """A version 2 trace is a version 3 trace without moves: still read."""
    events = [e for e in _events() if e["model"] != "ReplicaMove"]
    for e in events:
        e["v"] = version
    assert _check(events, tmp_path).ok


def test_a_swap_whose_moved_log_begins_above_the_source_s_first_segment_is_recorded(
        tmp_path: Path) -> None:
    """The future log begins at the source's start offset (or the base of the batch holding
    it), so after the swap the replica's first segment is above the source's: the swap records
    LogStartOffset's DeleteOldestSegment for it. Without it the replica's next event recorded
    the first segment's change as its own, which its action does not make (``fuzz --seeds 120
    --steps 80``, seeds 72 and 75)."""
    from logwright import Cluster
    from logwright.identity import TopicPartition

    path = tmp_path / "moved.jsonl"
    c = Cluster.simulated(brokers=3, log_dirs_per_broker=2, seed=5, trace=str(path))
    c.create_topic("m", 1, 3)
    for _ in range(3):
        c.produce("m", 0, [b"a", b"b"])
    c.delete_records({("m", 0): 3})
    c.advance_time(1_000)
    tp = TopicPartition("m", 0)
    b = next(r for r in c.partition_state("m", 0).replicas
             if r != c.partition_state("m", 0).leader)
    lm = c.broker(b).log_manager
    here = lm.dir_of(tp)
    assert here is not None and here.logs[tp].segments[0].base_offset == 0
    c.alter_replica_log_dirs({("m", 0, b): next(d for d in sorted(lm.dirs) if d != here.path)})
    c.advance_time(5_000)
    moved = lm.dir_of(tp)
    assert moved is not None and moved.path != here.path
    assert 0 < moved.logs[tp].segments[0].base_offset <= moved.logs[tp].log_start_offset == 3
    c.produce("m", 0, [b"c"])
    c.advance_time(1_000)
    c.close()
    report = check_paths([path])
    assert report.ok, report.failures[0].format()
    swapped = [e for e in map(json.loads, path.read_text().splitlines())
               if e["action"] == "DeleteOldestSegment" and e["node"] == f"broker-{b}"]
    assert [(e["args"]["segments"], e["changed"]) for e in swapped] == [
        ([moved.logs[tp].segments[0].base_offset],
         {"segStart": {str(b): moved.logs[tp].segments[0].base_offset}})]
