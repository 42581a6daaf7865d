"""The LeaderElection model's RecoveryPicksDivergentLogOverAShortCopy on the simulated cluster
(spec/README.md, LeaderElection, "The lineage"; ``FORMER_VIOLATIONS`` in
spec/z3/leader_election.py): once a regression the implementation reached, now a test that it
does not.

A follower records its leader's epoch only once its log reaches the offset that epoch began at
(``_follow_epoch``, fetch_adapters.py). A follower that copied the leader's log only partway to
that offset holds the acknowledged records it copied under the epoch of its last record; a
divergent log written in a later epoch, before those records were acknowledged, ranked above it
when a recovery election compared last epochs, and the election picked the divergent log
although an acknowledger held the records, with nothing reporting the loss as unclean. The
election now ranks first how far each log agrees with the partition's lineage (the latest
leader's leader epoch cache, which that leader told the controller before its high watermark
could advance in its epoch): the short copy agrees up to its end, the divergent log not at all.
"""

from __future__ import annotations

import pytest

from logwright import Cluster
from logwright.controller.metrics import RECOVERY_ELECTIONS, UNCLEAN_ELECTIONS
from logwright.world.simfs import Fault
from tests.recovery_scenarios import SESSION_MS

# Two records of this size are one batch each and together exceed replica.fetch.max.bytes
# (1 MiB, the default), so a follower's fetch from offset 0 takes X alone.
BIG = 600_000
X, Y, D = b"X" * BIG, b"Y" * BIG, b"D" * BIG


def _copy(c: Cluster, broker_id: int) -> list[bytes]:
    """The records of ``broker_id``'s replica of t-0 (its log, committed or not)."""
    part = c.broker(broker_id).replica_manager.describe()[c.partition_state("t", 0).tp]
    return [r.value for _, r in part.log.read_records() if r.value is not None]


def _read(c: Cluster) -> list[bytes]:
    """What a consumer reads of t-0 from offset 0 (committed records only), each record by its
    first byte: b"X", b"Y" or b"D"."""
    return [(r.value or b"")[:1] for r in c.fetch("t", 0, 0, max_bytes=4 * BIG)]


def _latest_epoch(c: Cluster, broker_id: int) -> int | None:
    part = c.broker(broker_id).replica_manager.describe()[c.partition_state("t", 0).tp]
    return part.log.latest_epoch


def _fail_dir(c: Cluster, broker_id: int) -> str:
    """Fail the log dir holding ``broker_id``'s replica of t-0 (EIO on every operation), and
    let time pass until the controller has taken that replica out of the ISR; returns the dir."""
    tp = c.partition_state("t", 0).tp
    held = c.broker(broker_id).log_manager.dir_of(tp)
    assert held is not None
    c.simulated_world.new_fs(f"broker-{broker_id}").inject_fault(held.path, Fault.EIO)
    for _ in range(60):
        c.advance_time(500)
        if broker_id not in c.partition_state("t", 0).isr:
            return held.path
    pytest.fail(f"broker {broker_id}'s failed dir never took its replica out of the ISR")


def _replace_dir(c: Cluster, broker_id: int, path: str) -> None:
    """Stop ``broker_id``, repair its failed dir ``path`` with the partition's data gone (a
    replaced disk, as the model's DirFailure loses the copies) and start it again."""
    fs = c.simulated_world.new_fs(f"broker-{broker_id}")
    c.crash_broker(broker_id, power_loss=False)
    fs.clear_fault(path)
    fs.rmtree(f"{path}/t-0")
    c.restart_broker(broker_id)


