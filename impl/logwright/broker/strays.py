"""Which logs a broker sets aside as strays (KIP-550), decided apart from doing it.

A control request's *version* is the pair (controller epoch, correlation id): within one
controller epoch a controller's correlation ids grow in the order it sends
(``controller/control.py``), so versions order the decisions of the controllers, oldest first.
A broker remembers, per partition name, the version of the newest LeaderAndIsr or StopReplica it
applied for that name (``ReplicaManager.applied_versions``, in memory only: a restarted broker's
earlier incarnation is fenced by its broker epoch instead). A request older than the version
applied for a name changes nothing about that name; that is how a broker copes with a network
that reorders and duplicates control requests.

``full_request_strays`` is the decision a FULL LeaderAndIsr makes about what is on disk: a
pure function of (the live logs of the online dirs with their topic ids, the request's partitions
with theirs, the applied versions, the request's version), so that it can be tested and measured
alone (``bench/strays.py``). The replica manager then performs it.

Invariants upheld here:
- A FULL request decides only about names whose applied version is older than its own: a newer
  INCREMENTAL request that created a partition the (older) FULL request does not name keeps it.
- A log named by the request under its own topic id is never a stray; a log whose
  ``partition.metadata`` is missing (hazard 2, ``topic_id`` None) and that the request names
  adopts the request's id, it is not a stray.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from logwright.identity import TopicPartition, Uuid
from logwright.world.trace import topic_id_text

Version = tuple[int, int]
"""(controller epoch, correlation id) of a control request."""

NO_VERSION: Version = (-1, -1)
"""Older than any request's version: nothing applied yet."""


def request_version(controller_epoch: int, correlation_id: int) -> Version:
    """The version of a control request."""
    return (controller_epoch, correlation_id)


def full_request_strays(on_disk: Mapping[TopicPartition, Uuid | None],
                        requested: Mapping[TopicPartition, Uuid],
                        applied: Mapping[TopicPartition, Version],
                        version: Version,
                        unreadable: Set[TopicPartition] = frozenset(),
                        ) -> dict[TopicPartition, str]:
    """The live logs a FULL LeaderAndIsr of ``version`` makes strays, each with its reason.

    ``on_disk``: every live log of the broker's online dirs, with the topic id of its
    ``partition.metadata`` (None: the file is missing). ``requested``: every partition the
    request names, with its topic id (``Uuid.ZERO``: not given, not compared). ``applied``:
    the version of the newest request applied per partition name. ``unreadable``: logs whose
    topic id could not be read (a malformed file). A log is a stray when its name's applied
    version is not newer than ``version`` and the request does not name it, or names it under
    another topic id, or its own id is unreadable.
    """
    strays: dict[TopicPartition, str] = {}
    for tp, held in on_disk.items():
        want = requested.get(tp)
        if want is None:
            reason = "not assigned to this broker by the FULL LeaderAndIsr"
        elif unreadable and tp in unreadable:
            reason = "its topic id is unreadable"
        elif held is None or held == want or want == Uuid.ZERO:
            continue  # its own id (or adopts the request's, or the request names none)
        else:
            reason = (f"the FULL LeaderAndIsr assigns topic id {topic_id_text(want)}, the log "
                      f"holds {topic_id_text(held)}")
        if applied.get(tp, NO_VERSION) > version:
            continue  # a newer request decided about this name: the FULL one is older news
        strays[tp] = reason
    return strays


__all__ = ["NO_VERSION", "Version", "full_request_strays", "request_version"]
