"""Every event a run records carries what traces/SCHEMA.md says it carries, with values that
agree with the rest of the trace (found by `make mutmut`: `logwright traces check` replays the
changed variables of the steps it knows, so an argument renamed, emptied or computed wrongly,
the node of an event, a bookkeeping event dropped, went unseen).

The runs are seeded simulated clusters with the trace on: ISR shrink and expansion around a
follower's crash, DeleteRecords that deletes whole segments on the leader and the followers,
a follower restarted below the leader's start offset (out of range), a topic deleted and
re-created, a zombie controller whose write the store refuses, a log dir failing under its
fetcher, a stray set aside and revived. The checks read the trace only."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from logwright.broker import BrokerConfig
from logwright.cluster import Cluster
from logwright.errors import Errors, KafkaError
from logwright.identity import TopicPartition
from logwright.world import Fault

Event = dict[str, Any]

NODE = re.compile(r"(broker|controller)-\d+")
PARTITION = re.compile(r".+-\d+")
ISR_CAUSES = {"LeaderAndIsr update", "AlterPartition proposed", "AlterPartition refused",
              "AlterPartition committed"}

# (model, action) -> the arguments traces/SCHEMA.md names (besides topicId, checked apart).
REQUIRED: dict[tuple[str, str], set[str]] = {
    ("LogStartOffset", "Append"): {"replica", "records"},
    ("LogStartOffset", "FollowerFetch"): {"replica", "leaderLogStart"},
    ("LogStartOffset", "AdvanceHW"): {"replica", "known"},
    ("LogStartOffset", "ShrinkIsr"): {"r", "cause", "knownLeo", "leaderLeo"},
    ("LogStartOffset", "ExpandIsr"): {"r", "cause", "knownLeo", "leaderLeo"},
    ("LogStartOffset", "DeleteRecords"): {"replica", "o"},
    ("LogStartOffset", "DeleteOldestSegment"): {"replica", "segments"},
    ("LogStartOffset", "CheckpointStartOffset"): {"replica"},
    ("LogStartOffset", "Flush"): {"replica"},
    ("LogStartOffset", "CrashRestart"): {"replica", "h"},
    ("LogStartOffset", "BecomeLeader"): {"leader", "leaderEpoch", "replicas"},
    ("LogStartOffset", "DeleteReplica"): {"replica"},
    ("LogStartOffset", "Truncate"): {"replica", "offset"},
    ("LogStartOffset", "ReviveReplica"): {"replica", "h"},
    ("ControllerFencing", "ElectController"): {"c"},
    ("ControllerFencing", "ElectLeader"): {"c", "outcome"},
    ("ControllerFencing", "Register"): {"b", "e"},
    ("ControllerFencing", "SendLeaderAndIsr"): {"c", "b", "e", "le", "isr"},
    ("ControllerFencing", "SendStopReplica"): {"c", "b", "e", "le"},
    ("ControllerFencing", "Deliver"): {"type", "c", "b", "e", "le", "outcome"},
    ("ControllerFencing", "ControllerEpochSeen"): {"b", "type", "c"},
    ("FetcherFailure", "LeaderAndIsr"): {"tp", "epoch"},
    ("FetcherFailure", "FetchOk"): {"tp", "epoch"},
    ("FetcherFailure", "FetchFenced"): {"tp", "epoch"},
    ("FetcherFailure", "StorageError"): {"tp", "epoch"},
    ("FetcherFailure", "StopReplica"): {"tp"},
    ("FetcherFailure", "ShutdownIdle"): {"f"},
    ("FetcherFailure", "Restart"): set(),
    ("StrayCleanup", "MarkStray"): {"b", "reason", "path"},
    ("StrayCleanup", "ReviveStray"): {"b", "reason", "path"},
    ("StrayCleanup", "DeferStrayDeletion"): {"b", "dir", "stray", "reason", "nextCheck"},
    ("StrayCleanup", "DeleteStray"): {"b", "dir", "stray", "reason", "renamedTo"},
}
INTENT_ARGS = {"DeleteRecords": [{"o", "then"}],
               "FollowerFetch": [{"leaderHw", "leaderLogStart", "fetchedTo", "then"},
                                 {"outOfRange", "leaderLogStart", "then"}],
               "DeleteOldestSegment": [{"segments", "then"}],
               "CheckpointStartOffset": [{"then"}],
               "RestartBelowStart": [{"offset", "then"}]}
"""The actions an Intent announces, and the arguments of theirs it carries besides ``replica``
and ``topicId``."""
INIT_ARGS = {"topicId", "replicas", "leader", "isr", "leaderEpoch", "controllerEpoch",
             "brokerEpochs"}
# Events about one partition, which name its topic id; the others are about a broker or all
# partitions at once.
WITHOUT_TOPIC_ID = {("ControllerFencing", a) for a in ("ElectController", "Register",
                                                       "ControllerEpochSeen")} | {
    ("FetcherFailure", "ShutdownIdle"), ("FetcherFailure", "Restart")}


def _config(lag_ms: int = 2_000) -> BrokerConfig:
    base = BrokerConfig()
    log = replace(base.log, initial_task_delay_ms=1_000, retention_check_interval_ms=2_000,
                  recovery_point_checkpoint_interval_ms=1_000)
    return replace(base, log=log, replica_lag_time_max_ms=lag_ms)


def _produce(c: Cluster, topic: str, partition: int, n: int, tag: str) -> None:
    for i in range(n):
        c.produce(topic, partition, [f"{tag}-{i:02d}".encode() * 6])
        c.advance_time(100)


def _read(path: Path) -> list[Event]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def isr_segments_and_recreation(seed: int, path: Path) -> list[Event]:
    """A follower crashes (the ISR shrinks), the leader's records are deleted past its end
    (whole segments go on the leader and the follower left), it restarts below the leader's
    start offset (out of range) and catches up (the ISR expands); then the topic is deleted
    and re-created."""
    c = Cluster.simulated(seed=seed, broker_config=_config(), trace=path)
    c.create_topic("r", 2, 3, configs={"segment.bytes": 200})
    _produce(c, "r", 0, 4, "before")
    _produce(c, "r", 1, 2, "other")
    leader = c.partition_state("r", 0).leader
    down = next(r for r in c.partition_state("r", 0).replicas if r != leader)
    c.crash_broker(down, power_loss=False)
    _produce(c, "r", 0, 6, "while-down")
    c.advance_time(5_000)
    result = c.delete_records({("r", 0): 8})
    assert result[("r", 0)].low_watermark == 8
    c.advance_time(3_000)
    c.restart_broker(down)
    c.advance_time(6_000)
    c.delete_topic("r")
    c.advance_time(5_000)
    c.create_topic("r", 1, 3)
    _produce(c, "r", 0, 2, "again")
    c.advance_time(3_000)
    c.close()
    return _read(path)


def zombie_controller(seed: int, path: Path) -> list[Event]:
    """A controller failover with the old one left running: its late write is refused."""
    c = Cluster.simulated(seed=seed, trace=path)
    c.create_topic("z", 1, 3)
    c.produce("z", 0, [b"before"])
    old = c.controller
    c.fail_controller(zombie=True)
    c.advance_time(3_000)
    with pytest.raises(KafkaError):
        old.create_topic("ghost", 1, 1)
    c.advance_time(1_000)
    c.close()
    return _read(path)


def fetcher_failure(seed: int, path: Path) -> list[Event]:
    """A follower's only log dir fails under its fetcher; the topic is deleted."""
    c = Cluster.simulated(seed=seed, log_dirs_per_broker=1, trace=path)
    c.create_topic("f", 2, 2)
    c.produce("f", 0, [b"a"])
    c.produce("f", 1, [b"b"])
    state = c.partition_state("f", 0)
    follower = next(r for r in state.replicas if r != state.leader)
    c.simulated_world.new_fs(f"broker-{follower}").inject_fault(
        c.log_dirs[follower][0], Fault.EIO)
    c.produce("f", 0, [b"c"])
    c.advance_time(3_000)
    c.delete_topic("f")
    c.advance_time(3_000)
    c.close()
    return _read(path)


