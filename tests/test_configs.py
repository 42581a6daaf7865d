"""Config definitions, parsing and validation; broker properties and server.properties files;
topic configs applied by a partition log (segment.index.bytes, max.message.bytes, live changes).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from logwright.broker import BrokerConfig
from logwright.configs import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    ConfigFileError,
    canonical_string,
    describe_topic_configs,
    parse_broker_properties,
    parse_properties_text,
    parse_topic_configs,
    read_properties_file,
)
from logwright.controller import ControllerConfig
from logwright.errors import Errors, InvalidConfig, KafkaError, MessageTooLarge, RecordBatchTooLarge
from logwright.storage.config import LogConfig
from tests.storage_helpers import batch, fill, new_log, read_all, world

# ---- topic config parsing ---------------------------------------------------------------------

# (key, accepted strings with their parsed values, refused values with a word of the reason)
CASES: list[tuple[str, list[tuple[object, object]], list[tuple[object, str]]]] = [
    ("cleanup.policy",
     [("delete", ("delete",)), ("compact", ("compact",)), (" compact , delete ", ("compact",
                                                                                   "delete")),
      (["delete", "compact"], ("delete", "compact"))],
     [("", "at least one"), ("remove", "not one of"), ("delete,,compact", "empty"),
      ("delete,delete", "repeated"), (3, "list")]),
    ("retention.ms",
     [("-1", -1), ("0", 0), ("604800000", 604_800_000), (9_000_000_000_000, 9_000_000_000_000)],
     [("-2", "at least -1"), ("1h", "long"), ("1.5", "long"), (True, "long"),
      (str(1 << 63), "fit")]),
    ("retention.bytes",
     [("-1", -1), ("-5", -5), ("1073741824", 1 << 30)],
     [("lots", "long"), (None, "long")]),
    ("segment.bytes",
     [("14", 14), ("1073741824", 1 << 30), (4096, 4096)],
     [("13", "at least 14"), ("2147483648", "fit in an int"), ("", "int"), (1.0, "int")]),
    ("segment.ms",
     [("1", 1), ("604800000", 604_800_000)],
     [("0", "at least 1"), ("-1", "at least 1")]),
    ("segment.index.bytes",
     [("4", 4), ("10485760", 10 << 20)],
     [("3", "at least 4"), ("ten", "int")]),
    ("index.interval.bytes",
     [("0", 0), ("4096", 4096)],
     [("-1", "at least 0")]),
    ("file.delete.delay.ms",
     [("0", 0), ("60000", 60_000)],
     [("-1", "at least 0")]),
    ("min.insync.replicas",
     [("1", 1), ("3", 3), (2, 2)],
     [("0", "at least 1"), ("two", "int"), (False, "int")]),
    ("max.message.bytes",
     [("0", 0), ("1048588", 1_048_588)],
     [("-1", "at least 0"), ("1MB", "int")]),
    ("flush.messages",
     [("1", 1), ("9223372036854775807", (1 << 63) - 1), (1000, 1000)],
     [("0", "at least 1"), ("-1", "at least 1"), ("often", "long")]),
    ("unclean.leader.election.enable",
     [("true", True), ("FALSE", False), (" True ", True), (True, True), (False, False)],
     [("yes", "boolean"), ("1", "boolean"), (1, "boolean"), ("", "boolean")]),
]


def test_every_topic_config_is_covered() -> None:
    assert {key for key, _, _ in CASES} == set(TOPIC_CONFIGS)


@pytest.mark.parametrize(("key", "good", "bad"), CASES, ids=[c[0] for c in CASES])
def test_topic_config_values_parse_as_kafka_does(key: str, good: list[tuple[object, object]],
                                                 bad: list[tuple[object, str]]) -> None:
    for given, parsed in good:
        assert parse_topic_configs({key: given}) == {key: parsed}
        # The stored form parses back to the same value.
        assert parse_topic_configs({key: canonical_string(parsed)}) == {key: parsed}  # type: ignore[arg-type]
    for given, reason in bad:
        with pytest.raises(InvalidConfig) as e:
            parse_topic_configs({key: given})
        assert e.value.error is Errors.INVALID_CONFIG and e.value.code == 40
        assert e.value.key == key and key in str(e.value)
        assert reason in e.value.reason, (given, e.value.reason)


def test_unknown_topic_configs_are_refused_by_name() -> None:
    for name in ("retention.mss", "log.retention.ms", "compression.typo", ""):
        with pytest.raises(InvalidConfig) as e:
            parse_topic_configs({"segment.bytes": "1024", name: "1"})
        assert e.value.key == name and "unknown topic config" in str(e.value)
    assert parse_topic_configs(None) == {}


def test_kafka_defaults_and_broker_synonyms() -> None:
    defaults = {name: d.default for name, d in TOPIC_CONFIGS.items()}
    assert defaults == {
        "cleanup.policy": ("delete",), "retention.ms": 604_800_000, "retention.bytes": -1,
        "segment.bytes": 1_073_741_824, "segment.ms": 604_800_000,
        "segment.index.bytes": 10_485_760, "index.interval.bytes": 4096,
        "file.delete.delay.ms": 60_000, "min.insync.replicas": 1,
        "max.message.bytes": 1_048_588, "unclean.leader.election.enable": False,
        "flush.messages": (1 << 63) - 1}
    assert TOPIC_CONFIGS["flush.messages"].broker_property == "log.flush.interval.messages"
    assert TOPIC_CONFIGS["segment.index.bytes"].broker_property == "log.index.size.max.bytes"
    assert TOPIC_CONFIGS["max.message.bytes"].broker_property == "message.max.bytes"
    assert TOPIC_CONFIGS["file.delete.delay.ms"].broker_property == "log.segment.delete.delay.ms"
    for d in TOPIC_CONFIGS.values():
        assert d.broker_property is not None
        assert d.broker_property in BROKER_CONFIGS or d.broker_property in (
            "log.retention.ms", "log.roll.ms")
        assert d.parse(d.default) == d.default  # every default passes its own check
    # LogConfig's defaults are the same numbers.
    log_defaults = LogConfig().topic_config_values()
    for name, value in log_defaults.items():
        assert value == defaults[name], name


def test_log_config_refuses_what_a_topic_config_refuses() -> None:
    with pytest.raises(InvalidConfig, match=r"segment\.bytes"):
        LogConfig(segment_bytes=13)
    with pytest.raises(InvalidConfig, match=r"cleanup\.policy"):
        LogConfig(cleanup_policy="delete,remove")
    with pytest.raises(InvalidConfig, match=r"segment\.index\.bytes"):
        LogConfig(segment_index_bytes=2)
    base = LogConfig()
    changed = base.with_topic_overrides(parse_topic_configs(
        {"cleanup.policy": "compact,delete", "retention.ms": "5", "min.insync.replicas": "2"}))
    assert changed.cleanup_policy == "compact,delete" and changed.retention_ms == 5
    assert changed.segment_bytes == base.segment_bytes
    assert base.with_topic_overrides({}) is base


def test_describe_names_the_source_of_every_value() -> None:
    entries = describe_topic_configs({"retention.ms": "1000"},
                                     {"segment.bytes": 4096, "retention.ms": 5})
    assert entries["retention.ms"].value == "1000"
    assert entries["retention.ms"].source == "DYNAMIC_TOPIC_CONFIG"
    assert entries["segment.bytes"].source == "STATIC_BROKER_CONFIG"
    assert entries["segment.bytes"].value == "4096"
    assert entries["cleanup.policy"].value == "delete"
    assert entries["cleanup.policy"].source == "DEFAULT_CONFIG"
    assert entries["cleanup.policy"].is_default
    assert set(entries) == set(TOPIC_CONFIGS)


# ---- broker properties ------------------------------------------------------------------------


def test_broker_properties_by_kafka_names() -> None:
    cfg = BrokerConfig.from_properties({
        "num.replica.fetchers": "2", "replica.fetch.max.bytes": "2048",
        "replica.lag.time.max.ms": "10000", "replica.fetch.backoff.ms": 250,
        "min.insync.replicas": "2", "log.segment.bytes": "4096", "log.retention.bytes": "-1",
        "log.index.size.max.bytes": "1024", "log.cleanup.policy": "compact, delete",
        "log.retention.check.interval.ms": "1000", "log.flush.interval.ms": "500",
        "message.max.bytes": "100000", "broker.heartbeat.interval.ms": "500",
        "log.segment.delete.delay.ms": "0", "broker.session.timeout.ms": "3000",
        "unclean.leader.election.enable": "true"})
    assert (cfg.num_replica_fetchers, cfg.replica_fetch_max_bytes) == (2, 2048)
    assert cfg.replica_lag_time_max_ms == 10_000 and cfg.replica_fetch_backoff_ms == 250
    assert cfg.min_insync_replicas == 2 and cfg.broker_heartbeat_interval_ms == 500
    log = cfg.log.log
    assert (log.segment_bytes, log.segment_index_bytes, log.max_message_bytes) == (
        4096, 1024, 100_000)
    assert log.cleanup_policy == "compact,delete" and log.file_delete_delay_ms == 0
    assert cfg.log.file_delete_delay_ms == 0 and cfg.log.flush_interval_ms == 500
    assert cfg.log.retention_check_interval_ms == 1000
    assert BrokerConfig.from_properties({}) == BrokerConfig()


@pytest.mark.parametrize(("props", "retention_ms"), [
    ({}, 168 * 3_600_000),
    ({"log.retention.hours": "1"}, 3_600_000),
    ({"log.retention.hours": "1", "log.retention.minutes": "2"}, 120_000),
    ({"log.retention.hours": "1", "log.retention.minutes": "2", "log.retention.ms": "5"}, 5),
    ({"log.retention.ms": "-1", "log.retention.hours": "1"}, -1),
    ({"log.retention.hours": "-1"}, -1),
    ({"log.retention.minutes": "-1"}, -1),
    ({"log.retention.ms": "0"}, 0),  # 0 keeps nothing past the active segment; only <0 is infinite
])
def test_retention_time_precedence_is_kafkas(props: dict[str, str], retention_ms: int) -> None:
    assert BrokerConfig.from_properties(props).log.log.retention_ms == retention_ms


def test_roll_time_and_delete_delay_precedence() -> None:
    assert BrokerConfig.from_properties({"log.roll.hours": "2"}).log.log.segment_ms == 7_200_000
    assert BrokerConfig.from_properties(
        {"log.roll.hours": "2", "log.roll.ms": "10"}).log.log.segment_ms == 10
    assert BrokerConfig.from_properties(
        {"file.delete.delay.ms": "5"}).log.file_delete_delay_ms == 5
    assert BrokerConfig.from_properties(
        {"file.delete.delay.ms": "5", "log.segment.delete.delay.ms": "7"}
    ).log.file_delete_delay_ms == 7


@pytest.mark.parametrize(("props", "key", "reason"), [
    ({"num.replica.fetcher": "1"}, "num.replica.fetcher", "unknown broker property"),
    ({"retention.ms": "1"}, "retention.ms", "unknown broker property"),
    ({"log.segment.bytes": "13"}, "log.segment.bytes", "at least 14"),
    ({"num.replica.fetchers": "0"}, "num.replica.fetchers", "at least 1"),
    ({"replica.lag.time.max.ms": "soon"}, "replica.lag.time.max.ms", "long"),
    ({"unclean.leader.election.enable": "maybe"}, "unclean.leader.election.enable", "boolean"),
    ({"log.cleanup.policy": "delete,archive"}, "log.cleanup.policy", "not one of"),
    ({"replica.fetch.wait.max.ms": "30000"}, "replica.socket.timeout.ms", "larger than"),
])
def test_bad_broker_properties_name_the_key(props: dict[str, str], key: str,
                                            reason: str) -> None:
    with pytest.raises(InvalidConfig) as e:
        BrokerConfig.from_properties(props)
    assert e.value.key == key and reason in str(e.value) and e.value.code == 40


def test_the_replica_socket_timeout_must_exceed_the_fetch_wait_given_or_by_default() -> None:
    """replica.socket.timeout.ms > replica.fetch.wait.max.ms (500 when not given): just above
    is accepted, equal or below refused naming the key and the value given."""
    assert BrokerConfig.from_properties(
        {"replica.socket.timeout.ms": "501"}).replica_socket_timeout_ms == 501
    for props, value in (({"replica.socket.timeout.ms": "400"}, "400"),
                         ({"replica.socket.timeout.ms": "500"}, "500"),
                         ({"replica.socket.timeout.ms": "900",
                           "replica.fetch.wait.max.ms": "900"}, "900")):
        with pytest.raises(InvalidConfig) as e:
            BrokerConfig.from_properties(props)
        assert e.value.key == "replica.socket.timeout.ms" and e.value.value == int(value), props


def test_kafka_properties_logwright_does_not_use_are_ignored_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="logwright"):
        cfg = BrokerConfig.from_properties({"listeners": "PLAINTEXT://:9092", "node.id": "1",
                                            "log.dirs": "/tmp/kraft"})
    assert cfg == BrokerConfig()
    assert "listeners" in caplog.text and "ignored" in caplog.text
    assert parse_broker_properties({"num.io.threads": "8"}) == {}


def test_controller_properties() -> None:
    cfg = ControllerConfig.from_properties({"broker.session.timeout.ms": "6000",
                                            "broker.heartbeat.interval.ms": "1000",
                                            "unclean.leader.election.enable": "true",
                                            "log.segment.bytes": "4096"})
    assert (cfg.broker_session_timeout_ms, cfg.broker_heartbeat_interval_ms) == (6000, 1000)
    assert cfg.unclean_leader_election_enable
    assert ControllerConfig.from_properties({}) == ControllerConfig()
    with pytest.raises(InvalidConfig) as e:
        ControllerConfig.from_properties({"broker.session.timeout.ms": "2000"})
    assert e.value.key == "broker.session.timeout.ms"
    with pytest.raises(InvalidConfig, match=r"broker\.session\.timeout"):
        ControllerConfig.from_properties({"broker.session.timeout": "2000"})


# ---- server.properties files ------------------------------------------------------------------

GOOD_FILE = """\
# A server.properties as Kafka ships it, trimmed
! a comment in the other style
node.id=1
listeners = PLAINTEXT://localhost:9092

