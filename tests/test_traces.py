"""Recorded traces (traces/SCHEMA.md) and ``logwright traces check``."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from logwright.broker import BrokerConfig
from logwright.cli import main
from logwright.cluster import Cluster
from logwright.errors import LogwrightError
from logwright.identity import TopicPartition
from logwright.verify.traces import _LSO_VARS, CheckReport, check_paths, fingerprint
from logwright.world import Fault
from logwright.world.trace import NO_TRACE

CORPUS = Path(__file__).resolve().parent.parent / "traces" / "corpus"


def _check(*paths: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["traces", "check", *map(str, paths)])
    return result.exit_code, result.output


def _events(name: str) -> list[dict[str, object]]:
    lines = (CORPUS / name).read_text().splitlines()
    return [json.loads(line) for line in lines]


def _write(tmp_path: Path, events: list[dict[str, object]]) -> Path:
    """A tampered trace, its events numbered again in list order (in place): a whole trace."""
    for i, e in enumerate(events):
        e["seq"] = i
    path = tmp_path / "tampered.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_the_corpus_checks() -> None:
    code, out = _check(CORPUS)
    assert code == 0, out
    assert "7 trace(s)" in out and ": ok" in out
    steps = {line.split()[2] for line in out.splitlines() if line.startswith("  step ")}
    stutters = {line.split()[2] for line in out.splitlines() if line.startswith("  stutter ")}
    # Every action of the three models that the implementation performs today, as a step the
    # twin took (AcknowledgeDeleteRecords has no request yet; FetchRequest is part of FetchOk
    # and FetchFenced events; Lose needs no event, the request set only grows).
    assert steps >= {f"LogStartOffset.{a}" for a in (
        "Append", "FollowerFetch", "AdvanceHW", "ShrinkIsr", "ExpandIsr", "DeleteRecords",
        "DeleteOldestSegment", "CheckpointStartOffset", "CrashRestart", "ElectLeader",
        "Flush")}
    assert steps >= {f"ControllerFencing.{a}" for a in (
        "ElectController", "ElectLeader", "Register", "SendLeaderAndIsr", "SendStopReplica",
        "Deliver")}
    assert steps >= {f"FetcherFailure.{a}" for a in (
        "ElectLeader", "LeaderAndIsr", "FetchOk", "FetchFenced", "StorageError", "StopReplica",
        "ShutdownIdle")}
    # A JBOD move's every step the code takes on healthy dirs, and a dir failing under one
    # (TruncateSource, a follower's divergence during a move, is driven by
    # tests/test_model_based_move.py and checked from a trace by tests/test_trace_moves.py).
    assert steps >= {f"ReplicaMove.{a}" for a in (
        "Copy", "Flush", "FollowStart", "BeginSwap", "RenameFutureLive", "FsyncDir",
        "RenameSourceDelete", "EndSwap", "FailDir")}
    # The zombie controller's resent LeaderAndIsr, rejected as the model fences it, and its
    # store write, refused as the model's conditional write is.
    assert {"ControllerFencing.Deliver(reject)",
            "ControllerFencing.ElectLeader(refused)"} <= stutters


def test_the_checked_in_corpus_is_what_the_generator_writes_today(tmp_path: Path) -> None:
    """traces/generate_corpus.py reproduces traces/corpus/ byte for byte: a change of what the
    implementation records is a change of the corpus, in the same commit."""
    out = subprocess.run([sys.executable, str(CORPUS / ".." / "generate_corpus.py"),
                          str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    written = sorted(p.name for p in tmp_path.glob("*.jsonl"))
    assert written == sorted(p.name for p in CORPUS.glob("*.jsonl"))
    for name in written:
        assert (tmp_path / name).read_bytes() == (CORPUS / name).read_bytes(), (
            f"traces/corpus/{name} differs from what traces/generate_corpus.py writes now")


def test_a_run_records_the_same_trace_for_the_same_seed(tmp_path: Path) -> None:
    def run(path: Path) -> str:
        c = Cluster.simulated(seed=5, trace=path)
        c.create_topic("t", 1, 3)
        c.produce("t", 0, [b"a", b"b"])
        c.crash_broker(c.partition_state("t", 0).leader)
        c.advance_time(3_000)
        c.produce("t", 0, [b"c"])
        c.close()
        return path.read_text()

    first, second = run(tmp_path / "a.jsonl"), run(tmp_path / "b.jsonl")
    assert first == second
    code, out = _check(tmp_path / "a.jsonl")
    assert code == 0, out
    assert "LogStartOffset.ElectLeader" in out  # the failover is a step of the model


def test_recording_is_off_by_default() -> None:
    c = Cluster.simulated(seed=1)
    assert c.trace is NO_TRACE and not c.trace.enabled
    assert all(b.trace is NO_TRACE for b in c.brokers.values())
    c.close()


def test_a_recorded_value_the_twin_does_not_produce_is_a_mismatch(tmp_path: Path) -> None:
    events = _events("retention-and-restart.jsonl")
    append = next(e for e in events if e["action"] == "Append")
    changed = append["changed"]
    assert isinstance(changed, dict)
    leo = changed["leo"]
    r = next(iter(leo))
    leo[r] += 1
    code, out = _check(_write(tmp_path, events))
    assert code == 1
    assert f"(seq {append['seq']}) LogStartOffset r-0 Append: mismatch" in out
    assert "state before:" in out and "state after:" in out
    assert "tampered.jsonl:" in out


def test_an_event_the_model_does_not_enable_is_refused(tmp_path: Path) -> None:
    events = _events("retention-and-restart.jsonl")
    first = next(i for i, e in enumerate(events) if e["action"] == "Append")
    bogus = dict(events[first], action="DeleteRecords",
                 args={"replica": events[first]["args"]["replica"], "o": 3},  # type: ignore
                 changed={"logStart": {str(events[first]["args"]["replica"]): 3}})  # type: ignore
    events.insert(first, bogus)
    code, out = _check(_write(tmp_path, events))
    assert code == 1
    assert f"(seq {first}) LogStartOffset r-0 DeleteRecords: not enabled" in out


def test_an_election_with_another_epoch_start_is_a_mismatch(tmp_path: Path) -> None:
    """The demo's failover is the model's ElectLeader; its leader epoch's start offset must be
    the new leader's LEO."""
    events = _events("demo.jsonl")
    first_leader = {e["instance"]: e["args"]["leader"] for e in events  # type: ignore
                    if e["action"] == "Init"}
    elect = next(e for e in events if e["action"] == "BecomeLeader"
                 and e["args"]["leader"] != first_leader[e["instance"]])  # type: ignore
    code, out = _check(_write(tmp_path, events))
    assert code == 0 and "LogStartOffset.ElectLeader" in out, out
    changed = elect["changed"]
    assert isinstance(changed, dict)
    changed["epochStart"] += 1
    code, out = _check(_write(tmp_path, events))
    assert code == 1
    assert f"(seq {elect['seq']}) LogStartOffset {elect['instance']} BecomeLeader: mismatch" in out


def test_a_flush_beyond_the_log_end_is_refused(tmp_path: Path) -> None:
    events = _events("retention-and-restart.jsonl")
    flush = next(e for e in events if e["action"] == "Flush")
    changed = flush["changed"]
    assert isinstance(changed, dict)
    r = next(iter(changed["flushed"]))
    changed["flushed"][r] += 1
    code, out = _check(_write(tmp_path, events))
    assert code == 1 and f"(seq {flush['seq']}) LogStartOffset r-0 Flush: not enabled" in out


def test_a_restart_that_lost_flushed_records_is_refused(tmp_path: Path) -> None:
    """A restart may lose what was not flushed, never what was: the follower's log flushed to
    its end just before its crash, then restarted one record short."""
    events = _events("retention-and-restart.jsonl")
    k = next(i for i, e in enumerate(events) if e["action"] == "CrashRestart")
    crash = events[k]
    r = str(crash["args"]["replica"])  # type: ignore
    leo = next(e["changed"]["leo"][r] for e in reversed(events[:k])  # type: ignore
               if e["instance"] == "r-0" and r in e["changed"].get("leo", {}))  # type: ignore
    flush = dict(crash, action="Flush", args={"replica": int(r)},
                 changed={"flushed": {r: leo}})
    events.insert(k, flush)
    code, out = _check(_write(tmp_path, events))
    assert code == 0, out  # a flush to the log end, then a restart that kept the log
    crash["changed"] = {"leo": {r: leo - 1}, "flushed": {r: leo - 1}}
    code, out = _check(_write(tmp_path, events))
    assert code == 1
    assert f"(seq {crash['seq']}) LogStartOffset r-0 CrashRestart: not enabled" in out


def test_a_delivery_of_a_request_never_sent_is_refused(tmp_path: Path) -> None:
    events = _events("zombie-controller.jsonl")
    deliver = next(e for e in events if e["action"] == "Deliver")
    args = deliver["args"]
    assert isinstance(args, dict)
    args["c"] = 99  # a request no controller sent
    code, out = _check(_write(tmp_path, events))
    assert code == 1 and "Deliver: not enabled" in out and "no such request was sent" in out


def test_a_stale_request_accepted_is_refused(tmp_path: Path) -> None:
    events = _events("zombie-controller.jsonl")
    reject = next(e for e in events if e["args"].get("outcome") == "reject")  # type: ignore
    args = reject["args"]
    assert isinstance(args, dict)
    b = str(args["b"])
    args["outcome"] = "accept"
    reject["changed"] = {"brokerControllerEpoch": {b: args["c"]}, "replicaEpoch": {b: 0}}
    code, out = _check(_write(tmp_path, events))
    assert code == 1
    assert f"(seq {reject['seq']}) ControllerFencing y-0 Deliver: not enabled" in out
    assert "which the model fences" in out