def stray_revived(seed: int, path: Path) -> list[Event]:
    """A partition moved away from a broker while it is down: its log is set aside at its
    restart (a stray); moved back, the stray is revived from its data."""
    c = Cluster.simulated(seed=seed, trace=path)
    c.create_topic("keep", 2, 3)
    c.create_topic("m", 1, 3)
    c.produce("m", 0, [b"x" * 50] * 3)
    c.produce("keep", 0, [b"k"])
    c.advance_time(1_000)
    c.crash_broker(1, power_loss=False)
    c.reassign(json.dumps({"version": 1, "partitions": [
        {"topic": "m", "partition": 0, "replicas": [2, 3]}]}))
    c.advance_time(3_000)
    broker = c.restart_broker(1)
    c.run_until_idle()
    assert [s.tp for s in broker.log_manager.stray_logs()] == [TopicPartition("m", 0)]
    c.reassign(json.dumps({"version": 1, "partitions": [
        {"topic": "m", "partition": 0, "replicas": [2, 3, 1]}]}))
    c.advance_time(3_000)
    c.close()
    return _read(path)


def moved_after_delete_records(seed: int, path: Path) -> list[Event]:
    """Records deleted to the middle of a segment, then every replica moved to its other log
    dir: each future log begins at the batch holding the start offset, so each swap takes the
    replica's segments below it away (its Intent, then its DeleteOldestSegment)."""
    c = Cluster.simulated(seed=seed, log_dirs_per_broker=2, trace=path)
    c.create_topic("j", 1, 3, configs={"segment.bytes": 400})
    _produce(c, "j", 0, 6, "moved")
    assert c.delete_records({("j", 0): 4})[("j", 0)].low_watermark == 4
    c.advance_time(1_000)
    tp = TopicPartition("j", 0)
    for b in c.partition_state("j", 0).replicas:
        manager = c.brokers[b].log_manager
        here = manager.dir_of(tp)
        assert here is not None
        other = min(d for d in manager.dirs if d != here.path)
        assert c.alter_replica_log_dirs({("j", 0, b): other}) == {("j", 0, b): Errors.NONE}
    c.advance_time(3_000)
    c.close()
    return _read(path)


