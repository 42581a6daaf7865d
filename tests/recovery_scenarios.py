"""The diverged logs the recovery election tests start from (the LeaderElection model's
behaviours beyond its .cfg's epoch bound, played on the simulated cluster).

A, B, C are the replicas in assignment order, A leading. X (epoch 0) reaches A and C, never B;
A goes away; B leads epoch 1 with an empty log and writes Y at offset 0; B shuts down cleanly
and C leads epoch 2, its epoch starting at offset 1, after X. Offset 0 thus holds X on A and C
and Y on B, and only X may ever be read there once it is committed.
"""

from __future__ import annotations

from logwright import Cluster
from logwright.controller.metrics import RECOVERY_ELECTIONS, UNCLEAN_ELECTIONS

SESSION_MS = 9_000 + 2_000  # broker.session.timeout.ms and one heartbeat


def diverge(c: Cluster, a_power_loss: bool) -> tuple[int, int, int]:
    """Play the prefix above on ``c``; returns (A, B, C). A loses X at a power loss and restarts
    (``a_power_loss``), or shuts down cleanly, keeping X, and stays down. C never fetches from B
    (the network between them is cut), and neither does A while B leads."""
    c.create_topic("t", 1, 3, configs={"min.insync.replicas": 2})
    assert c.run_until_idle()
    a, b, other = c.partition_state("t", 0).replicas
    assert c.partition_state("t", 0).leader == a
    c.partition_network(a, b)
    c.produce("t", 0, [b"X"], acks=1)
    c.advance_time(300)
    c.partition_network(other, b)  # C keeps X: it never fetches from B
    if a_power_loss:
        c.crash_broker(a, power_loss=True)
        c.restart_broker(a)
        c.advance_time(300)
    else:
        c.broker(a).shutdown()  # clean: A keeps X
        c.advance_time(SESSION_MS + 2_000)
    assert c.partition_state("t", 0).leader == b
    assert c.produce("t", 0, [b"Y"], acks=1) == 0
    c.advance_time(300)
    c.broker(b).shutdown()
    c.advance_time(SESSION_MS + 2_000)
    assert c.partition_state("t", 0).leader == other
    return a, b, other


def recover_and_read_x(c: Cluster, *restarts: int) -> None:
    """Restart ``restarts`` in order, heal the network, restart B's broker (the last argument):
    one recovery election and no unclean one, after which offset 0 reads X."""
    *first, b = restarts
    for broker_id in first:
        c.restart_broker(broker_id)
    c.heal_network()
    c.restart_broker(b)
    assert c.run_until_idle()
    assert c.metrics()[RECOVERY_ELECTIONS] == 1 and c.metrics()[UNCLEAN_ELECTIONS] == 0
    assert [(r.offset, r.value) for r in c.fetch("t", 0, 0)] == [(0, b"X")]