def test_recovery_keeps_acknowledged_records_a_short_copy_holds() -> None:
    """Replicas in assignment order; ONE and TWO are the first two (which of them plays the
    model's 1 and which its 2 is decided by which the controller puts into the ELR), THREE the
    third. With seed 7 the replicas are (2, 3, 1): ONE is broker 3 (the follower that copied
    X), TWO broker 2 (the leader that wrote it; the model's 1 and 2 swapped, which changes
    nothing: both hold [X] with epoch 0 in their caches), THREE broker 1. Steps (the model's in
    brackets; the records are big: one batch each, a follower's
    fetch from offset 0 takes only the first):

    - The leader writes X (epoch 0) and the second replica copies it; THREE is cut off from the
      leader and never gets it. [Produce, Replicate(2)]
    - The first two shut down cleanly and are fenced: THREE, the live ISR member, leads (epoch
      2) with an empty log; the one fenced last, TWO, joins the ELR. THREE writes D at X's
      offset 0, acks=1, never acknowledged by acks=all. [CleanShutdown x2, FenceBroker x2,
      Produce]
    - TWO restarts cleanly (still in the ELR), cut off from THREE so it keeps X; THREE shuts
      down cleanly and is fenced: TWO leads from the ELR (epoch 3, starting at offset 1).
      [Register(2), CleanShutdown(3), FenceBroker(3)]
    - ONE restarts with X, follows epoch 3 (its log reaches the epoch start 1) and rejoins the
      ISR; Y is produced with acks=all and acknowledged at offset 1: X and Y are committed, held
      by ONE and TWO. (The model produces Y before ONE restarts and the HW passes both once ONE
      rejoins; an acks=all produce is refused while the ISR is TWO alone, so it comes after
      the rejoin here. Same state.) [Produce, Register(1), Replicate(1), IsrExpand(1),
      AdvanceHW]
    - ONE's dir fails: the controller takes it out of the ISR and TWO leads on alone in epoch 4,
      which begins at offset 2. ONE's dir is replaced (its copies gone) and ONE restarts with an
      empty log, fetches X alone (one batch; Y does not fit in the same fetch), and is then cut
      off from TWO: its log [X] is short of epoch 4's start, so its cache holds epoch 0 only.
      [DirFailure(1), Register(1), Replicate(1)]
    - TWO's dir fails and is replaced: the ISR and the ELR are empty. TWO reports its empty
      log, ONE [X] (last epoch 0, end 1), THREE restarts with D (last epoch 2, end 1). Ranked
      by last epoch, the recovery election picked THREE, and offset 0 read D: X, acknowledged
      and held by ONE, was lost, and no unclean election counted it. Now the lineage (TWO's
      cache as it took up epoch 4: epoch 0 from 0, 3 from 1, 4 from 2) ranks ONE first (X
      agrees with it; D does not): ONE leads and offset 0 reads X. Y, which both its
      acknowledgers lost with their dirs, is gone: no election can bring it back.
      [DirFailure(2), Register(2), ReportLogEnd(1), Register(3)]
    """
    c = Cluster.simulated(brokers=3, seed=7)
    c.create_topic("t", 1, 3, configs={"min.insync.replicas": 2})
    assert c.run_until_idle()
    first, second, three = c.partition_state("t", 0).replicas
    assert c.partition_state("t", 0).leader == first
    c.partition_network(first, three)
    assert c.produce("t", 0, [X], acks=1) == 0
    c.advance_time(300)
    assert _copy(c, first) == _copy(c, second) == [X] and _copy(c, three) == []

    c.broker(first).shutdown()
    c.broker(second).shutdown()
    c.advance_time(SESSION_MS + 2_000)
    state = c.partition_state("t", 0)
    assert state.leader == three and state.isr == (three,) and len(state.elr) == 1
    (two,) = state.elr
    one = first if two == second else second
    assert c.produce("t", 0, [D], acks=1) == 0
    c.advance_time(300)
    assert _copy(c, three) == [D] and _latest_epoch(c, three) == state.leader_epoch == 2

    c.partition_network(two, three)  # TWO keeps X: it never fetches from THREE
    c.restart_broker(two)
    c.advance_time(300)
    c.broker(three).shutdown()
    c.advance_time(SESSION_MS + 2_000)
    state = c.partition_state("t", 0)
    assert state.leader == two and state.isr == (two,) and _copy(c, two) == [X]
    assert state.leader_epoch == 3

    c.restart_broker(one)
    for _ in range(5_000):
        c.advance_time(1)
        if one in c.partition_state("t", 0).isr:
            break
    else:
        pytest.fail("ONE never rejoined the ISR")
    assert c.produce("t", 0, [Y], acks="all") == 1  # acknowledged by ONE and TWO
    c.advance_time(300)
    assert _copy(c, one) == _copy(c, two) == [X, Y]
    assert _read(c) == [b"X", b"Y"], "committed"

    path = _fail_dir(c, one)
    state = c.partition_state("t", 0)
    assert state.leader == two and state.isr == (two,) and state.elr == ()
    assert state.leader_epoch == 4  # TWO's log ends at 2: the epoch begins there
    _replace_dir(c, one, path)
    for _ in range(2_000):  # until ONE's fetch from offset 0 brought X
        c.advance_time(1)
        if c.broker(one).replica_manager.describe().get(state.tp) is not None \
                and _copy(c, one):
            break
    else:
        pytest.fail("ONE never copied X")
    c.partition_network(one, two)
    c.advance_time(2_000)
    assert _copy(c, one) == [X], "a copy short of the leader's epoch start (2)"
    assert _latest_epoch(c, one) == 0

    path = _fail_dir(c, two)
    state = c.partition_state("t", 0)
    assert state.isr == () and state.elr == ()
    _replace_dir(c, two, path)
    c.advance_time(3_000)  # ONE reports in its heartbeats, TWO in its registration
    state = c.partition_state("t", 0)
    # TWO's log when it took up epoch 4: X (epoch 0), Y (epoch 3), epoch 4 from offset 2.
    assert state.lineage == ((0, 0), (3, 1), (4, 2))
    # (broker, agreeing with the lineage up to, last epoch, end): ONE's X lies on it.
    assert set(state.recovery_log_ends) == {(one, 1, 0, 1), (two, 0, -1, 0)}
    c.restart_broker(three)  # reports (2, 1): D's epoch
    c.heal_network()
    assert c.run_until_idle()
    assert c.metrics()[RECOVERY_ELECTIONS] == 1 and c.metrics()[UNCLEAN_ELECTIONS] == 0
    assert c.partition_state("t", 0).leader == one, (
        f"broker {c.partition_state('t', 0).leader} (ONE is {one}, THREE {three}) leads after "
        f"the recovery election")
    # X, which ONE holds, is kept; Y was lost by both its acknowledgers (their dirs failed), so
    # no replica holds it and no election can bring it back.
    assert _read(c) == [b"X"]