SCENARIOS = {"isr": isr_segments_and_recreation, "zombie": zombie_controller,
             "fetcher": fetcher_failure, "stray": stray_revived}


@pytest.fixture(scope="module", params=[(name, seed) for name in SCENARIOS for seed in (3, 8)],
                ids=lambda p: f"{p[0]}-{p[1]}")
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
        ) -> tuple[str, list[Event]]:
    name, seed = request.param
    path = tmp_path_factory.mktemp(name) / "t.jsonl"
    return name, SCENARIOS[name](seed, path)


def test_every_event_names_its_node_and_the_arguments_the_schema_gives(
        run: tuple[str, list[Event]]) -> None:
    _, events = run
    assert events[0]["action"] == "Header"
    for e in events[1:]:
        assert isinstance(e["node"], str) and NODE.fullmatch(e["node"]), e
        assert isinstance(e["instance"], str) and e["instance"], e
        key = (e["model"], e["action"])
        if e["model"] == "-" and e["action"] == "Intent":
            args = e["args"]
            assert PARTITION.fullmatch(e["instance"]) and e["changed"] == {}, e
            assert e["node"] == f"broker-{args['replica']}" and "topicId" in args, e
            assert set(args) - {"action", "replica", "topicId"} in INTENT_ARGS[args["action"]], e
            continue
        if e["model"] == "-":
            assert e["action"] in ("Init", "Removed") and PARTITION.fullmatch(e["instance"]), e
            assert e["node"].startswith("controller-") and e["changed"] == {}, e
            if e["action"] == "Init":
                assert set(e["args"]) == INIT_ARGS, e
            continue
        assert key in REQUIRED, f"an action the schema does not name: {e}"
        assert REQUIRED[key] <= set(e["args"]), e
        if key not in WITHOUT_TOPIC_ID and e["args"].get("outcome") != "refused":
            assert "topicId" in e["args"], e
        if e["model"] == "FetcherFailure":
            assert e["instance"] == e["node"] and e["node"].startswith("broker-"), e
        if e["model"] in ("LogStartOffset", "StrayCleanup"):
            assert PARTITION.fullmatch(e["instance"]) and e["node"].startswith("broker-"), e
        if "replica" in e["args"]:
            assert e["node"] == f"broker-{e['args']['replica']}", e
        if e["model"] == "StrayCleanup":
            assert e["node"] == f"broker-{e['args']['b']}" and e["changed"] == {}, e
            assert e["args"]["reason"] and "-stray" in e["args"]["path"], e


