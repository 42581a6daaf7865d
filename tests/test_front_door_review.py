"""Regressions from trying the front door as a new user would: public names mypy can see (and
only those), the most specific error types, config builders refusing non-mappings, a real
cluster's random cluster id, and metrics after close."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import logwright
from logwright import (
    BrokerConfig,
    Cluster,
    ClusterError,
    ControllerConfig,
    DataDirLockedError,
    DataDirMismatchError,
    InvalidArgument,
    InvalidConfig,
    InvalidRequest,
    UnknownTopicOrPartition,
)

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_refuses_a_name_logwright_does_not_have(tmp_path: Path) -> None:
    good = tmp_path / "good.py"
    good.write_text("from logwright import Cluster, DataDirLockedError, InvalidArgument\n"
                    "print(Cluster, DataDirLockedError, InvalidArgument)\n")
    typo = tmp_path / "typo.py"
    typo.write_text("from logwright import Clustr\nprint(Clustr)\n")
    run = [sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
           "--cache-dir", str(ROOT / ".mypy_cache")]
    assert subprocess.run([*run, str(good)], capture_output=True, text=True,
                          timeout=300).returncode == 0
    bad = subprocess.run([*run, str(typo)], capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "Clustr" in bad.stdout


def test_every_public_name_exists_at_run_time() -> None:
    for name in logwright.__all__:
        assert getattr(logwright, name) is not None, name
    with pytest.raises(AttributeError):
        logwright.Clustr  # type: ignore[attr-defined]  # noqa: B018
    assert issubclass(DataDirLockedError, logwright.LogwrightError)
    assert issubclass(DataDirMismatchError, logwright.LogwrightError)


def test_unknown_topics_raise_the_specific_type_everywhere() -> None:
    cluster = Cluster.simulated(brokers=1, seed=2)
    cluster.create_topic("t")
    for call in (lambda: cluster.delete_topic("nope"),
                 lambda: cluster.partition_state("nope", 0),
                 lambda: cluster.describe_topic_configs("nope"),
                 lambda: cluster.alter_topic_configs("nope", {"retention.ms": "1000"})):
        with pytest.raises(UnknownTopicOrPartition):
            call()
    with pytest.raises(InvalidRequest):
        cluster.alter_topic_configs("t", {"retention.ms": "1000"}, ["retention.ms"])
    with pytest.raises(InvalidConfig) as caught:
        cluster.alter_topic_configs("t", delete=["nope"])
    assert "nope: unknown topic config" in str(caught.value) and "None" not in str(caught.value)
    with pytest.raises(InvalidArgument):
        cluster.alter_topic_configs("t", delete=[1])  # type: ignore[list-item]


@pytest.mark.parametrize("bad", [None, "x=1", 5, ["a"]])
def test_config_builders_refuse_what_is_not_a_mapping(bad: object) -> None:
    for build in (BrokerConfig.from_properties, ControllerConfig.from_properties):
        with pytest.raises(InvalidConfig, match="mapping"):
            build(bad)  # type: ignore[arg-type]


def test_a_replaced_metadata_store_cannot_take_over_the_log_dirs(tmp_path: Path) -> None:
    """The cluster id of a real cluster is random, so a lost metadata.db is noticed: its dirs
    belong to another cluster, and no new topic is handed the old topic's records."""
    with Cluster.real(str(tmp_path), brokers=1, log_dirs_per_broker=1) as cluster:
        cluster.create_topic("t", replication_factor=1)
        cluster.produce("t", 0, [b"precious"], acks=1)
        first_id = cluster.cluster_id
    (tmp_path / "metadata.db").unlink()
    with pytest.raises(DataDirMismatchError):
        Cluster.real(str(tmp_path), brokers=1, log_dirs_per_broker=1)
    other = tmp_path.parent / (tmp_path.name + "-other")
    with Cluster.real(str(other), brokers=1, log_dirs_per_broker=1) as cluster:
        assert cluster.cluster_id != first_id


def test_metrics_after_close_are_refused() -> None:
    cluster = Cluster.simulated(brokers=2, seed=3)
    cluster.close()
    with pytest.raises(ClusterError):
        cluster.metrics()


