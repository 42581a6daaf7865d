"""The Hypothesis state machine of the simulated cluster: the fuzzer's alphabet.

Every user action the facade has: produce (acks 0, 1 and all), fetch, list offsets, delete
records (KIP-107), create a topic, delete one, delete and re-create one at once, reassign, change
a topic's configs. Every
fault: a crash (process kill, or power loss), a power loss right after any of a broker's file
system operations during a step, a restart with the failed dirs repaired or still failed, a failed
log dir, controller failover (with zombies), a network partition between any two nodes, message
loss, duplication and reordering, and time. Each rule is recorded as a step
(``logwright.verify.cluster_run``) and performed by the same code that replays traces, so a
failure Hypothesis shrinks is saved and replayed step for step (``logwright.verify.fuzz``).
model_tests/ runs it as a test, bench/ measures its steps per second; it needs hypothesis (the
``dev`` extra).

The properties are ``ClusterRun.check`` after every step and ``repair_and_settle`` at settle
points (see that module). Every fault may strike at any time, in any interleaving: crashes with
and without power loss, dir failures, restarts with dirs still failed, controller failovers and
network faults, reassignments among them. The promise about acknowledged (acks=all) records:
none is lost unless every replica that held it lost it (a power loss or a failed dir took its
copy), and then only with a recovery or unclean election reported for the partition
(docs/cluster.md, "Eligible leader replicas"); until a replica eligible to lead is back, the
partition is offline. ``unclean.leader.election.enable`` is not in the alphabet: it gives up
acks=all by design. Retention is left long (no record gets old enough within a run), so no
record leaves a log except by a fault or a DeleteRecords: the run books what each DeleteRecords
asked and acknowledged, so that records below an acknowledged low watermark are legitimately
gone and must never be served again (``ClusterRun``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from logwright.verify.cluster_run import ClusterRun, Step

BROKERS = (1, 2, 3)
TOPICS = ("s", "t")
#: The fuzzed cluster. Orphan removal runs on a small scale (a stray older than a minute may go
#: half a minute after it was set aside, checked every half minute) so that ``advance`` reaches
#: it; the topics keep every record (retention.ms -1), so the broker default retention, which
#: orphan removal's age guard reads, never trims a live log.
CLUSTER: dict[str, Any] = {
    "brokers": 3, "log_dirs_per_broker": 2, "max_delay_ms": 10,
    "broker_properties": {"log.retention.ms": "60000",
                          "orphan.partition.removal.delay.ms": "30000",
                          "log.retention.check.interval.ms": "30000"},
    "topic_configs": {"retention.ms": -1},
}

#: Topic config changes the alphabet makes (set, then reverted by a delete of the same key).
CONFIG_CHANGES: tuple[dict[str, Any], ...] = (
    {"segment.bytes": 200}, {"segment.index.bytes": 16, "index.interval.bytes": 0},
    {"min.insync.replicas": 2}, {"min.insync.replicas": 1}, {"file.delete.delay.ms": 0},
    {"max.message.bytes": 40}, {"cleanup.policy": "compact"}, {"retention.ms": -1},
    {"retention.ms": 20_000}, {"flush.messages": 1},
)

#: Rules a campaign may leave out because a known open defect makes them fail: none today.
#: (Deleting a topic and re-creating it at once, ``recreate_topic``, and creating a name that
#: was deleted before, ``reuse_name``, were, until issue 10's topic identity; restarting with a
#: dir still failed, ``restart_with_failed_dirs``, never failed a campaign.) ``avoid`` still
#: accepts only these names.
KNOWN_DEFECT_RULES: frozenset[str] = frozenset()


def _ready(self: ClusterMachine) -> bool:
    return hasattr(self, "run")


class ClusterMachine(RuleBasedStateMachine):
    """Random client traffic, topic changes and faults against three brokers."""

    #: Rule names this machine does not use (a narrower campaign); empty: the whole alphabet.
    avoid: ClassVar[frozenset[str]] = frozenset()
    #: Whether the runs check the LogStartOffset, ControllerFencing, FetcherFailure and
    #: StrayCleanup projections after every event (``logwright fuzz --light`` turns them off).
    per_event_models: ClassVar[bool] = True
    #: The run of the most recent example (the campaign saves its steps after a failure).
    last_run: ClassVar[ClusterRun | None] = None

    run: ClusterRun

    @initialize(seed=st.integers(0, 2**16))
    def start(self, seed: int) -> None:
        self.run = ClusterRun({**CLUSTER, "seed": seed}, event=event,
                              per_event_models=self.per_event_models)
        ClusterMachine.last_run = self.run
        self.counter = 0
        self.run.apply({"op": "create_topic", "topic": "s", "partitions": 3,
                        "replication_factor": 3})

    # ---- helpers -----------------------------------------------------------------------------

    def _do(self, step: Step) -> None:
        self.run.apply(step)

    def _values(self, n: int) -> list[str]:
        vals = [f"m{self.counter + i}" for i in range(n)]
        self.counter += n
        return vals

    def _topic(self, data: st.DataObject) -> str | None:
        live = sorted(self.run.topics)
        return data.draw(st.sampled_from(live), label="topic") if live else None

    def _partition(self, data: st.DataObject) -> tuple[str, int] | None:
        topic = self._topic(data)
        if topic is None:
            return None
        p = data.draw(st.integers(0, self.run.topics[topic].partitions - 1), label="partition")
        return topic, p

    def _allowed(self, name: str) -> bool:
        return name not in self.avoid

    # ---- user actions --------------------------------------------------------------------------

    @precondition(_ready)
    @rule(data=st.data(), n=st.integers(1, 3), acks=st.sampled_from([-1, -1, 1, 0]))
    def produce(self, data: st.DataObject, n: int, acks: int) -> None:
        where = self._partition(data)
        if where is not None:
            self._do({"op": "produce", "topic": where[0], "partition": where[1],
                      "values": self._values(n), "acks": acks})

    @precondition(_ready)
    @rule(data=st.data(), n=st.integers(1, 3))
    def produce_acks_all(self, data: st.DataObject, n: int) -> None:
        """More traffic: records acknowledged with acks=all are what the properties guard."""
        self.produce(data, n, -1)

    @precondition(_ready)
    @rule(data=st.data())
    def fetch(self, data: st.DataObject) -> None:
        where = self._partition(data)
        if where is not None:
            self._do({"op": "fetch", "topic": where[0], "partition": where[1], "offset": 0})

    @precondition(_ready)
    @rule(data=st.data(), which=st.sampled_from(["earliest", "latest"]))
    def list_offsets(self, data: st.DataObject, which: str) -> None:
        where = self._partition(data)
        if where is not None:
            self._do({"op": "list_offsets", "topic": where[0], "partition": where[1],
                      "which": which})

    @precondition(_ready)
    @rule(data=st.data())
    def delete_records(self, data: st.DataObject) -> None:
        """DeleteRecords below an offset up to just past the highest acknowledged one (so
        some are above the HW: OFFSET_OUT_OF_RANGE)."""
        where = self._partition(data)
        if where is None:
            return
        acked = self.run.topics[where[0]].acked[where[1]]
        top = max(acked, default=-1) + 2
        offset = data.draw(st.integers(0, top), label="offset")
        self._do({"op": "delete_records", "topic": where[0], "partition": where[1],
                  "offset": offset})

    @precondition(_ready)
    @rule(name=st.sampled_from(TOPICS), partitions=st.integers(1, 3), rf=st.integers(2, 3))
    def create_topic(self, name: str, partitions: int, rf: int) -> None:
        if name in self.run.retired and not self._allowed("reuse_name"):
            return
        if name not in self.run.topics and self.run.cluster.store.topic(name) is None:
            self._do({"op": "create_topic", "topic": name, "partitions": partitions,
                      "replication_factor": rf})

    @precondition(_ready)
    @rule(data=st.data())
    def delete_topic(self, data: st.DataObject) -> None:
        topic = self._topic(data)
        if topic is not None and self._allowed("delete_topic"):
            self._do({"op": "delete_topic", "topic": topic})

    @precondition(_ready)
    @rule(data=st.data(), partitions=st.integers(1, 3), rf=st.integers(2, 3))
    def recreate_topic(self, data: st.DataObject, partitions: int, rf: int) -> None:
        topic = self._topic(data)
        if topic is not None and self._allowed("recreate_topic"):
            self._do({"op": "recreate_topic", "topic": topic, "partitions": partitions,
                      "replication_factor": rf})

    @precondition(_ready)
    @rule(data=st.data(), change=st.sampled_from(CONFIG_CHANGES), revert=st.booleans())
    def alter_configs(self, data: st.DataObject, change: dict[str, Any], revert: bool) -> None:
        topic = self._topic(data)
        if topic is None:
            return
        if revert:
            self._do({"op": "alter_configs", "topic": topic, "set": {}, "delete": sorted(change)})
        else:
            self._do({"op": "alter_configs", "topic": topic, "set": dict(change), "delete": []})

    @precondition(_ready)
    @rule(data=st.data(),
          replicas=st.permutations(BROKERS).flatmap(
              lambda order: st.integers(2, 3).map(lambda n: list(order[:n]))))
    def reassign(self, data: st.DataObject, replicas: list[int]) -> None:
        """Move a partition (shrinking to two replicas or reordering three), whatever faults
        are pending."""
        where = self._partition(data)
        if where is not None:
            self._do({"op": "reassign", "topic": where[0], "partition": where[1],
                      "replicas": replicas})

    @precondition(_ready)
    @rule(data=st.data(), b=st.sampled_from(BROKERS), j=st.integers(1, 2))
    def alter_log_dir(self, data: st.DataObject, b: int, j: int) -> None:
        """Move broker ``b``'s replica of a partition to its dir ``j`` (a JBOD move, or a
        no-op when it is there, or a remembered choice when it does not host it); the copy
        and the swap race the steps after it, crashes and dir failures included."""
        where = self._partition(data)
        if where is not None:
            self._do({"op": "alter_log_dir", "topic": where[0], "partition": where[1],
                      "broker": b, "dir": j})

    # ---- faults --------------------------------------------------------------------------------

    @precondition(_ready)
    @rule(b=st.sampled_from(BROKERS), data=st.data())
    def crash(self, b: int, data: st.DataObject) -> None:
        if not self.run.running(b):
            return
        power = data.draw(st.booleans(), label="power_loss")
        event("crash with power loss" if power else "crash, page cache kept")
        self._do({"op": "crash", "broker": b, "power_loss": power})

    @precondition(_ready)
    @rule(b=st.sampled_from(BROKERS), after_ops=st.integers(1, 40), data=st.data())
    def crash_during(self, b: int, after_ops: int, data: st.DataObject) -> None:
        """Broker ``b``'s machine loses power right after its ``after_ops``-th file system
        operation of the next action (its own restart and recovery, a produce, a topic
        change, time passing)."""
        if not self.run.running(b):
            if any(x == b for x, _ in self.run.faulted):
                return  # the restart rules decide about failed dirs
            nested: Step = {"op": "restart", "broker": b, "repair": True}
        else:
            kind = data.draw(st.sampled_from(["advance", "produce", "alter_configs",
                                              "delete_topic", "delete_records"]),
                             label="during")
            where = self._partition(data)
            if kind == "advance" or where is None:
                nested = {"op": "advance", "ms": data.draw(st.sampled_from([100, 2_000]))}
            elif kind == "produce":
                nested = {"op": "produce", "topic": where[0], "partition": where[1],
                          "values": self._values(2), "acks": -1}
            elif kind == "delete_records":
                acked = self.run.topics[where[0]].acked[where[1]]
                nested = {"op": "delete_records", "topic": where[0], "partition": where[1],
                          "offset": data.draw(st.integers(0, max(acked, default=-1) + 2),
                                              label="offset")}
            elif kind == "alter_configs":
                nested = {"op": "alter_configs", "topic": where[0],
                          "set": {"segment.bytes": 100}, "delete": []}
            else:
                if not self._allowed("delete_topic"):
                    return
                nested = {"op": "delete_topic", "topic": where[0]}
        self._do({"op": "crash_during", "broker": b, "after_ops": after_ops, "step": nested})

    @precondition(_ready)
    @rule(b=st.sampled_from(BROKERS))
    def restart(self, b: int) -> None:
        """Restart a broker that is down, its failed dirs repaired first."""
        if not self.run.running(b):
            self._do({"op": "restart", "broker": b, "repair": True})

    @precondition(_ready)
    @rule(b=st.sampled_from(BROKERS))
    def restart_with_failed_dirs(self, b: int) -> None:
        """Restart a broker while its failed dirs are still failed: faults are not cleared
        before a restart. A running broker with a failed dir is crashed first (page cache
        kept), once no damaged replica is still counted in sync, so the rule fires whenever a
        dir has failed rather than only after a separate crash."""
        if not any(x == b for x, _ in self.run.faulted):
            return
        if self.run.running(b):
            event("crash with a dir failed")
            self._do({"op": "crash", "broker": b, "power_loss": False})
        event("restart with a dir still failed")
        self._do({"op": "restart", "broker": b, "repair": False})

    @precondition(_ready)
    @rule(b=st.sampled_from(BROKERS), j=st.integers(1, 2))
    def fail_dir(self, b: int, j: int) -> None:
        if self.run.running(b):
            self._do({"op": "fail_dir", "broker": b, "dir": j})

    @precondition(_ready)
    @rule(zombie=st.booleans())
    def fail_controller(self, zombie: bool) -> None:
        if len(self.run.cluster.controllers) < 4:
            self._do({"op": "fail_controller", "zombie": zombie})

    @precondition(_ready)
    @rule(pair=st.sampled_from([(1, 2), (1, 3), (2, 3), (1, "controller"), (2, "controller"),
                                (3, "controller"), (1, "client"), (2, "client"),
                                (3, "client")]))
    def cut(self, pair: tuple[int, int | str]) -> None:
        """A network partition between two nodes (two brokers, a broker and the active
        controller, or a broker and the client)."""
        self._do({"op": "cut", "a": pair[0], "b": pair[1]})

    @precondition(lambda self: _ready(self) and self.run.network_disturbed())
    @rule()
    def heal(self) -> None:
        self._do({"op": "heal"})

    @precondition(_ready)
    @rule(drop=st.sampled_from([0.0, 0.05, 0.2]), dup=st.sampled_from([0.0, 0.1, 0.3]),
          spread=st.sampled_from([10, 50]))
    def network(self, drop: float, dup: float, spread: int) -> None:
        """Message loss, duplication and reordering (wider delays) until the next heal."""
        self._do({"op": "network", "drop_rate": drop, "duplicate_rate": dup,
                  "max_delay_ms": spread})

    @precondition(_ready)
    @rule(ms=st.sampled_from([100, 2_000, 12_000, 70_000]))
    def advance(self, ms: int) -> None:
        self._do({"op": "advance", "ms": ms})

    @precondition(_ready)
    @rule()
    def repair_and_settle(self) -> None:
        """Heal the network, repair disks, restart every broker: then every live replica
        catches up, every assigned replica exists, a consumer reads every acknowledged
        record."""
        self._do({"op": "repair_and_settle"})

    # ---- properties ----------------------------------------------------------------------------

    @invariant()
    def properties_hold(self) -> None:
        if _ready(self):
            self.run.check()