def test_a_replica_records_an_event_only_when_one_of_its_variables_changed(
        run: tuple[str, list[Event]]) -> None:
    _, events = run
    for e in events:
        if e["model"] == "LogStartOffset" and e["action"] != "CrashRestart":
            assert e["changed"], f"nothing changed, nothing to record: {e}"
        if e["model"] == "FetcherFailure" and e["action"] == "LeaderAndIsr":
            assert e["changed"] == {"knownEpoch": e["args"]["epoch"], "fetching": True,
                                    "failedEpoch": -1, "alive": True}, e
        if e["model"] == "FetcherFailure" and e["action"] == "StopReplica":
            assert e["changed"] == {"knownEpoch": -1, "fetching": False, "failedEpoch": -1}, e


def test_an_intent_is_followed_by_the_event_it_announces(
        run: tuple[str, list[Event]]) -> None:
    """Without a power loss in the middle, the next event of an Intent's replica of that
    partition is the announced one, with the arguments it announced and the changes it
    announced (``then``), which raise its start offset (its checkpointed one, for a
    CheckpointStartOffset; its first segment, for a JBOD swap) or, for a follower's fetch,
    its log end: no crash cuts a write in these runs."""
    _intents_are_followed(*run)


@pytest.mark.parametrize("seed", [3, 8])
def test_a_swaps_intent_is_followed_by_its_event(seed: int, tmp_path: Path) -> None:
    """The same of the swaps of JBOD moves (their other events are ReplicaMove's, whose
    arguments tests/test_trace_moves.py checks)."""
    _intents_are_followed("move", moved_after_delete_records(seed, tmp_path / "t.jsonl"))


def _intents_are_followed(name: str, events: list[Event]) -> None:
    announced = set()
    for i, e in enumerate(events):
        if e["action"] != "Intent":
            continue
        a = e["args"]
        announced.add(a["action"])
        after = next((x for x in events[i + 1:] if x["instance"] == e["instance"]
                      and x["node"] == e["node"] and x["model"] == "LogStartOffset"), None)
        if after is None or (after["action"] in ("CrashRestart", "DeleteReplica")
                             and a["action"] == "FollowerFetch" and "logStart" not in a["then"]):
            continue  # its fetch failed (a dir failing under it), or its broker stopped
        assert after["action"] == a["action"] and after["changed"] == a["then"], (e, after)
        assert {k: v for k, v in a.items() if k not in ("action", "then")} == after["args"], (
            e, after)
        r = str(a["replica"])
        start = "ckptStart" if a["action"] == "CheckpointStartOffset" else "logStart"
        if a.get("cause") == "JBOD move swapped in":
            start = "segStart"  # a swap moves the first segment up, not the start offset
        if a["action"] == "FollowerFetch" and start not in a["then"]:
            assert "leo" in a["then"], (e, after)  # a follower's fetch that appends records
            continue
        if a["action"] == "FollowerFetch" and "leo" in a["then"]:
            continue  # it appends records, and may also take the leader's start offset
        assert after["changed"][start][r] > max(
            (x["changed"][start][r] for x in events[:i]
             if x["instance"] == e["instance"] and x["model"] == "LogStartOffset"
             and r in x["changed"].get(start, {})), default=-1), (e, after)
    if name == "isr":  # its DeleteRecords raise the start offsets of leader and followers
        assert announced == {"DeleteRecords", "FollowerFetch"}
    if name == "move":  # every replica's swap, besides the DeleteRecords
        swaps = [e for e in events if e["action"] == "Intent"
                 and e["args"].get("cause") == "JBOD move swapped in"]
        assert {e["args"]["replica"] for e in swaps} == {1, 2, 3}, swaps


