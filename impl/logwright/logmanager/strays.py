"""Stray partition logs: dirs a broker set aside (renamed ``-stray``) because the controller no
longer assigns them to it, or assigns the partition under another topic id (KIP-550).

A stray is never served and never loaded as a live log. It is kept whole, with the start offset
it had (``stray-log-start-offset`` in its dir, since it leaves the dir's start offset
checkpoint), so that it can be revived from its own data if the controller assigns the same
partition, with the same topic id, back to this broker; or deleted by orphan removal (KIP-370)
once that cannot destroy new data.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from logwright.identity import TopicPartition, Uuid


@dataclass
class StrayLog:
    """One ``-stray`` dir in one log dir."""

    #: The log dir holding it.
    log_dir: str
    #: Its dir name, ``<topic>-<partition>.<uid32hex>-stray``.
    name: str
    #: The partition it was a log of. With ``name_cut`` the topic is only known to be a prefix
    #: of the real one (the name was cut to 255 characters), and the stray is never revived.
    tp: TopicPartition
    #: The topic id in its ``partition.metadata``; None when there is none or it is unreadable.
    topic_id: Uuid | None
    #: When this broker process set it aside or found it (start-up): the orphan removal delay
    #: counts from here.
    since_ms: int
    #: Why it is a stray, as logged.
    reason: str
    name_cut: bool = False
    #: The bytes of its segment files, as last read (when set aside, found, or checked by
    #: orphan removal); what the ``OrphanLogPartitionSize`` gauge adds up.
    size_bytes: int = 0
    #: Orphan removal's last decision about it and why (None until its first check).
    last_decision: str | None = None
    #: When orphan removal looks at it next (ms); None: never (retention is infinite).
    next_check_ms: int | None = None

    @property
    def path(self) -> str:
        """The stray dir's path."""
        return posixpath.join(self.log_dir, self.name)

    def matches(self, tp: TopicPartition, topic_id: Uuid | None) -> bool:
        """Whether this stray is the log of ``tp`` under ``topic_id`` (both known)."""
        return (not self.name_cut and self.tp == tp and topic_id is not None
                and self.topic_id == topic_id)