def test_a_broker_controller_epoch_going_down_is_refused(tmp_path: Path) -> None:
    events = _events("zombie-controller.jsonl")
    seen = [e for e in events if e["action"] == "ControllerEpochSeen"
            and e["args"]["c"] == 2 and e["args"]["type"] == "UpdateMetadata"]  # type: ignore
    late = seen[-1]
    args, changed = late["args"], late["changed"]
    assert isinstance(args, dict) and isinstance(changed, dict)
    args["c"] = 1  # an UpdateMetadata of the deposed controller, applied
    changed["brokerControllerEpoch"] = {str(args["b"]): 1}
    code, out = _check(_write(tmp_path, events))
    assert code == 1
    assert "ControllerEpochSeen: not enabled" in out and "StaleControllerFenced" in out


def test_a_broken_invariant_is_reported_with_its_name(tmp_path: Path) -> None:
    events = _events("retention-and-restart.jsonl")
    leader = next(e for e in events if e["action"] == "BecomeLeader")
    leader["changed"] = {"isr": []}  # a leader outside its own ISR
    code, out = _check(_write(tmp_path, events))
    assert code == 1
    assert "BecomeLeader: invariant: TypeOK is violated after this step" in out


def _line(**fields: object) -> str:
    event: dict[str, object] = {"v": 3, "trace": "bad", "seq": 0, "model": "-", "instance": "-",
                                "action": "Header", "args": {}, "changed": {}}
    event.update(fields)
    return json.dumps({k: v for k, v in event.items() if v is not None}) + "\n"


def _deep(depth: int, **fields: object) -> str:
    """A line whose ``args.x`` is arrays nested ``depth`` deep (written out: the encoder itself
    stops at the interpreter's recursion limit)."""
    return _line(args={"x": "@"}, **fields).replace('"@"', "[" * depth + "]" * depth)


DEEP = "nested deeper than 64 levels"


@pytest.mark.parametrize(("text", "trace", "reason"), [
    ("not json\n", "", "not JSON: Expecting value"),
    (_deep(70), "bad", DEEP),
    (_deep(1000), "bad", DEEP),  # the standard library's decoder alone raised RecursionError
    (_deep(5000), "", DEEP),  # no decoder reads it: the trace it names is not known
    (_line(args=json.dumps({"x": "@"})).replace('\\"@\\"', "[" * 70 + "]" * 70), "bad",
     "'args' is not JSON of this schema: " + DEEP),
    ('{"v": 3, "trace": "bad", "seq": 0, "model": "-", "instance": "-", "action": "Hea',
     "", "not JSON: Unterminated string"),  # a line cut in half: a trace cut short
    ("[1]\n", "", "not a JSON object but list"),
    (_line(v=99), "bad", "schema version 99 is not read (versions read: 2, 3"),
    (_line(v=1), "bad", "schema version 1 is not read"),
    (_line(seq=None), "bad", "the event has no 'seq'"),
    (_line(trace=None), "", "the event has no 'trace'"),
    (_line(changed=None), "bad", "the event has no 'changed'"),
    (_line(args="{"), "bad", "'args' is not JSON"),
    (_line(seq="0"), "bad", "'seq' is not a sequence number: '0'"),
    (_line() + _line(seq=1, action="Init", instance="t-0"), "bad",
     "a malformed event (KeyError: 'replicas')"),
    (_line() + _line(seq=0), "bad", "sequence number 0 twice"),
    (_line() + _line(seq=3), "bad", "events missing: seq 1 to 2 (a line lost or unreadable)"),
    (_line(seq=1, action="Init"), "bad", "cut short at its start: the first event is seq 1 "
     "Init, not the Header at seq 0"),
])
def test_bad_input_is_reported_per_trace_and_the_rest_checked(
        tmp_path: Path, text: str, trace: str, reason: str) -> None:
    """Each kind of bad input is reported with its reason (and its trace, when the line names
    one), never a crash, never dropped; the good traces beside it are checked in full."""
    (tmp_path / "bad.jsonl").write_text(text)
    (tmp_path / "good.jsonl").write_text((CORPUS / "zombie-controller.jsonl").read_text())
    result = CliRunner().invoke(main, ["traces", "check", str(tmp_path)])
    assert result.exit_code == 1, result.output
    bad = [line for line in result.stdout.splitlines() if line.startswith("bad input: ")]
    assert bad and all(str(tmp_path / "bad.jsonl") in line for line in bad), result.stdout
    assert any(reason in line and (f" trace {trace}:" in line if trace else " trace " not in line)
               for line in bad), bad
    assert "ControllerFencing.Deliver(reject)" in result.stdout, "the good trace was checked"
    assert "2 trace(s) in 2 file(s)" in result.stdout or "1 trace(s) in 2 file(s)" in \
        result.stdout
    assert result.stderr.startswith("error: bad input in ") and result.stderr.count("\n") == 1


def test_a_directory_without_traces_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["traces", "check", str(tmp_path)])
    assert result.exit_code == 1 and "no trace" in result.stderr