def _generations(events: list[Event]) -> dict[str, set[str]]:
    ids: dict[str, set[str]] = defaultdict(set)
    for e in events:
        if e["action"] == "Init":
            assert e["args"]["topicId"], e
            ids[e["instance"]].add(e["args"]["topicId"])
    return ids


def test_a_partitions_events_carry_the_topic_id_of_a_generation_it_had(
        run: tuple[str, list[Event]]) -> None:
    _, events = run
    ids = _generations(events)
    for e in events[1:]:
        if "topicId" not in e["args"]:
            continue
        topic_id = e["args"]["topicId"]
        inst = e["args"]["tp"] if e["model"] == "FetcherFailure" else e["instance"]
        assert topic_id in ids[inst], f"{e} names no topic id of {inst}: {ids[inst]}"


def test_isr_changes_name_the_member_the_cause_and_the_leos_the_leader_knew(
        run: tuple[str, list[Event]]) -> None:
    name, events = run
    leo: dict[tuple[str, str], int] = {}
    isr: dict[str, list[int]] = {}
    seen = set()
    for e in events:
        if e["model"] != "LogStartOffset":
            continue
        inst = e["instance"]
        for r, v in e["changed"].get("leo", {}).items():
            leo[(inst, r)] = v
        if e["action"] == "BecomeLeader":
            isr[inst] = e["changed"]["isr"]
        if e["action"] not in ("ShrinkIsr", "ExpandIsr"):
            continue
        seen.add(e["action"])
        a, leader = e["args"], e["node"].removeprefix("broker-")
        assert a["cause"] in ISR_CAUSES, e
        assert a["leaderLeo"] == leo.get((inst, leader), 0), e
        assert 0 <= a["knownLeo"] <= a["leaderLeo"], e
        assert a["knownLeo"] <= leo.get((inst, str(a["r"])), 0), e
        before, after = isr[inst], e["changed"]["isr"]
        if e["action"] == "ShrinkIsr":
            assert a["r"] in before and after == sorted(set(before) - {a["r"]}), e
        else:
            assert a["r"] not in before and after == sorted({*before, a["r"]}), e
        isr[inst] = after
    if name == "isr":
        assert seen == {"ShrinkIsr", "ExpandIsr"}


def test_deleted_segments_are_recorded_with_their_lengths(
        run: tuple[str, list[Event]]) -> None:
    name, events = run
    seg: dict[tuple[str, str], int] = {}
    deleting = set()
    for e in events:
        if e["model"] != "LogStartOffset":
            if e["action"] == "Removed":
                seg = {k: v for k, v in seg.items() if k[0] != e["instance"]}
            continue
        key = (e["instance"], str(e["args"].get("replica")))
        if e["action"] == "DeleteOldestSegment":
            lengths = e["args"]["segments"]
            assert lengths and all(n > 0 for n in lengths), e
            assert key in seg and sum(lengths) == e["changed"]["segStart"][key[1]] - seg[key], e
            deleting.add(e["node"])
        for r, v in e["changed"].get("segStart", {}).items():
            seg[(e["instance"], r)] = v
    if name == "isr":
        assert len(deleting) >= 2, "the leader and the follower left in the ISR"


def test_a_follower_restarted_at_the_leaders_start_records_it_as_out_of_range(
        run: tuple[str, list[Event]]) -> None:
    name, events = run
    starts = [e for e in events if e["action"] == "FollowerFetch"
              and "outOfRange" in e["args"]]
    for e in starts:
        a, r = e["args"], str(e["args"]["replica"])
        assert a["outOfRange"] is True, e
        assert e["changed"]["logStart"][r] == a["leaderLogStart"] == e["changed"]["leo"][r], e
    if name == "isr":
        assert len(starts) == 1