@pytest.mark.parametrize("seed", range(12))
def test_two_dead_brokers_cost_no_request_timeouts(seed: int) -> None:
    """A crashed broker refuses connections at once (its port is closed), so the client moves
    on to the live leader instead of spending its deadline on the dead ones."""
    cluster = Cluster.simulated(brokers=3, seed=seed)
    cluster.create_topic("p", replication_factor=3)
    cluster.produce("p", 0, [b"1"], acks="all")
    state = cluster.partition_state("p", 0)
    follower = next(b for b in state.replicas if b != state.leader)
    cluster.crash_broker(state.leader)
    cluster.crash_broker(follower)
    cluster.advance_time(15_000)
    started = cluster.runtime.clock.now_ms()
    assert [r.value for r in cluster.fetch("p", 0, 0)] == [b"1"]
    assert cluster.runtime.clock.now_ms() - started < cluster.client_config.request_timeout_ms
    assert cluster.client.refused_connections > 0 or cluster.client.attempts == 1


@pytest.mark.parametrize("seed", range(4))
def test_one_client_s_produces_land_in_the_order_sent(seed: int) -> None:
    """acks=0 and acks=1 produces to one partition keep their order, as over a Kafka client's
    one connection to the leader (the simulated network reorders everything else)."""
    cluster = Cluster.simulated(brokers=3, seed=seed, min_delay_ms=1, max_delay_ms=10)
    cluster.create_topic("q", replication_factor=3)
    for i in range(8):
        cluster.produce("q", 0, [b"%d" % i], acks=0 if i % 2 == 0 else 1)
    assert cluster.run_until_idle()
    assert [r.value for r in cluster.fetch("q", 0, 0)] == [b"%d" % i for i in range(8)]


def test_one_client_s_produces_land_in_order_on_a_real_cluster(tmp_path: Path) -> None:
    with Cluster.real(str(tmp_path), brokers=3, log_dirs_per_broker=1) as cluster:
        cluster.create_topic("q", replication_factor=3)
        cluster.produce("q", 0, [b"first"], acks=0)
        cluster.produce("q", 0, [b"second"], acks=1)
        assert [r.value for r in cluster.fetch("q", 0, 0)] == [b"first", b"second"]


@pytest.mark.parametrize("damage", [
    "DROP TABLE topics",
    "UPDATE topics SET configs = '{{{'",
    "UPDATE partitions SET replicas = 'x'",
    "UPDATE controller SET epoch = 'abc'",
])
def test_a_damaged_metadata_store_is_named_and_refused(tmp_path: Path, damage: str) -> None:
    import sqlite3

    with Cluster.real(str(tmp_path), brokers=1, log_dirs_per_broker=1) as cluster:
        cluster.create_topic("t", replication_factor=1)
    db = sqlite3.connect(tmp_path / "metadata.db")
    db.execute(damage)
    db.commit()
    db.close()
    with pytest.raises(ClusterError, match=r"metadata\.db"):
        Cluster.real(str(tmp_path), brokers=1, log_dirs_per_broker=1)


def test_another_program_s_database_is_refused_untouched(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "metadata.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE notes (body TEXT)")
    db.execute("INSERT INTO notes VALUES ('mine')")
    db.commit()
    db.close()
    before = path.read_bytes()
    with pytest.raises(ClusterError, match="another program"):
        Cluster.real(str(tmp_path), brokers=1, log_dirs_per_broker=1)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metadata.db"]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != ".lock"}


def test_a_copied_log_dir_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    import shutil

    with Cluster.real(str(tmp_path), brokers=2, log_dirs_per_broker=1) as cluster:
        cluster.create_topic("t", replication_factor=2)
        cluster.produce("t", 0, [b"x"], acks="all")
    shutil.rmtree(tmp_path / "broker-2" / "d1")
    shutil.copytree(tmp_path / "broker-1" / "d1", tmp_path / "broker-2" / "d1")
    before = _tree(tmp_path)
    with pytest.raises(DataDirMismatchError, match="broker-2/d1"):
        Cluster.real(str(tmp_path), brokers=2, log_dirs_per_broker=1)
    assert _tree(tmp_path) == before, "no node started, no file written"


def test_a_refused_produce_names_its_error_once() -> None:
    from logwright import MessageTooLarge

    cluster = Cluster.simulated(brokers=1, seed=1)
    cluster.create_topic("b", configs={"max.message.bytes": "100"})
    with pytest.raises(MessageTooLarge) as caught:
        cluster.produce("b", 0, [b"x" * 500])
    assert str(caught.value).count("MESSAGE_TOO_LARGE") == 1
    assert "max.message.bytes 100" in str(caught.value)