def test_a_parquet_trace_checks_like_its_json_lines(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    path = tmp_path / "run.parquet"
    c = Cluster.simulated(seed=3, trace=path)
    c.create_topic("p", 1, 2)
    c.produce("p", 0, [b"x"])
    c.close()
    code, out = _check(path)
    assert code == 0 and "LogStartOffset.Append" in out


def test_no_path_is_a_usage_error() -> None:
    code, _ = _check()
    assert code == 2


def _faulty_run(seed: int, path: Path) -> None:
    """A seeded run with crashes (power loss or not), restarts, failovers (zombie or not),
    network partitions, message drops and duplicates."""
    rng = random.Random(seed)
    c = Cluster.simulated(seed=seed, drop_rate=0.03, duplicate_rate=0.03, trace=path)

    def attempt(fn: Callable[..., object], *args: object, **kwargs: object) -> None:
        try:
            fn(*args, **kwargs)
        except LogwrightError:
            pass  # a refused produce or a timeout is part of a faulty run

    attempt(c.create_topic, "t", 2, 3)
    for step in range(25):
        op = rng.randrange(9)
        live = [b for b in (1, 2, 3) if c.brokers[b].alive]
        if op <= 2:
            attempt(c.produce, "t", rng.randrange(2), [b"r%d" % step])
        elif op == 3 and len(live) > 2:
            victim = rng.choice(live)
            attempt(c.crash_broker, victim, power_loss=rng.random() < 0.5)
        elif op == 4:
            for b in (1, 2, 3):
                if not c.brokers[b].alive:
                    attempt(c.restart_broker, b)
        elif op == 5:
            attempt(c.fail_controller, zombie=rng.random() < 0.5)
        elif op == 6:
            a, b = rng.sample([1, 2, 3, f"controller-{c.controller.controller_id}"], 2)
            attempt(c.partition_network, a, b)
        elif op == 7:
            c.heal_network()
        else:
            c.advance_time(rng.choice([100, 1000, 5000, 20000]))
    c.heal_network()
    for b in (1, 2, 3):
        if not c.brokers[b].alive:
            attempt(c.restart_broker, b)
    c.advance_time(20_000)
    c.close()


@pytest.mark.parametrize("seed", [8, 14, 19])
def test_a_faulty_run_checks_clean(seed: int, tmp_path: Path) -> None:
    """Regressions: seed 8 has a deposed leader append before it hears of its successor and a
    follower dropped from the ISR though not behind the leader's LEO (both refused once; the
    drop is a step of the model's ShrinkIsr since it drops any follower), and leader changes
    the model's ElectLeader checks; seed 19 a follower left with no leader to fetch from (its
    FetcherFailure event went missing); seed 14 the leader restarted after a power loss without
    a committed record while still in the ISR, dropped from it when it registers again (refused
    as a CrashRestart once)."""
    path = tmp_path / f"seed-{seed}.jsonl"
    _faulty_run(seed, path)
    code, out = _check(path)
    assert code == 0, out
    wanted = {8: ["a step of a deposed leader", "LogStartOffset.ShrinkIsr",
                  "LogStartOffset.ElectLeader", "LogStartOffset.CrashRestart"],
              14: ["a restarted in-sync replica lost committed records"],
              19: ["FetcherFailure.StopReplica"]}[seed]
    assert all(text in out for text in wanted), out


def _faulty_run_with_topic_changes(seed: int, path: Path) -> None:
    """Faults as in ``_faulty_run``, plus log dir failures, DeleteRecords, reassignments, and
    a topic deleted and re-created under its name; retention and checkpoints every second."""
    rng = random.Random(seed)
    base = BrokerConfig()
    config = replace(base, replica_lag_time_max_ms=3_000, log=replace(
        base.log, initial_task_delay_ms=1_000, retention_check_interval_ms=1_500,
        recovery_point_checkpoint_interval_ms=1_000, durable_log_start_offset=seed % 3 != 0))
    c = Cluster.simulated(seed=seed, broker_config=config, drop_rate=0.02, trace=path)

    def attempt(fn: Callable[..., object], *args: object, **kwargs: object) -> None:
        try:
            fn(*args, **kwargs)
        except LogwrightError:
            pass

    def create() -> None:
        attempt(c.create_topic, "t", 2, 3, configs={"segment.bytes": 300, "retention.bytes": 700})

    create()
    for step in range(30):
        op = rng.randrange(12)
        live = [b for b in (1, 2, 3) if c.brokers[b].alive]
        if op <= 3:
            attempt(c.produce, "t", rng.randrange(2), [b"r%03d" % step * 8] * rng.randrange(1, 4))
        elif op == 4 and len(live) > 2:
            victim = rng.choice(live)
            attempt(c.crash_broker, victim, power_loss=rng.random() < 0.5)
        elif op == 5:
            for b in (1, 2, 3):
                if not c.brokers[b].alive:
                    attempt(c.restart_broker, b)
        elif op == 6:
            attempt(c.fail_controller, zombie=rng.random() < 0.5)
        elif op == 7:
            p = rng.randrange(2)
            try:
                leader = c.brokers.get(c.partition_state("t", p).leader)
            except LogwrightError:
                continue
            log = leader.log_manager.get_log(TopicPartition("t", p)) if leader else None
            if leader is not None and leader.alive and log is not None \
                    and log.high_watermark > log.log_start_offset:
                attempt(leader.replica_manager.delete_records, TopicPartition("t", p),
                        rng.randint(log.log_start_offset + 1, log.high_watermark))
        elif op == 8 and rng.random() < 0.3:
            b = rng.choice(live)
            c.simulated_world.new_fs(f"broker-{b}").inject_fault(
                c.log_dirs[b][rng.randrange(2)], Fault.EIO)
        elif op == 9 and rng.random() < 0.3:
            attempt(c.delete_topic, "t")
            c.advance_time(3_000)
            create()
        elif op == 10:
            target = rng.sample([1, 2, 3], 2)
            attempt(c.reassign, json.dumps({"version": 1, "partitions": [
                {"topic": "t", "partition": rng.randrange(2), "replicas": target}]}))
        else:
            c.advance_time(rng.choice([100, 1000, 5000]))
    c.heal_network()
    c.advance_time(10_000)
    c.close()


@pytest.mark.parametrize("seed", [1, 6, 8, 9, 11, 20, 139])
def test_a_run_with_topic_changes_checks_clean(seed: int, tmp_path: Path) -> None:
    """Regressions: seed 1 has a replica that became leader on a failing dir (its FetcherFailure
    event went missing); seed 8 had a deleted topic's late LeaderAndIsr reviving its replica
    after the StopReplica, then the topic re-created (another generation's events were taken
    for the new one's): since issue 10 the late request changes nothing and the re-created
    topic's LeaderAndIsr sets the old log aside as a stray; seed 9 had events of another
    generation until a lost StopReplica of a deleted generation was retried as the new
    generation's LeaderAndIsr (regression 0008): it checks clean without any; seed 11 a
    replica deleted by a reassignment and created again empty; seed 20 (49 until the lineage's
    round trip moved the runs' events) a follower whose first fetch took a whole batch around
    the leader's start offset; seed 139 a LeaderAndIsr older
    than one applied for its partition (STALE_CONTROLLER_EPOCH for it: the twin would apply
    it); seed 6 a stray revived (its start offset checkpoint was traced before the replica was
    known again, and its return is no step of the model). (Seeds 11's three cases were one run
    until a reassignment began to wait for its targets' answers, and moved again when the ISR
    began to wait for a follower's epoch; seed 53's case was seed 49's until the targets of a
    reassignment began to fsync before their records count; found by running seeds 0 to 260.)"""
    path = tmp_path / f"seed-{seed}.jsonl"
    _faulty_run_with_topic_changes(seed, path)
    code, out = _check(path)
    assert code == 0, out
    wanted = {1: ["FetcherFailure.StopReplica"],
              6: ["StrayCleanup.ReviveStray", "a stray revived"],
              8: ["StrayCleanup.MarkStray"],
              9: ["LogStartOffset.DeleteReplica"],
              11: ["a reassignment deleted a replica"],
              20: ["took the whole batch"],
              139: ["older than one the broker already applied"]}[seed]
    assert all(text in out for text in wanted), out


def test_a_restarted_replica_without_committed_records_must_leave_the_isr(tmp_path: Path) -> None:
    """Seed 14: the leader of t-0 loses its one committed record in a power loss and restarts;
    the controller elects another leader and drops it from the ISR before it fetches. Kept in
    the ISR (by the new leader's LeaderAndIsr and by the ISR the controller's LeaderAndIsrs
    carry), or never dropped (the trace ends first), the restart is refused."""
    path = tmp_path / "seed-14.jsonl"
    _faulty_run(14, path)
    events = [json.loads(line) for line in path.read_text().splitlines()]
    k = next(i for i, e in enumerate(events) if e["action"] == "CrashRestart"
             and e["instance"] == "t-0")
    r = events[k]["args"]["replica"]
    elect = next(e for e in events[k:] if e["action"] == "BecomeLeader"
                 and e["instance"] == "t-0")
    assert r not in elect["changed"]["isr"]
    elect["changed"]["isr"] = sorted({*elect["changed"]["isr"], r})
    sends = [e for e in events[k:] if e["action"] == "SendLeaderAndIsr"
             and e["instance"] == "t-0" and r not in e["args"]["isr"]]
    assert sends
    for e in sends:
        e["args"]["isr"] = sorted({*e["args"]["isr"], r})
    code, out = _check(_write(tmp_path, events))
    assert code == 1
    assert (f"LogStartOffset t-0 FollowerFetch: not enabled: replica {r} restarted without "
            "committed records") in out, out
    code, out = _check(_write(tmp_path, events[:k + 1]))
    assert code == 1
    assert "t-0 CrashRestart: not enabled" in out and "the trace ended before" in out, out


def test_the_last_isr_member_that_lost_acknowledged_records_no_longer_leads(
        tmp_path: Path) -> None:
    """Seed 14 (topic changes; 7 until the lineage's round trip moved the run's events, 55
    before that): the leader, the ISR's only
    member, loses acknowledged records
    it had not flushed in a power loss. Before eligible leader replicas it led again with them
    lost (the checker refused the trace: CommittedDataOnIsr, the loss Kafka has too before
    KIP-966). Now it registers uncleanly, leaves the ISR, and the partition has no leader until
    a recovery election: outside the LogStartOffset model (which always has a leader), so its
    steps then are not held to it, and the trace checks."""
    path = tmp_path / "seed-14.jsonl"
    _faulty_run_with_topic_changes(14, path)
    code, out = _check(path)
    assert code == 0, out
    assert "LogStartOffset.CrashRestart: a step while the partition has no leader" in out, out


REFUSED_ONCE = {
    66: "a leader that lost committed records in a power loss, with deleted segments back and "
        "(lazy checkpoint) its start offset too: the checker now defers the restart to the "
        "ISR drop before it reports the start offset's return as outside the model",
    93: "a follower whose deleted segments came back in a power loss, and with the lazy "
        "checkpoint its start offset too (Kafka's behaviour; the model's deletions are for "
        "good): outside the model",
    114: "the leader that lost committed records led again after a time with no leader, and "
         "the checker had dropped its recorded restart (no_leader now keeps it)",
    163: "as 114",
    200: "as 114",
    79: "a recovery election's leader adopted the highest reported start offset without an "
        "event (its BecomeLeader now carries its log's changes)",
    170: "the leader proposed adding a follower on what an earlier incarnation of its broker "
         "had fetched (KIP-903: the controller now refuses a stale broker epoch, and the "
         "checker knows such a proposal for what it is)",
    319: "as 170, with another member added while the refused one was still proposed",
    349: "a member proposed with broker epoch 4 restarted (epoch 5) and lost its records "
         "before the controller answered: refused, so out of the ISR at its registration",
    447: "a follower fetched from its deposed leader past the new leader's end before it heard "
         "of the new leader (a case the checker's reading lacked)",
    176: "a power loss took a follower's first segment, begun at a batch's base below its start "
         "offset; its log restarted empty at its start offset (the model's offsets are "
         "records, not batches)",
}


@pytest.mark.parametrize("seed", sorted(REFUSED_ONCE))
def test_runs_the_trace_checker_once_refused_now_check(seed: int, tmp_path: Path) -> None:
    """Found by scanning seeds 0 to 500 of the run above (each ``traces check`` VIOLATED until
    triaged; ``REFUSED_ONCE`` says what each showed and what changed). Two were defects of
    the implementation (a start offset adopted without an event, an ISR member added on a
    stale broker epoch), the rest cases the checker's reading lacked."""
    path = tmp_path / f"seed-{seed}.jsonl"
    _faulty_run_with_topic_changes(seed, path)
    code, out = _check(path)
    assert code == 0, out


def test_a_real_cluster_records_a_trace_that_checks(tmp_path: Path) -> None:
    """``Cluster.real(trace=...)`` records as the simulated cluster does, on the wall clock: a
    run with produces, a leader's restart (a new broker epoch, a new leader epoch) and a
    controller failover checks clean, its header naming the real runtime; a cluster opened
    without ``trace`` records nothing."""
    path = tmp_path / "real.jsonl"
    c = Cluster.real(str(tmp_path / "data"), brokers=2, log_dirs_per_broker=1, seed=3,
                     trace=path)
    assert c.trace.enabled
    c.create_topic("t", partitions=2, replication_factor=2)
    c.produce("t", 0, [b"a", b"b"], acks=-1)
    c.produce("t", 1, [b"c"], acks=-1)
    leader = c.partition_state("t", 0).leader
    c.restart_broker(leader)
    c.produce("t", 0, [b"d"], acks=-1)
    c.fail_controller()
    c.produce("t", 1, [b"e"], acks=-1)
    assert [r.value for r in c.fetch("t", 0, 0)] == [b"a", b"b", b"d"]
    c.close()
    events = [json.loads(line) for line in path.read_text().splitlines()]
    header = events[0]
    assert header["action"] == "Header" and header["args"]["runtime"] == "real"
    assert header["trace"] == "real-seed-3"
    assert {e["model"] for e in events} >= {"LogStartOffset", "ControllerFencing",
                                            "FetcherFailure"}
    code, out = _check(path)
    assert code == 0, out
    assert "ControllerFencing.ElectController" in out and "LogStartOffset.Append" in out
    again = Cluster.real(str(tmp_path / "data"), brokers=2, log_dirs_per_broker=1, seed=3)
    assert again.trace is NO_TRACE
    again.close()


def test_a_real_cluster_refuses_a_bad_trace_path(tmp_path: Path) -> None:
    """The real cluster validates ``trace`` as the simulated one does, before taking the data
    path's lock: a directory is refused and nothing is created under the data path."""
    with pytest.raises(LogwrightError, match="is a directory"):
        Cluster.real(str(tmp_path / "data"), brokers=1, log_dirs_per_broker=1, trace=tmp_path)
    assert not (tmp_path / "data" / ".lock").exists()


def test_a_fingerprint_is_the_canonical_forms_whatever_is_remembered() -> None:
    """Fingerprints are remembered by ``repr``: a set built in another order has the same one,
    and values equal by ``==`` but of other types (1 and True, 1 and 1.0) keep their own, in
    whichever order they are met."""
    from logwright.verify.traces import _canon

    def fresh(model: str, state: object) -> str:
        return f"{model}:" + hashlib.blake2b(repr(_canon(state)).encode(),
                                              digest_size=8).hexdigest()

    a = frozenset(f"r{i}" for i in range(40))
    b = frozenset(sorted(a, reverse=True))
    assert a == b
    for first, second in (((1, a), (True, b)), ((True, b), (1, a)), ((1.0, a), (1, b))):
        for state in (first, second, first):
            assert fingerprint("M", state) == fresh("M", state)
        assert fingerprint("M", first) != fingerprint("M", second)
    assert fingerprint("M", (1, a)) == fingerprint("M", (1, b)) != fingerprint("N", (1, a))


CUT = "whose event a power loss cut"
"""The words the checker counts a restart by when it replayed an event an Intent announced."""


CHECKER_REGRESSIONS = sorted((CORPUS.parent / "checker").glob("*.jsonl"))

CHECKER_EXPECTATIONS: dict[str, tuple[str, str]] = {
    "0001": ("outside", "no leader"),
    "0002": ("event", '"cause":"JBOD move swapped in"'),
    "0003": ("event", '"cause":"JBOD move swapped in"'),
    "0004": ("action", "ReplicaMove.FailDir"),
    "0005": ("outside", CUT),
    "0006": ("event", '{"action":"FetchFenced","args":{"epoch":0,'
                      '"topicId":"MY-QYf-bS4ClXaO1uGG6Dw","tp":"s-0"}'),
    "0007": ("outside", "a fetch answered from the leader's earlier state"),
    "0008": ("outside", "a FollowerFetch whose event a power loss cut"),
    "0009": ("outside", "a FollowerFetch whose event a power loss cut"),
    "0010": ("event", '"action":"DeleteReplica","args":{"replica":3,'
                      '"topicId":"RegjnxI3Ss-hMU2RqRNqwA"}'),
    "0011": ("outside", "a DeleteOldestSegment whose event a power loss cut"),
    "0012": ("outside", "restarted again before it"),
    "0013": ("outside", "a member a reassignment had deleted"),
    "0014": ("event", '"action":"ExpandIsr","args":{"brokerEpoch":9,"cause":"AlterPartition '
                      'proposed","knownLeo":0,"leaderLeo":0,"r":1'),
    "0015": ("outside", "a fetch answered by a deposed leader"),
    "0016": ("event", '"action":"AdvanceHW","args":{"known":{"1":3,"2":3,"3":3},"replica":2'),
    "0017": ("event", '"changed":{"ckptStart":{"1":0},"flushed":{"1":3},"hw":{"1":0},'
                      '"leo":{"1":3}'),
    "0018": ("outside", "not checked: the trace ended first"),
    "0019": ("event", '"action":"ExpandIsr","args":{"brokerEpoch":13,"cause":"AlterPartition '
                      'proposed","knownLeo":3,"leaderLeo":3,"r":2'),
    "0020": ("event", '"topicId":"DAOumViVSwSby9s5iwdb4w"},"changed":{"ckptStart":{"3":0},'
                      '"flushed":{"3":0},"hw":{"3":0},"leo":{"3":2}'),
    "0021": ("outside", "a LeaderAndIsr the controller had already overtaken"),
    "0022": ("event", '"action":"FollowerFetch","args":{"fetchedTo":6,"leaderHw":8,'),
    "0023": ("outside", "the controller's LeaderAndIsr left out a restarted member"),
}
"""What each trace in traces/checker/ shows, beyond checking clean (docs/verification.md):
("outside", words) a reason counted outside the model, ("event", text) a recorded event,
("action", name) a model step taken."""


@pytest.mark.parametrize("trace", CHECKER_REGRESSIONS, ids=lambda p: p.stem)
def test_traces_that_once_crashed_the_checker_check(trace: Path) -> None:
    """Recorded runs the checker once failed on (an internal error, or a refusal that was not
    the implementation's fault), each kept checking clean.

    0001 (``fuzz --seeds 40 --steps 60``, seed 22): a partition left without a leader, then an
    event naming a replica a reassignment had added. The step is outside the model, and taking
    the recorded values as the state re-based the instance on the new replica, then refused it
    (as a step must) out of the checker. The values are now taken after every re-base.

    0002, 0003 (``fuzz --seeds 120 --steps 80``, seeds 72 and 75, recorded again): a JBOD move's
    swap made a log live whose first segment begins at the start offset (or at the batch
    holding it), above the source's; the swap now records that as ``DeleteOldestSegment``.

    0004 (same campaign, seed 87): the source's dir failed under the swap's lock; the checker's
    ReplicaMove twin now lets either dir fail.

    0005 (``fuzz --seeds 120 --steps 80``, seed 82, recorded again): broker 1, a deposed leader
    that had not heard of its successor, lost power on the fsync that made its DeleteRecords
    to offset 2 durable, before its event; the restart shows start offset 2. The broker now
    records an ``Intent`` before the write, and the checker replays the DeleteRecords it names
    before the restart.

    0006 (``fuzz --seeds 100 --seed 120 --steps 80``, seed 153, recorded again): a fetch sent
    for the deleted generation of s-0 was fenced after the partition came back to the fetcher
    under the re-created topic's id; the stale fence is now recorded under the id the request
    was sent for, and the checker takes a fence at an epoch known before a StopReplica.

    0007 (same campaign, seed 185): a fetch answer the leader sent before its power loss,
    carrying HW 2, arrived after its restart with HW 0; the earlier state the checker allows
    such an answer is now bounded by the highest HW of the leader's leadership.

    0008 (``fuzz --seeds 400 --seed 280 --steps 80``, seed 499, recorded again): follower 1
    lost power while it made the start offset 2 it had just learned from its leader durable,
    before its FollowerFetch was recorded; its Intent explains the restart at 2.

    0009 (``fuzz --seeds 200 --seed 700 --steps 80``, seed 722, recorded again): follower 3
    appended fetched records that outlived its power loss, before its FollowerFetch was
    recorded; a follower's fetch that appends records now records its Intent first.

    0010 (the same campaign, seed 897, recorded again): right after s-0 was created again,
    broker 3 deleted, for a StopReplica of an older generation, a replica whose log knew no
    topic id; its DeleteReplica named none, and the checker took 3 out of the new generation's
    ISR. The event now names the generation the StopReplica was for.

    0011 (the JBOD move power-loss sweep below, leader, after 32 file system operations,
    recorded again): the leader lost power right after its swap renamed the future log into
    place, before the swap's DeleteOldestSegment was recorded; its restart from the moved log
    shows the first segment at the batch holding the start offset. The swap now records its
    Intent before the rename.

    0012 (``fuzz --seeds 300 --seed 2000 --steps 80``, seed 2051): broker 2, an in-sync
    follower of s-2 whose log was not yet flushed, lost power and restarted without the
    committed record, then restarted again before the controller dropped it from the ISR. The
    checker deferred the first restart until the ISR drop and refused the second as the
    replica acting in the ISR; a restart while one waits is now folded into it (the replica
    has neither served nor fetched since), checked once it leaves the ISR.

    0013 (``fuzz --seeds 300 --seed 3000 --steps 150``, seed 3181): a reassignment took
    replica 1 of t-0 away; broker 1 deleted its log for the StopReplica, and leader 3, not yet
    told of the new leader epoch, then proposed replica 1 back into the ISR on a fetch made
    before the deletion. The controller refuses such a proposal (a stale leader epoch); the
    checker now takes it as it takes one with a stale broker epoch: outside the model, the
    member kept out of the model's ISR.

    0014 (``fuzz --seeds 300 --seed 3500 --steps 200``, seed 3611, cut after the event): a
    reassignment added replica 1 to t-1, whose log was empty, and leader 2 proposed it into the
    ISR before any of its fetches had changed anything the trace records. The checker met the
    replica first as an ISR member and crashed on it (reported as bad input, the whole trace
    unchecked); a member or ``r`` the instance lacks now re-bases it on the larger replica
    set, as any other recorded value of a new replica does.

    0015 (``fuzz --seeds 300 --seed 3500 --steps 200``, seed 3680; its steps shrunk from 200
    to 7, recorded again): broker 3 led t-1 at leader epoch 0; cut off from the controller,
    with broker 2 cut off too, it was replaced by broker 1 (epochs 1 and 2), and neither
    broker 3 nor broker 2 was told. Broker 3 accepted a client's DeleteRecords below offset 1
    (a deposed leader's step, outside the model; it timed out unacknowledged), and broker 2,
    still fetching from it at epoch 0, took its start offset 1 while the leader's stayed 0, as
    Kafka's follower does. The model's fetch reads the present leader's log; the checker now
    takes such a fetch as the twin's fetch from the deposed leader's log, outside the model,
    when the two brokers' last LeaderAndIsr for the partition is of the epoch that replica
    led, and a later epoch's leader leads.
    0016 (``fuzz --seeds 300 --seed 3800 --steps 200``, seed 3845, cut after the event):
    follower 1 of s-0 fetched three records and lost them in a power loss before they were
    committed; a fetch it had sent before the loss reached leader 2 after it, and the leader,
    not yet told that the controller had dropped 1 from the ISR at its registration (unclean
    shutdown, KIP-966), raised the HW to 3 counting it. The checker now takes that as the
    model's order, ShrinkIsr of the restarted member then AdvanceHW, when what the leader
    counted for it is more than its log holds and no more than it held before the restart.

    0017 (``fuzz --seeds 300 --seed 4100 --steps 200``, seed 4283, cut after 80 events): with
    ``flush.messages=1`` in the alphabet, a leader's append and a follower's fetch flush their
    log within the call, and their event records the flush too. Checked as the append, then
    the twin's Flush of the whole log.

    0018 (the same campaign, seed 4221): leader 3 of t-0 lost committed records it had not
    flushed in a power loss; its restart waits for the ISR drop, which the controller made
    when broker 3 registered again (then electing 2), but the run ended before an event of the
    partition showed it. Counted outside (not checked), only when the broker registered again
    after the restart and the controller then elected another replica.

    0019 (``fuzz --seeds 300 --seed 4400 --steps 200``, seed 4517, cut after the event): a
    reassignment deleted replica 1 of s-1; leader 3, not yet told of that epoch, proposed
    replica 2 with an ISR still showing 1. Checked as ExpandIsr of 2, the deleted member kept
    out of the model's ISR (as one the controller refuses) until the leader's ISR drops it.

    0020 (the same campaign, seed 4616, recorded again, cut after the event): the recorder
    kept each replica's last values per partition name, and a replica of a deleted generation
    of t-2, acting after the name was created again, left its values there; the new
    generation's first Append of broker 3 then recorded only what differed from them (its HW,
    not its log end). The recorder now keeps them per topic id too.

    0021 (``fuzz --seeds 300 --seed 4700 --steps 200``, seed 4945, cut after the event): a
    reassignment took leader 1 of s-1 away, its replica deleted before its successor led; the
    successor's first LeaderAndIsr (epoch 2) came after the controller had written epoch 3.
    The checker applied the deleted leader's values at that overtaken LeaderAndIsr, which it
    then takes as outside without its values, and left the old leader, now empty, leading an
    ISR with committed records. The deletion now waits for a LeaderAndIsr that is current.

    0022 (the same campaign, seed 4720, cut after the event): follower 2 of t-0, restarted
    after a power loss at 5 below the committed 8 (its restart checked at the ISR drop), then
    fetched one segment's records, to 6, from a leader whose HW was 8, and flushed them in the
    same call (``flush.messages``). The append-then-flush reading put back the recovery point
    the replica had before its restart was settled; it now leaves it as the state holds it.

    0023 (``fuzz --seeds 200 --seed 5500 --steps 200``, seed 5690, recorded again, cut after
    the event; once tests/data/conformance_open/0001): leader 2 of s-0 asked to drop follower
    3 from the ISR {2, 3}; the controller committed it, and its answer was lost, so the
    leader's maximal ISR, which the events record, kept 3 until its retry 30 s later. Broker 3
    meanwhile lost power and came back with its log at 0, below the committed 1 (its restart
    waits for the ISR drop), registered again (out of the controller's ISR, nothing to drop),
    was sent a LeaderAndIsr whose ISR was {2}, and fetched. The controller's LeaderAndIsr now
    records its ISR; one of the leader epoch the controller last wrote that leaves out a
    member whose restart waits for the ISR drop is that drop."""
    report = check_paths([trace])
    assert report.ok, report.summary()
    assert report.traces == 1 and report.steps > 0
    kind, what = CHECKER_EXPECTATIONS[trace.stem[:4]]
    if kind == "outside":
        assert any(what in reason for reason in report.outside), report.outside
    elif kind == "action":
        assert report.actions[what] > 0, report.actions
    else:
        assert what in trace.read_text(encoding="utf-8")


def test_every_trace_in_traces_checker_has_its_expectation() -> None:
    assert sorted(p.stem[:4] for p in CHECKER_REGRESSIONS) == sorted(CHECKER_EXPECTATIONS)


def _checker_trace_edited(stem: str, seq: int, edit: Callable[[dict[str, object]], None],
                          tmp_path: Path) -> Path:
    """A copy of the traces/checker/ trace ``stem`` with its event ``seq`` edited."""
    src = next(p for p in CHECKER_REGRESSIONS if p.stem.startswith(stem))
    lines = []
    for line in src.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["seq"] == seq:
            edit(event)
            line = json.dumps(event, separators=(",", ":"), sort_keys=True)
        lines.append(line)
    out = tmp_path / src.name
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def test_a_stale_fence_is_recorded_under_the_generation_its_request_was_for(
        tmp_path: Path) -> None:
    """Seed 153 recorded anew: broker 3's fetch for the deleted generation of s-0 is fenced
    after s-0 came back to its fetcher under the re-created topic's id. The event names the
    generation the request was for (before the fix, the present one, which no leader of could
    have fenced epoch 0), and the trace checks clean."""
    out = tmp_path / "seeds"
    result = CliRunner().invoke(main, ["fuzz", "--seeds", "1", "--seed", "153", "--steps", "80",
                                       "--out", str(out)])
    assert result.exit_code == 0, result.output
    trace = out / "seed-153.jsonl"
    # traces/checker/0006's seq 253; later schema additions (Intents) moved its number.
    fence = next(e for e in map(json.loads, trace.read_text(encoding="utf-8").splitlines())
                 if e["action"] == "FetchFenced" and e["node"] == "broker-3"
                 and e["args"]["tp"] == "s-0" and e["args"]["epoch"] == 0)
    assert fence["args"]["topicId"] == "MY-QYf-bS4ClXaO1uGG6Dw"
    report = check_paths([trace])
    assert report.ok, report.summary()


def test_a_fence_at_an_epoch_the_broker_never_knew_for_the_partition_is_refused(
        tmp_path: Path) -> None:
    """0006's fence (seq 253) at epoch 1: broker 3 knew the deleted generation's s-0 only at
    epoch 0 before its StopReplica, so no fetch of it could have carried epoch 1."""
    report = check_paths([_checker_trace_edited("0006", 253, _set_arg("epoch", 1), tmp_path)])
    assert not report.ok
    assert [(f.seq, f.action) for f in report.failures] == [(253, "FetchFenced")]


def test_an_answer_carrying_a_hw_the_leader_never_had_is_refused(tmp_path: Path) -> None:
    """0007's late answer (seq 324) with HW 3, which leader 1 never reached (its highest was
    2), is no earlier state of the leader."""
    report = check_paths([_checker_trace_edited("0007", 324, _set_arg("leaderHw", 3),
                                                tmp_path)])
    assert not report.ok
    assert [(f.seq, f.action) for f in report.failures] == [(324, "FollowerFetch")]


def _intent_edited(src: Path, edit: Callable[[dict[str, object]], None] | None,
                   tmp_path: Path) -> Path:
    """A copy of the trace ``src`` with its one ``Intent`` edited, or left out (``edit`` None,
    the rest numbered again)."""
    lines = []
    for line in src.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["action"] == "Intent":
            if edit is None:
                continue
            edit(event)
        event["seq"] = len(lines)
        lines.append(json.dumps(event, separators=(",", ":"), sort_keys=True))
    out = tmp_path / f"edited-{src.name}"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def _set_arg(name: str, value: object) -> Callable[[dict[str, object]], None]:
    def edit(event: dict[str, object]) -> None:
        args = event["args"]
        assert isinstance(args, dict)
        args[name] = value
    return edit


def _set_start(offset: int) -> Callable[[dict[str, object]], None]:
    """The Intent's announced start offset (``then``: logStart and ckptStart) set to
    ``offset``."""
    def edit(event: dict[str, object]) -> None:
        args = event["args"]
        assert isinstance(args, dict)
        for name in ("logStart", "ckptStart"):
            args["then"][name] = {str(args["replica"]): offset}
    return edit


def _refused_only_by_an_edited_intent(trace: Path, offset: int, replica: int,
                                      tmp_path: Path) -> None:
    """``trace`` checks clean only with its Intent as recorded: left out, announcing another
    start offset, for another replica or another action, the restart it explains is
    refused."""
    other = 1 if replica != 1 else 2
    for edit in (None, _set_start(offset - 1), _set_start(offset + 1),
                 _set_arg("replica", other), _set_arg("action", "Flush")):
        report = check_paths([_intent_edited(trace, edit, tmp_path)])
        assert not report.ok and report.failures, (edit, report.summary())
        assert not report.bad_input


def test_a_durable_delete_records_cut_from_its_event_is_refused_without_its_intent(
        tmp_path: Path) -> None:
    """traces/checker/0005 (seed 82): deposed leader 1 lost power on the fsync that made its
    DeleteRecords to offset 2 durable; only its Intent explains the start offset the restart
    shows."""
    trace = next(p for p in CHECKER_REGRESSIONS if p.stem.startswith("0005"))
    intent = next(json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()
                  if json.loads(line)["action"] == "Intent")
    assert (intent["args"]["action"], intent["args"]["o"], intent["args"]["replica"]) == (
        "DeleteRecords", 2, 1)
    _refused_only_by_an_edited_intent(trace, 2, 1, tmp_path)


Step = dict[str, object]


def _power_loss_sweep(tmp_path: Path, after_ops: range, values: list[str],
                      pick: Callable[[int], int], nested: Step, *,
                      cluster: dict[str, object] | None = None, before: Iterable[Step] = (),
                      per_event_models: bool = True, properties: bool = True,
                      start: int | None = None) -> tuple[int, int]:
    """One seeded run per ``after_ops``: topic s (1 partition, 3 replicas) takes ``values``
    with acks=all and settles; broker ``pick(leader)`` does the ``before`` steps' part and then
    loses power after that many of its file system operations during ``nested``, restarts and
    the cluster settles (the run's properties checked unless ``properties`` is false). Every
    trace must check clean; one whose restart the checker explained by an Intent must be
    refused without it, and (``start`` given) when the Intent names another start offset,
    replica or action. Returns (traces explained by an Intent, runs whose broker lost power)."""
    from logwright.verify.cluster_run import ClusterRun, PropertyViolated

    cut = crashed = 0
    for k in after_ops:
        path = tmp_path / f"after-{k}.jsonl"
        run = ClusterRun({"brokers": 3, "seed": 0, "trace": str(path), **(cluster or {})},
                         per_event_models=per_event_models)
        run.apply({"op": "create_topic", "topic": "s", "partitions": 1,
                   "replication_factor": 3})
        for value in values:
            run.apply({"op": "produce", "topic": "s", "partition": 0, "values": [value],
                       "acks": -1})
        run.apply({"op": "settle"})
        b = pick(run.cluster.partition_state("s", 0).leader)
        for step in before:
            run.apply({**step, "broker": b} if "broker" in step else step)
        run.apply({"op": "crash_during", "broker": b, "after_ops": k,
                   "step": {**nested, "broker": b} if "broker" in nested else nested})
        if not run.running(b):
            crashed += 1
            run.apply({"op": "restart", "broker": b})
        try:
            run.apply({"op": "settle"})
            run.check()
        except PropertyViolated:
            if properties:
                raise  # else: the run's durability checks do not allow for what the test does
        run.cluster.close()
        report = check_paths([path])
        assert report.ok, (k, report.summary())
        if any(CUT in reason for reason in report.outside):
            cut += 1
            if start is None:
                report = check_paths([_intent_edited(path, None, tmp_path)])
                assert not report.ok and report.failures, report.summary()
            else:
                _refused_only_by_an_edited_intent(path, start, b, tmp_path)
    return cut, crashed


def _who(who: str) -> Callable[[int], int]:
    """The leader itself, or its first follower."""
    return (lambda leader: leader) if who == "leader" else (
        lambda leader: min({1, 2, 3} - {leader}))


@pytest.mark.parametrize("who", ["leader", "follower"])
def test_a_power_loss_at_every_file_operation_of_a_delete_records_checks(
        who: str, tmp_path: Path) -> None:
    """The leader of s-0 (3 acknowledged records) is asked to delete the records below 2, and
    the leader (or a follower, which raises its own start offset from its next fetch) loses
    power after each of its first file system operations from then on, restarts, and the
    cluster settles. Every trace checks clean: a power loss before the durable write restarts
    at start offset 0, one after it (its event not yet recorded) at 2, which the checker
    replays from the Intent (DeleteRecords, or FollowerFetch); each such trace is refused when
    its Intent is edited or left out."""
    cut, crashed = _power_loss_sweep(
        tmp_path, range(1, 14), ["v0", "v1", "v2"], _who(who),
        {"op": "delete_records", "topic": "s", "partition": 0, "offset": 2}, start=2)
    assert cut >= 3 and crashed - cut >= 3, (cut, crashed)


@pytest.mark.parametrize("who", ["leader", "follower"])
def test_a_power_loss_at_every_file_operation_of_a_jbod_move_checks(
        who: str, tmp_path: Path) -> None:
    """Records below 2 of s-0 deleted (its first segment still begins at 0), the leader (or a
    follower) moves its replica to its other log dir: the future log begins at the batch
    holding offset 2, so the swap changes the replica's first segment. It loses power after
    each of its file system operations during the move, restarts, and the cluster settles.
    Every trace checks clean: a power loss after the swap's rename and before its event
    restarts from the moved log, which the checker replays from the swap's Intent (its
    DeleteOldestSegment; without the Intent, that trace was refused), and each
    such trace is refused without it."""
    cut, crashed = _power_loss_sweep(
        tmp_path, range(26, 40), ["v0", "v1", "v2"], _who(who),
        {"op": "alter_log_dir", "broker": 0, "partition": 0, "dir": 2},
        cluster={"log_dirs_per_broker": 2},
        before=[{"op": "delete_records", "topic": "s", "partition": 0, "offset": 2},
                {"op": "settle"}])
    assert cut >= 1 and crashed >= 8, (cut, crashed)


@pytest.mark.parametrize("who", ["leader", "follower"])
def test_a_power_loss_during_time_retention_checks(who: str, tmp_path: Path) -> None:
    """Six records of s-0, each in a segment of its own (segment.bytes 200), pass their
    retention (3 s); the leader (or a follower) loses power after every fourth of its file
    system operations while time advances 4 s, restarts, and the cluster settles. Retention
    raises the start offset durably before it deletes the segments and records its
    DeleteOldestSegment after: every trace checks clean, those whose restart shows the raise
    without its event through its Intent, and each of those is refused without it."""
    cut, _ = _power_loss_sweep(
        tmp_path, range(1, 90, 4), [f"value-{i:03d}" * 4 for i in range(6)], _who(who),
        {"op": "advance", "ms": 4_000},
        cluster={"broker_properties": {"log.retention.check.interval.ms": "1000",
                                       "log.initial.task.delay.ms": "500"},
                 "topic_configs": {"retention.ms": 3000, "segment.bytes": 200}},
        properties=False, start=6)
    assert cut >= 3, cut


@pytest.mark.parametrize("who", ["leader", "follower"])
def test_a_power_loss_during_the_lazy_start_offset_checkpoint_checks(
        who: str, tmp_path: Path) -> None:
    """With the start offset checkpointed lazily, a DeleteRecords to offset 2 raises the start
    offsets in memory only; the periodic checkpoint (every 4 s) writes them. The leader (or a
    follower) loses power after each of its 11th to 29th file system operations while time
    advances 6 s, restarts, and the cluster settles: every trace checks clean, one whose
    restart loaded the checkpoint written just before the power loss through its Intent."""
    base = BrokerConfig()
    config = replace(base, log=replace(base.log, durable_log_start_offset=False,
                                       initial_task_delay_ms=4_000,
                                       recovery_point_checkpoint_interval_ms=4_000))
    # The run's per-event projections are set up for the durable start offset; the trace is
    # checked against the lazy configuration its header names.
    cut, _ = _power_loss_sweep(
        tmp_path, range(11, 30), ["v0", "v1", "v2"], _who(who), {"op": "advance", "ms": 6_000},
        cluster={"broker_config": config}, per_event_models=False,
        before=[{"op": "delete_records", "topic": "s", "partition": 0, "offset": 2}])
    assert cut >= 1, cut


def test_a_power_loss_as_a_follower_restarts_at_the_leaders_start_offset_checks(
        tmp_path: Path) -> None:
    """A follower is down while the leader takes five more records and deletes those below 5;
    back, its fetch at 1 is out of range and it restarts its log empty at 5, durably, before
    its FollowerFetch (outOfRange) is recorded. It loses power after each of its first 39
    file system operations from its return on: every trace checks clean, those whose restart
    shows the new start through the Intent, and each of those is refused without it."""
    cut, _ = _power_loss_sweep(
        tmp_path, range(1, 40), ["v0"], _who("follower"), {"op": "advance", "ms": 1_000},
        cluster={"topic_configs": {"segment.bytes": 200}}, start=5,
        before=[{"op": "crash", "broker": 0, "power_loss": False},
                *({"op": "produce", "topic": "s", "partition": 0,
                   "values": [f"value-{i:03d}" * 4], "acks": -1} for i in range(1, 6)),
                {"op": "delete_records", "topic": "s", "partition": 0, "offset": 5},
                {"op": "restart", "broker": 0}])
    assert cut >= 3, cut



def test_a_restart_below_the_start_offset_cut_by_a_power_loss_checks_by_its_intent(
        tmp_path: Path) -> None:
    """A follower whose leader's log ends below its start offset (records lost by every
    replica that held them) restarts its log empty there, writing the lowered start offset
    before its ``RestartBelowStart`` event. The run below is real up to broker 1's crash (s-0's
    records deleted to offset 3, so its empty log starts at 3; the ISR then drops it); its
    restart at offset 1, as after such a restart cut from its event by a power loss, is written
    by hand: with the Intent the checker replays the cut event first and the restart checks;
    without it, or with one naming another offset, replica or action, the restart is refused
    (a start offset never moves back in the model)."""
    from logwright.verify.cluster_run import ClusterRun

    path = tmp_path / "run.jsonl"
    run = ClusterRun({"brokers": 3, "seed": 0, "trace": str(path)})
    run.apply({"op": "create_topic", "topic": "s", "partitions": 1, "replication_factor": 3})
    for value in ("v0", "v1", "v2"):
        run.apply({"op": "produce", "topic": "s", "partition": 0, "values": [value],
                   "acks": -1})
    run.apply({"op": "settle"})
    run.apply({"op": "delete_records", "topic": "s", "partition": 0, "offset": 3})
    run.apply({"op": "settle"})
    assert run.cluster.partition_state("s", 0).leader != 1
    run.apply({"op": "crash", "broker": 1, "power_loss": False})
    run.apply({"op": "advance", "ms": 40_000})
    run.cluster.close()
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert check_paths([path]).ok
    topic_id = next(e["args"]["topicId"] for e in events if e["action"] == "DeleteRecords")
    values = {name: {"1": 1} for name in _LSO_VARS}
    base = {"instance": "s-0", "node": "broker-1", "trace": events[-1]["trace"],
            "time": events[-1]["time"], "v": 4}

    def checked(intent: dict[str, object] | None) -> CheckReport:
        extra: list[dict[str, object]] = []
        if intent is not None:
            extra.append({**base, "model": "-", "action": "Intent", "changed": {},
                          "args": {"action": "RestartBelowStart", "offset": 1, "replica": 1,
                                   "topicId": topic_id, "then": values, **intent}})
        extra.append({**base, "model": "LogStartOffset", "action": "CrashRestart",
                      "args": {"h": 1, "replica": 1, "topicId": topic_id}, "changed": values})
        out = tmp_path / "edited.jsonl"
        out.write_text("".join(json.dumps({**e, "seq": i}, sort_keys=True) + "\n"
                               for i, e in enumerate([*events, *extra])), encoding="utf-8")
        return check_paths([out])

    report = checked({})
    assert report.ok, report.summary()
    assert any(CUT in reason and "RestartBelowStart" in reason for reason in report.outside)
    for edit in (None, {"then": {**values, "logStart": {"1": 2}, "ckptStart": {"1": 2}}},
                 {"replica": 3}, {"action": "Flush"}):
        report = checked(edit)
        assert not report.ok and report.failures, (edit, report.summary())



def test_a_second_restart_folded_into_a_waiting_one_is_still_checked(tmp_path: Path) -> None:
    """traces/checker/0012 up to broker 2's second restart of s-2, then the leader's ShrinkIsr
    of 2 (in the run the topic was deleted first, which ends the instance unchecked): the two
    restarts, folded into one, are checked at the ISR drop. As recorded they check; with the
    second one's values edited to a log end the replica never had, they are refused."""
    src = next((CORPUS.parent / "checker").glob("0012-*.jsonl"))
    events = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines()]
    restarts = [i for i, e in enumerate(events) if e["action"] == "CrashRestart"
                and e["instance"] == "s-2" and e["node"] == "broker-2"]
    assert len(restarts) == 2
    second = restarts[1]
    shrink = {**events[second], "action": "ShrinkIsr", "node": "broker-3",
              "args": {"cause": "AlterPartition committed", "knownLeo": 0, "leaderLeo": 1,
                       "r": 2, "topicId": events[second]["args"]["topicId"]},
              "changed": {"isr": [1, 3]}}

    def checked(changed: dict[str, object]) -> CheckReport:
        kept = [*events[:second], {**events[second], "changed": changed}, shrink]
        out = tmp_path / "cut.jsonl"
        out.write_text("".join(json.dumps({**e, "seq": n}, sort_keys=True) + "\n"
                               for n, e in enumerate(kept)), encoding="utf-8")
        return check_paths([out])

    report = checked({})
    assert report.ok, report.summary()
    assert any("restarted again before it" in reason for reason in report.outside)
    report = checked({"leo": {"2": 7}})
    assert not report.ok and any("left the ISR" in f.message for f in report.failures), \
        [f.format() for f in report.failures]