def test_the_controllers_events_tell_its_epochs_registrations_and_partitions(
        run: tuple[str, list[Event]]) -> None:
    name, events = run
    epoch = None
    registered: dict[str, int] = {}
    live: set[str] = set()
    refused = 0
    for e in events:
        a = e["args"]
        if e["action"] == "ElectController":
            assert e["instance"] == "*" and e["changed"] == {"controllerEpoch": a["c"]}, e
            assert epoch is None or a["c"] > epoch, e
            epoch = a["c"]
        elif e["action"] == "Register":
            b = str(a["b"])
            assert e["instance"] == "*" and e["changed"] == {
                "brokerEpoch": {b: a["e"]}, "brokerControllerEpoch": {b: 0}}, e
            assert registered.get(b, -1) < a["e"], e
            registered[b] = a["e"]
        elif e["action"] == "Init":
            assert a["controllerEpoch"] == epoch, "an ElectController before every Init"
            assert a["brokerEpochs"] == registered, e
            assert e["instance"] not in live, e
            live.add(e["instance"])
        elif e["action"] == "Removed":
            assert e["instance"] in live and a == {}, e
            live.discard(e["instance"])
        elif e["action"] == "ElectLeader" and e["model"] == "ControllerFencing":
            assert a["outcome"] in ("written", "refused"), e
            if a["outcome"] == "refused":
                refused += 1
                assert e["instance"] == "*" and e["changed"] == {} and a["c"] < epoch, e
            else:
                assert e["instance"] in live and "leader" in a, e
                assert set(e["changed"]) == {"leaderEpoch"}, e
    assert epoch is not None and registered
    if name == "zombie":
        assert refused == 1
    if name in ("isr", "fetcher"):
        assert any(e["action"] == "Removed" for e in events)


def test_a_re_created_partitions_replicas_record_every_variable_again(
        run: tuple[str, list[Event]]) -> None:
    _, events = run
    first: dict[tuple[str, str], Event] = {}
    for e in events:
        if e["action"] in ("Init", "Removed"):
            first = {k: v for k, v in first.items() if k[0] != e["instance"]}
        elif e["model"] == "LogStartOffset" and "replica" in e["args"]:
            key = (e["instance"], str(e["args"]["replica"]))
            if key not in first and e["action"] != "DeleteReplica":
                first[key] = e
                assert {"leo", "hw", "logStart", "segStart"} <= set(e["changed"]), e


def test_deliveries_answer_what_the_controller_sent(run: tuple[str, list[Event]]) -> None:
    _, events = run
    sent = set()
    for e in events:
        a = e["args"]
        if e["action"] in ("SendLeaderAndIsr", "SendStopReplica"):
            sent.add((e["instance"], e["action"].removeprefix("Send"), a["c"], a["b"], a["le"]))
            if e["action"] == "SendLeaderAndIsr":
                # The controller's ISR as the request carries it: distinct replicas, sorted.
                assert a["isr"] == sorted(set(a["isr"])), e
                assert all(isinstance(m, int) and m >= 0 for m in a["isr"]), e
        elif e["action"] == "Deliver":
            assert e["node"] == f"broker-{a['b']}", e
            assert (e["instance"], a["type"], a["c"], a["b"], a["le"]) in sent, e
            if a["outcome"] == "accept":
                assert isinstance(a["result"], str) and "error" not in a, e
                assert set(e["changed"]) == {"brokerControllerEpoch", "replicaEpoch"}, e
            else:
                assert a["outcome"] == "reject" and isinstance(a["error"], str), e
                assert e["changed"] == {}, e
        elif e["action"] == "ControllerEpochSeen":
            assert e["node"] == f"broker-{a['b']}" and e["instance"] == "*", e


def test_a_restarted_broker_records_each_of_its_logs_and_its_empty_fetchers(
        run: tuple[str, list[Event]]) -> None:
    name, events = run
    restarts = [i for i, e in enumerate(events) if e["action"] == "Restart"]
    sizes = [0]
    for i in restarts:
        e = events[i]
        assert e["args"] == {} and e["changed"] == {}, e
        loaded = {x["instance"] for x in events[:i] if x["action"] == "CrashRestart"
                  and x["node"] == e["node"] and x["time"] == e["time"]}
        # The logs the broker held before it went down, less the partitions deleted since.
        held, live = set(), set()
        for x in events[:i]:
            if x["action"] == "Init":
                live.add(x["instance"])
            elif x["action"] == "Removed":
                live.discard(x["instance"])
                held.discard(x["instance"])
            elif x["model"] == "LogStartOffset" and x["node"] == e["node"] \
                    and x["action"] != "CrashRestart":
                held.add(x["instance"])
        assert loaded >= held & live, (e, loaded, held)
        sizes.append(len(loaded))
    if name in ("isr", "stray"):
        assert max(sizes) >= 2, "a broker restarted with logs of two partitions"


