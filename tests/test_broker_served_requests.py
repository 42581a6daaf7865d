"""A request a broker serves is never taken for the answer to one of its own requests, even when
its correlation id (the sender's numbering) equals one the broker awaits from that sender. The
controller now sends DescribeLogDirs to brokers (a reassignment's dir moves), so DescribeLogDirs
must be among the served requests: it was taken for an answer and never answered."""

from __future__ import annotations

import pytest

from logwright.cluster import Cluster
from logwright.protocol.effects import Send
from logwright.protocol.messages import (
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    Message,
    MetadataRequest,
)


@pytest.mark.parametrize("seed", [1, 2])
def test_a_describe_log_dirs_with_a_colliding_correlation_id_is_answered(seed: int) -> None:
    c = Cluster.simulated(brokers=1, seed=seed)
    broker = c.brokers[1]
    controller = c.controller.node_id
    cid = broker.channel.next_correlation_id()
    answers: list[Message | None] = []
    broker.channel.send_request(controller, MetadataRequest(cid, None), answers.append, None)
    effects = broker.handle(controller, DescribeLogDirsRequest(cid))
    sent = [e.message for e in effects if isinstance(e, Send) and e.dst == controller]
    assert [type(m) for m in sent] == [DescribeLogDirsResponse]
    assert sent[0].correlation_id == cid
    assert answers == [], "the broker's own request still awaits its answer"