def _reordered(src: Path, order: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
               out: Path) -> Path:
    """A copy of trace ``src`` with its events put in ``order``, numbered again."""
    events = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines()]
    out.write_text("".join(json.dumps({**e, "seq": n}, sort_keys=True) + "\n"
                           for n, e in enumerate(order(events))), encoding="utf-8")
    return out


def test_a_proposal_of_a_deleted_member_is_outside_only_while_the_leader_is_stale(
        tmp_path: Path) -> None:
    """traces/checker/0013: leader 3 proposes replica 1, deleted by a reassignment, before it
    is told of the reassignment's leader epoch; the controller refuses it, so it is outside
    the model. The same proposal after the leader's LeaderAndIsr of that epoch, or the member
    added by the controller rather than proposed, is what the model does not allow, and is
    refused."""
    src = next(p for p in CHECKER_REGRESSIONS if p.stem.startswith("0013"))

    def index(events: list[dict[str, Any]], action: str, **match: object) -> int:
        return next(i for i, e in enumerate(events) if e["action"] == action
                    and e["instance"] == "t-0" and e["model"] == "LogStartOffset"
                    and all(e["args"].get(k) == v for k, v in match.items()))

    def after_becoming_leader(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        expand = events.pop(index(events, "ExpandIsr", r=1, brokerEpoch=11))
        become = index(events, "BecomeLeader", leader=3, leaderEpoch=3)
        return [*events[:become + 1], expand, *events[become + 1:]]

    def committed_not_proposed(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        i = index(events, "ExpandIsr", r=1, brokerEpoch=11)
        events[i] = {**events[i], "args": {**events[i]["args"],
                                           "cause": "AlterPartition committed"}}
        return events

    assert check_paths([src]).ok
    for order in (after_becoming_leader, committed_not_proposed):
        report = check_paths([_reordered(src, order, tmp_path / f"{order.__name__}.jsonl")])
        assert not report.ok, (order.__name__, report.summary())
        assert any(f.action == "ExpandIsr" and f.kind == "not enabled"
                   for f in report.failures), [f.format() for f in report.failures]


def test_an_empty_replica_added_to_the_isr_above_committed_records_is_refused(
        tmp_path: Path) -> None:
    """traces/checker/0014, with leader 2 appending a record that replica 3 fetches and the HW
    reaching before the proposal: replica 1, added by the reassignment with an empty log, then
    joins an ISR holding a committed record it lacks. The re-base on the larger replica set
    still checks the model's invariants, and CommittedDataOnIsr refuses it."""
    src = next(p for p in CHECKER_REGRESSIONS if p.stem.startswith("0014"))
    topic_id = "POwMCHAURTys08sCQzytNg"
    common = {"instance": "t-1", "model": "LogStartOffset", "trace": "fuzz-seed-3611", "v": 4,
              "time": 1700000115900}
    committed = [
        {**common, "action": "Append", "node": "broker-2",
         "args": {"records": 1, "replica": 2, "topicId": topic_id}, "changed": {"leo": {"2": 1}}},
        {**common, "action": "FollowerFetch", "node": "broker-3",
         "args": {"fetchedTo": 1, "leaderHw": 0, "leaderLogStart": 0, "replica": 3,
                  "topicId": topic_id}, "changed": {"leo": {"3": 1}}},
        {**common, "action": "AdvanceHW", "node": "broker-2",
         "args": {"known": {"2": 1, "3": 1}, "replica": 2, "topicId": topic_id},
         "changed": {"hw": {"2": 1}}},
    ]

    def with_a_committed_record(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [*events[:-1], *committed, events[-1]]

    assert check_paths([src]).ok
    report = check_paths([_reordered(src, with_a_committed_record, tmp_path / "c.jsonl")])
    assert not report.ok and not report.bad_input, report.summary()
    assert any(f.action == "ExpandIsr" and "CommittedDataOnIsr" in f.message
               for f in report.failures), [f.format() for f in report.failures]


def test_a_fetch_from_a_deposed_leader_is_outside_only_while_both_brokers_are_stale(
        tmp_path: Path) -> None:
    """traces/checker/0015: follower 2 takes start offset 1 from broker 3, a deposed leader
    that accepted a DeleteRecords, while leader 1's stays 0. As recorded it is outside the
    model: both brokers were last told of epoch 0, which broker 3 led. The same fetch after
    broker 2 was told of epoch 1 (broker 1's), or after broker 3 was told of epoch 2, or
    carrying a start offset broker 3's log never had, is refused."""
    src = next(p for p in CHECKER_REGRESSIONS if p.stem.startswith("0015"))
    topic_id = "QR5Jc6VLTe-uO9XQEGaV2g"

    def fetch(events: list[dict[str, Any]]) -> int:
        return next(i for i, e in enumerate(events) if e["action"] == "Intent"
                    and e["instance"] == "t-1" and e["args"]["action"] == "FollowerFetch"
                    and e["args"]["leaderLogStart"] == 1)

    def told(b: int, e: int, le: int, send: bool) -> Callable[[list[dict[str, Any]]],
                                                            list[dict[str, Any]]]:
        def order(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
            i = fetch(events)
            base = {"instance": "t-1", "model": "ControllerFencing", "time": events[i]["time"],
                    "trace": events[i]["trace"], "v": events[i]["v"]}
            request = {"b": b, "c": 1, "e": e, "le": le, "topicId": topic_id}
            sent = {**base, "action": "SendLeaderAndIsr", "node": "controller-1",
                    "args": request, "changed": {}}
            delivered = {**base, "action": "Deliver", "node": f"broker-{b}",
                         "args": {**request, "outcome": "accept", "result": "NONE",
                                  "type": "LeaderAndIsr"},
                         "changed": {"brokerControllerEpoch": {str(b): 1},
                                     "replicaEpoch": {str(b): le}}}
            return [*events[:i], *([sent] if send else []), delivered, *events[i:]]
        order.__name__ = f"broker_{b}_told_of_epoch_{le}"
        return order

    def another_start_offset(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        i = fetch(events)
        for e in events[i:i + 2]:
            e["args"]["leaderLogStart"] = 2
            values = {"ckptStart": {"2": 2}, "logStart": {"2": 2}}
            if e["action"] == "Intent":
                e["args"]["then"] = values
            else:
                e["changed"] = values
        return events

    report = check_paths([src])
    assert report.ok, report.summary()
    assert any("a fetch answered by a deposed leader" in reason for reason in report.outside)
    for order in (told(2, 1, 1, send=False), told(3, 2, 2, send=True), another_start_offset):
        report = check_paths([_reordered(src, order, tmp_path / f"{order.__name__}.jsonl")])
        assert not report.ok, (order.__name__, report.summary())
        assert [(f.model, f.action) for f in report.failures] == [
            ("LogStartOffset", "FollowerFetch")], [f.format() for f in report.failures]


def test_a_hw_counting_a_restarted_follower_is_taken_only_on_what_it_held(
        tmp_path: Path) -> None:
    """traces/checker/0016: leader 2 raises the HW to 3 counting follower 1 at 3, from a fetch
    of 1's earlier incarnation; 1 restarted after a power loss with nothing. Taken as the
    member's ISR drop (which the controller makes at its registration) then AdvanceHW. The same
    event counting 1 beyond what it held before the restart, or after 1's new incarnation has
    fetched, is refused."""
    src = next(p for p in CHECKER_REGRESSIONS if p.stem.startswith("0016"))

    def advance(events: list[dict[str, Any]]) -> int:
        return max(i for i, e in enumerate(events) if e["action"] == "AdvanceHW"
                   and e["instance"] == "s-0")

    def beyond_what_it_held(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        i = advance(events)
        events[i] = {**events[i], "args": {**events[i]["args"],
                                           "known": {"1": 4, "2": 4, "3": 4}},
                     "changed": {"hw": {"2": 4}}}
        return events

    def after_it_fetched(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        i = advance(events)
        fetch = {**events[i], "action": "FollowerFetch", "node": "broker-1",
                 "args": {"fetchedTo": 0, "leaderHw": 0, "leaderLogStart": 0, "replica": 1,
                          "topicId": events[i]["args"]["topicId"]},
                 "changed": {}}
        return [*events[:i], fetch, *events[i:]]

    assert check_paths([src]).ok
    for order in (beyond_what_it_held, after_it_fetched):
        report = check_paths([_reordered(src, order, tmp_path / f"{order.__name__}.jsonl")])
        assert not report.ok, (order.__name__, report.summary())
        assert any(f.action == "AdvanceHW" for f in report.failures), \
            [f.format() for f in report.failures]


def test_an_append_that_flushes_is_taken_only_when_it_flushed_the_whole_log(
        tmp_path: Path) -> None:
    """traces/checker/0017: an append and a fetch that flushed their log within the call are
    the append, then Flush to the new log end; one recording a flush short of its log end
    (which no append makes) is refused."""
    src = next(p for p in CHECKER_REGRESSIONS if p.stem.startswith("0017"))

    def short_flush(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        i = next(i for i, e in enumerate(events) if e["action"] == "Append"
                 and e["changed"].get("flushed", {}).get("1") == 3)
        events[i] = {**events[i], "changed": {**events[i]["changed"], "flushed": {"1": 2}}}
        return events

    _clean_but_refused_edited(src, short_flush, "Append", tmp_path)


def test_a_restart_left_waiting_at_the_end_is_excused_only_after_the_controller_dropped_it(
        tmp_path: Path) -> None:
    """traces/checker/0018: the trace ends while leader 3's restart waits for its ISR drop,
    after broker 3 registered again and the controller elected 2. Without that registration,
    or without that election, the restart is still refused at the end."""
    src = next(p for p in CHECKER_REGRESSIONS if p.stem.startswith("0018"))

    def without(action: str, **match: object) -> Callable[[list[dict[str, Any]]],
                                                           list[dict[str, Any]]]:
        def order(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
            i = max(i for i, e in enumerate(events) if e["action"] == action
                    and all(e["args"].get(k) == v for k, v in match.items()))
            return [*events[:i], *events[i + 1:]]
        order.__name__ = f"without_{action}"
        return order

    assert check_paths([src]).ok
    for order in (without("Register", b=3), without("ElectLeader", leader=2)):
        report = check_paths([_reordered(src, order, tmp_path / f"{order.__name__}.jsonl")])
        assert not report.ok, (order.__name__, report.summary())
        assert any(f.action == "CrashRestart" and "the trace ended" in f.message
                   for f in report.failures), [f.format() for f in report.failures]


def test_the_recorder_compares_a_replica_s_values_within_one_generation_of_its_topic(
        tmp_path: Path) -> None:
    """The recorder records the variables that changed since a replica's last event, per
    generation of the topic (traces/checker/0020): the first event of a new topic id records
    every variable, even after an event of the deleted generation under the same name."""
    from logwright.world.clock import VirtualClock
    from logwright.world.trace import open_trace

    recorder = open_trace(tmp_path / "t.jsonl", VirtualClock())
    old, new = {"replica": 3, "topicId": "OLD"}, {"replica": 3, "topicId": "NEW"}
    recorder.replica_step("broker-3", "t-2", 3, "Append", old, (2, 0, 0, 0, 0, 0))
    recorder.replica_step("broker-3", "t-2", 3, "Append", new, (2, 1, 0, 0, 0, 0))
    recorder.replica_step("broker-3", "t-2", 3, "Append", old, (2, 0, 0, 0, 0, 0))
    recorder.replica_step("broker-3", "t-2", 3, "Append", new, (2, 1, 0, 0, 0, 0))
    recorder.close()
    events = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()
              if '"Append"' in line]
    assert [sorted(e["changed"]) for e in events] == [
        ["ckptStart", "flushed", "hw", "leo", "logStart", "segStart"],
        ["ckptStart", "flushed", "hw", "leo", "logStart", "segStart"]], events



def test_a_flushing_fetch_after_a_settled_restart_is_refused_beyond_what_it_fetched(
        tmp_path: Path) -> None:
    """traces/checker/0022: the restarted follower's fetch to 6 that flushed is taken; the same
    event recording a flush to 7, beyond the records it fetched, is refused."""
    src = next(p for p in CHECKER_REGRESSIONS if p.stem.startswith("0022"))

    def flushed_beyond(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        i = len(events) - 1
        assert events[i]["action"] == "FollowerFetch"
        events[i] = {**events[i], "changed": {**events[i]["changed"], "flushed": {"2": 7}}}
        return events

    _clean_but_refused_edited(src, flushed_beyond, "FollowerFetch", tmp_path)


def _clean_but_refused_edited(src: Path, edit: Callable[[list[dict[str, Any]]],
                                                         list[dict[str, Any]]],
                              action: str, tmp_path: Path) -> None:
    """``src`` checks clean; edited by ``edit``, it is refused at an event of ``action``."""
    assert check_paths([src]).ok
    report = check_paths([_reordered(src, edit, tmp_path / f"{edit.__name__}.jsonl")])
    assert not report.ok and any(f.action == action for f in report.failures), \
        report.summary()


def test_a_restarted_follower_s_fetch_needs_the_controller_s_isr_drop_recorded(
        tmp_path: Path) -> None:
    """traces/checker/0023: follower 3 of s-0 restarted below the committed offset while its
    leader's ISR still showed it, and fetched after the controller's LeaderAndIsr to broker 3
    (seq 1661) showed the ISR {2}: taken as the ISR drop its restart waits for. The same
    fetch is refused when nothing shows that drop: the controller's LeaderAndIsrs keeping 3
    in the ISR (as a controller that kept a damaged replica would), sent by a deposed
    controller, or recorded without the ISR (as before the recorder carried it; the trace
    was kept open as tests/data/conformance_open/0001 then)."""
    src = next(p for p in CHECKER_REGRESSIONS if p.stem.startswith("0023"))

    def sends(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        found = [e for e in events if e["action"] == "SendLeaderAndIsr"
                 and e["instance"] == "s-0" and e["seq"] in (1649, 1661)]
        assert [e["args"]["isr"] for e in found] == [[2], [2]], found
        return found

    def controller_kept_3(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for e in sends(events):
            e["args"]["isr"] = [2, 3]
        return events

    def deposed_controller(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for e in sends(events):
            e["args"]["c"] = 3
        return events

    def isr_not_recorded(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for e in events:
            if e["action"] == "SendLeaderAndIsr":
                del e["args"]["isr"]
        return events

    for edit in (controller_kept_3, deposed_controller, isr_not_recorded):
        _clean_but_refused_edited(src, edit, "FollowerFetch", tmp_path)
        refused = [f for f in check_paths([tmp_path / f"{edit.__name__}.jsonl"]).failures
                   if f.model == "LogStartOffset"]  # (ControllerFencing's Deliver: c=4 sent)
        assert [(f.seq, f.instance, f.kind) for f in refused] == [(1674, "s-0", "not enabled")]
        assert "replica 3 restarted without committed records (below 1)" in refused[0].message


CONFORMANCE_OPEN = Path(__file__).resolve().parent / "data" / "conformance_open"
OPEN_TRACES: dict[str, str] = {}
"""Traces the checker refuses, kept out of traces/ (where every trace checks clean on both
engines) until triaged (docs/verification.md, 'Open findings'): file stem's number -> what was
seen. Empty now (tests/data/conformance_open/README.md); a new one is added with its reason."""


@pytest.mark.parametrize("stem", sorted(OPEN_TRACES) or [
    pytest.param("", marks=pytest.mark.skip(
        reason="no open trace: tests/data/conformance_open/ holds none (its README.md)"))])
def test_open_trace_check_failures_still_fail(stem: str) -> None:
    """Strict: each must still be refused; the day one checks clean, its entry moves to
    traces/checker/ (or traces/regressions/) with what fixed it."""
    trace = next(CONFORMANCE_OPEN.glob(f"{stem}-*.jsonl"))
    report = check_paths([trace])
    if report.ok:
        pytest.fail(f"{trace.name} now checks clean: {OPEN_TRACES[stem]}")
    pytest.xfail(OPEN_TRACES[stem])


def test_every_open_trace_has_its_reason() -> None:
    assert CONFORMANCE_OPEN.is_dir(), "the open findings' place (kept by its README.md)"
    assert sorted(p.stem[:4] for p in CONFORMANCE_OPEN.glob("*.jsonl")) == sorted(OPEN_TRACES)