def test_a_storage_error_under_the_fetcher_fails_the_partition_at_its_epoch(
        run: tuple[str, list[Event]]) -> None:
    name, events = run
    errors = [e for e in events if e["action"] == "StorageError"]
    for e in errors:
        assert e["changed"] == {"failedEpoch": e["args"]["epoch"], "fetching": False}, e
    if name == "fetcher":
        assert len(errors) == 1


def test_strays_set_aside_and_revived_are_traced(run: tuple[str, list[Event]]) -> None:
    name, events = run
    strays = [e for e in events if e["model"] == "StrayCleanup"]
    if name != "stray":
        return
    actions = [e["action"] for e in strays]
    assert actions[:2] == ["MarkStray", "ReviveStray"], actions
    mark, revive = strays[0], strays[1]
    assert mark["args"]["path"] == revive["args"]["path"]
    assert mark["args"]["topicId"] == revive["args"]["topicId"] != ""
    (gone,) = _generations(events)["m-0"]
    assert mark["args"]["topicId"] == gone
    (back,) = [e for e in events if e["action"] == "ReviveReplica"] or [None]
    assert back is not None and back["args"]["topicId"] == gone


def test_the_stray_scenario_revives_from_the_strays_data(tmp_path: Path) -> None:
    events = stray_revived(5, tmp_path / "t.jsonl")
    revived = [e for e in events if e["action"] == "ReviveReplica"]
    assert len(revived) == 1 and revived[0]["changed"]["leo"] == {"1": 3}
    assert revived[0]["node"] == "broker-1" and revived[0]["args"]["h"] >= 0


@pytest.mark.parametrize("failed", [1, 2])
def test_a_broker_restarted_with_a_failed_dir_records_the_logs_of_its_other_dir(
        failed: int, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    c = Cluster.simulated(seed=4, trace=path)
    c.create_topic("d", 6, 3)
    for p in range(6):
        c.produce("d", p, [b"v"])
    c.advance_time(1_000)
    c.crash_broker(2, power_loss=False)
    c.simulated_world.new_fs("broker-2").inject_fault(c.log_dirs[2][failed - 1], Fault.EIO)
    broker = c.restart_broker(2)
    online = {f"d-{tp.partition}" for state in broker.log_manager.dirs.values() if state.online
              for tp in state.logs}
    c.close()
    events = _read(path)
    restart = max(i for i, e in enumerate(events)
                  if e["action"] == "Restart" and e["node"] == "broker-2")
    loaded = {e["instance"] for e in events[:restart] if e["action"] == "CrashRestart"
              and e["time"] == events[restart]["time"]}
    assert online and loaded == online, (loaded, online)


@pytest.mark.parametrize("seed", [2, 7])
def test_a_dir_failure_records_a_storage_error_for_every_partition_fetched_into_it(
        seed: int, tmp_path: Path) -> None:
    """Broker ``b`` follows two partitions of two leaders into its one dir; only one of them
    receives records, whose append fails the dir: both leave their fetchers, both traced."""
    path = tmp_path / "t.jsonl"
    c = Cluster.simulated(seed=seed, log_dirs_per_broker=1, trace=path)
    c.create_topic("f", 3, 3)
    c.advance_time(1_000)
    leaders = {p: c.partition_state("f", p).leader for p in range(3)}
    b = leaders[0]
    followed = sorted(p for p in range(3) if leaders[p] != b)
    c.simulated_world.new_fs(f"broker-{b}").inject_fault(c.log_dirs[b][0], Fault.EIO)
    c.produce("f", followed[0], [b"a"], acks=1)
    c.advance_time(3_000)
    c.close()
    errors = [e for e in _read(path) if e["action"] == "StorageError"]
    assert sorted(e["args"]["tp"] for e in errors) == [f"f-{p}" for p in followed]
    assert {e["node"] for e in errors} == {f"broker-{b}"}