num.replica.fetchers: 2
log.segment.bytes 4096
log.retention.hours=1
log.cleanup.policy=compact,\\
    delete
message.max.bytes=200000
"""


def test_a_server_properties_file_is_read_as_java_does(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(GOOD_FILE)
    file = read_properties_file(str(path))
    assert file.values["num.replica.fetchers"] == "2"
    assert file.values["log.segment.bytes"] == "4096"
    assert file.values["log.cleanup.policy"] == "compact,delete"
    assert file.lines["num.replica.fetchers"] == 6
    assert file.lines["message.max.bytes"] == 11
    cfg = BrokerConfig.from_properties(file.values)
    assert cfg.num_replica_fetchers == 2 and cfg.log.log.segment_bytes == 4096
    assert cfg.log.log.retention_ms == 3_600_000 and cfg.log.log.max_message_bytes == 200_000


def test_properties_text_the_last_value_wins_and_escapes_work() -> None:
    file = parse_properties_text("a=1\r\nb=x\\u0041\na=2\n", "mem")
    assert file.values == {"a": "2", "b": "xA"} and file.lines == {"a": 3, "b": 2}


def test_bad_files_name_the_file_the_line_and_the_key(tmp_path: Path) -> None:
    from logwright.cluster.cluster import _configs_from_properties

    path = tmp_path / "server.properties"
    path.write_text("# ok so far\nnum.replica.fetchers=2\n\nlog.segment.bytes=tiny\n")
    with pytest.raises(ConfigFileError) as e:
        _configs_from_properties(str(path), None)
    assert e.value.path == str(path) and e.value.line == 4
    assert e.value.key == "log.segment.bytes" and e.value.code == 40
    assert f"{path}, line 4: log.segment.bytes='tiny'" in str(e.value)
    path.write_text("num.replica.fetchers=2\nlog.segmnt.bytes=4096\n")
    with pytest.raises(ConfigFileError, match=r"line 2: log\.segmnt\.bytes.*unknown"):
        _configs_from_properties(str(path), None)
    # A mapping given beside the file wins, and an error in it is not blamed on the file.
    path.write_text("num.replica.fetchers=2\n")
    broker_cfg, _ = _configs_from_properties(str(path), {"num.replica.fetchers": "3"})
    assert broker_cfg.num_replica_fetchers == 3
    with pytest.raises(InvalidConfig) as e2:
        _configs_from_properties(str(path), {"num.replica.fetchers": "0"})
    assert not isinstance(e2.value, ConfigFileError)
    with pytest.raises(ConfigFileError, match=r"cannot be read"):
        read_properties_file(str(tmp_path / "missing.properties"))
    path.write_bytes(b"a=1\nb=\xff\xfe\n")
    with pytest.raises(ConfigFileError, match=r"line 2.*not UTF-8"):
        read_properties_file(str(path))


# ---- topic configs applied by a partition log -------------------------------------------------


def test_segment_index_bytes_rolls_when_an_index_is_full() -> None:
    fs, clock = world()
    # Every batch after a segment's first gets an offset index entry (interval 0); 24 bytes
    # hold 3 offset entries and 2 time entries.
    config = LogConfig(index_interval_bytes=0, segment_index_bytes=24)
    log = new_log(fs, clock, config)
    for i in range(30):
        log.append_as_leader(batch(b"v%d" % i, ts=1_000_000 + i))
    assert len(log.segments) > 5
    for seg in log.segments:
        assert seg.index.entries <= 3 and seg.time_index.entries <= 2 + 1  # + the roll entry
    assert [v for _, v in read_all(log)] == [b"v%d" % i for i in range(30)]
    # With Kafka's default size the same appends stay in one segment.
    fs2, clock2 = world()
    other = new_log(fs2, clock2, LogConfig(index_interval_bytes=0))
    for i in range(30):
        other.append_as_leader(batch(b"v%d" % i, ts=1_000_000 + i))
    assert len(other.segments) == 1


def test_a_log_applies_a_changed_config_at_the_next_decision() -> None:
    fs, clock = world()
    log = new_log(fs, clock, LogConfig())
    fill(log, 10)
    assert len(log.segments) == 1
    log.update_config(LogConfig(segment_bytes=200))
    fill(log, 10)
    assert len(log.segments) > 5, "segment.bytes lowered: rolls at once"
    log.update_high_watermark(log.log_end_offset)
    log.update_config(LogConfig(segment_bytes=200, retention_bytes=0, cleanup_policy="compact"))
    assert log.delete_old_segments() == 0, "compact: no size retention"
    log.update_config(LogConfig(segment_bytes=200, retention_bytes=0))
    assert log.delete_old_segments() > 5
    assert log.log_start_offset > 0


def test_max_message_bytes_and_segment_bytes_refuse_large_batches() -> None:
    fs, clock = world()
    log = new_log(fs, clock, LogConfig(max_message_bytes=100))
    small = batch(b"x")
    big = batch(b"y" * 200)
    log.append_as_leader(small)
    with pytest.raises(MessageTooLarge) as e:
        log.append_as_leader(big)
    assert e.value.code == 10 and "max.message.bytes 100" in str(e.value)
    with pytest.raises(MessageTooLarge):
        log.append_as_leader(small + big)  # one batch too large refuses the whole request
    assert log.log_end_offset == 1
    log.update_config(LogConfig(segment_bytes=150))
    with pytest.raises(RecordBatchTooLarge) as e2:
        log.append_as_leader(big)
    assert e2.value.code == 18
    log.update_config(LogConfig())
    log.append_as_leader(big)
    assert log.log_end_offset == 2
    # A follower keeps what its leader accepted, whatever its own config says.
    fs2, clock2 = world()
    follower = new_log(fs2, clock2, LogConfig(max_message_bytes=10))
    leader_data = log.read(0, 1 << 20).records
    follower.append_as_follower(leader_data)
    assert follower.log_end_offset == 2
    assert isinstance(e.value, KafkaError)


@pytest.mark.parametrize("make", [
    lambda: BrokerConfig(num_replica_fetchers=0),
    lambda: BrokerConfig(replica_lag_time_max_ms=True),
    lambda: BrokerConfig(replica_fetch_wait_max_ms=-1),
    lambda: BrokerConfig(replica_fetch_wait_max_ms=40_000),
    lambda: ControllerConfig(broker_heartbeat_interval_ms=0),
    lambda: ControllerConfig(broker_session_timeout_ms=1_000, broker_heartbeat_interval_ms=2_000),
    lambda: ControllerConfig(control_request_retry_ms=0),
    lambda: ControllerConfig(max_outstanding_requests=-1),
])
def test_config_objects_refuse_bad_values_with_invalid_config(make: Any) -> None:
    """Built in code rather than from properties, the config objects answer the same way: one
    InvalidConfig (a LogwrightError with Kafka's INVALID_CONFIG) naming the setting."""
    with pytest.raises(InvalidConfig) as caught:
        make()
    assert caught.value.key in str(caught.value)
