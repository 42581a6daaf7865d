"""Argument checks at the public boundary of the cluster facade.

Every public ``Cluster`` call checks its arguments here first, so that bad input is answered by
ONE typed error raised before anything changes (no request sent, no metadata written, no virtual
time passing). Which error:

* ``KafkaError`` with Kafka's own code where a Kafka broker or controller refuses the same thing:
  an illegal topic name (INVALID_TOPIC_EXCEPTION), a partition count (INVALID_PARTITIONS), a
  replication factor (INVALID_REPLICATION_FACTOR), acks or an empty produce (INVALID_REQUEST), a
  negative fetch offset (OFFSET_OUT_OF_RANGE), a topic that already exists (TOPIC_ALREADY_EXISTS)
  and everything wrong with a reassignment document (INVALID_REQUEST and friends).
* ``InvalidArgument`` (a ``ClusterError``) where Kafka's client would refuse the call before
  sending anything: a value of the wrong Python type, a zero or negative timeout, a negative time
  step, an unknown broker id, a negative partition index, a data directory that cannot be used.

Each check names the argument, the value it got and the rule it broke.
"""

from __future__ import annotations

import math
import os
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, TypeVar

from logwright.broker import BrokerConfig
from logwright.broker.authorizer import AclBinding
from logwright.cluster.client import ClientConfig
from logwright.controller import ControllerConfig, SqliteStore
from logwright.errors import ClusterError, Errors, InvalidArgument, KafkaError
from logwright.identity import PARTITION_MAX, TopicPartition, broker_node_id, topic_name_problem
from logwright.storage.naming import OFFSET_MAX
from logwright.world import RealFileSystem
from logwright.world.real import make_data_root

_T = TypeVar("_T")


class _Node(Protocol):
    node_id: str


class Cluster(Protocol):
    """What the checks read of the facade (``logwright.cluster.cluster.Cluster``): a protocol,
    so this module, which the facade imports, never imports it back."""

    closed: bool

    @property
    def brokers(self) -> Mapping[int, object]: ...

    @property
    def controllers(self) -> Sequence[_Node]: ...

#: Timeouts and time steps are int32 milliseconds, as on Kafka's wire (about 24.8 days).
INT32_MAX = 2**31 - 1
#: Kafka's replication factor is an int16 on the wire.
INT16_MAX = 2**15 - 1
#: The file the real cluster keeps its metadata in, under its data directory.
METADATA_FILE = "metadata.db"


def _kind(value: object) -> str:
    return "None" if value is None else type(value).__name__


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def integer(name: str, value: object, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an int in ``[low, high]``; a bool is not an int here."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidArgument(f"{name} must be an int, not {_kind(value)} {_show(value)}")
    if low is not None and value < low:
        raise InvalidArgument(f"{name} must be at least {low}, not {value}")
    if high is not None and value > high:
        raise InvalidArgument(f"{name} must be at most {high}, not {value}")
    return value


def boolean(name: str, value: object) -> bool:
    """``value`` as a bool (0 and 1 are not accepted for a flag)."""
    if not isinstance(value, bool):
        raise InvalidArgument(f"{name} must be True or False, not {_kind(value)} {_show(value)}")
    return value


def timeout(name: str, value: object, optional: bool = False) -> int | None:
    """A timeout: an int of 1 to 2**31-1 milliseconds (or None when ``optional``)."""
    if value is None and optional:
        return None
    return integer(name, value, 1, INT32_MAX)


def rate(name: str, value: object) -> float:
    """A probability in [0, 1): 1 would leave no message delivered at all."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidArgument(f"{name} must be a number, not {_kind(value)} {_show(value)}")
    if math.isnan(value) or not 0.0 <= value < 1.0:
        raise InvalidArgument(f"{name} must be at least 0 and below 1, not {value}")
    return float(value)


def topic(value: object) -> str:
    """A legal Kafka topic name, else INVALID_TOPIC_EXCEPTION (a non-string: InvalidArgument)."""
    if not isinstance(value, str):
        raise InvalidArgument(f"topic must be a str, not {_kind(value)} {_show(value)}")
    problem = topic_name_problem(value)
    if problem is not None:
        raise KafkaError.of(Errors.INVALID_TOPIC_EXCEPTION, problem)
    return value


def partition(value: object) -> int:
    """A partition index: an int from 0 to 2**31-1."""
    return integer("partition", value, 0, PARTITION_MAX)


def usable(cluster: Cluster) -> None:
    """The cluster has not been closed (its store and nodes are gone after ``close()``)."""
    if cluster.closed:
        raise ClusterError("the cluster is closed; open it again (Cluster.real on the same path)")


def broker_id(cluster: Cluster, value: object, name: str = "broker_id") -> int:
    """The id of one of this cluster's brokers."""
    usable(cluster)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidArgument(f"{name} must be an int, not {_kind(value)} {_show(value)}")
    if value not in cluster.brokers:
        raise InvalidArgument(f"no broker {value}; brokers are {sorted(cluster.brokers)}")
    return value


def node(cluster: Cluster, value: object, name: str) -> str:
    """A broker id or the node id of one of this cluster's brokers or controllers."""
    if isinstance(value, int) and not isinstance(value, bool):
        return broker_node_id(broker_id(cluster, value, name))
    if not isinstance(value, str):
        raise InvalidArgument(f"{name} must be a broker id or a node id, not "
                              f"{_kind(value)} {_show(value)}")
    known = [broker_node_id(b) for b in sorted(cluster.brokers)]
    known += [c.node_id for c in cluster.controllers]
    if value not in known:
        raise InvalidArgument(f"{name}: no node {_show(value)}; nodes are {known}")
    return value


def node_pair(cluster: Cluster, a: object, b: object) -> tuple[str, str]:
    """Two different nodes of this cluster (see ``node``)."""
    usable(cluster)
    node_a, node_b = node(cluster, a, "a"), node(cluster, b, "b")
    if node_a == node_b:
        raise InvalidArgument(f"a and b are the same node {node_a!r}; a node cannot be cut off "
                              "from itself")
    return node_a, node_b


def _record_parts(name: str, items: object) -> list[bytes | None]:
    if isinstance(items, str | bytes | bytearray | memoryview) or not isinstance(items, Sequence):
        raise InvalidArgument(f"{name} must be a list of bytes (or None), not "
                              f"{_kind(items)} {_show(items)}")
    out: list[bytes | None] = list(items)
    # Exactly bytes or None throughout (the usual case), told by one pass in C; anything else
    # (a bytes subclass passes too) is judged item by item below.
    if not set(map(type, out)) <= _BYTES_OR_NONE:
        for i, item in enumerate(out):
            if item is not None and not isinstance(item, bytes):
                raise InvalidArgument(f"{name}[{i}] must be bytes or None, not "
                                      f"{_kind(item)} {_show(item)}")
    return out


_BYTES_OR_NONE: frozenset[type] = frozenset((bytes, type(None)))


def configs(value: object, name: str = "configs") -> None:
    """Topic configs: a mapping from config names (str) to values; the values themselves are
    checked against each config's type and range by ``logwright.configs`` (InvalidConfig)."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise InvalidArgument(f"{name} must be a dict of config name to value, not "
                              f"{_kind(value)} {_show(value)}")
    for key in value:
        if not isinstance(key, str):
            raise InvalidArgument(f"{name}: config name {_show(key)} must be a str, not "
                                  f"{_kind(key)}")


# ---- one check per public call ------------------------------------------------------------------


def construction(brokers: object, log_dirs_per_broker: object, seed: object,
                 broker_config: object, controller_config: object) -> None:
    """The arguments ``Cluster.simulated`` and ``Cluster.real`` share."""
    integer("brokers", brokers, 1, INT32_MAX)
    integer("log_dirs_per_broker", log_dirs_per_broker, 1, INT32_MAX)
    integer("seed", seed)
    if broker_config is not None and not isinstance(broker_config, BrokerConfig):
        raise InvalidArgument(f"broker_config must be a BrokerConfig, not {_kind(broker_config)}")
    if controller_config is not None and not isinstance(controller_config, ControllerConfig):
        raise InvalidArgument("controller_config must be a ControllerConfig, not "
                              f"{_kind(controller_config)}")


def simulated(brokers: object, log_dirs_per_broker: object, seed: object, drop_rate: object,
              duplicate_rate: object, min_delay_ms: object, max_delay_ms: object,
              broker_config: object, controller_config: object) -> None:
    """``Cluster.simulated``'s arguments."""
    construction(brokers, log_dirs_per_broker, seed, broker_config, controller_config)
    rate("drop_rate", drop_rate)
    rate("duplicate_rate", duplicate_rate)
    low = integer("min_delay_ms", min_delay_ms, 0, INT32_MAX)
    integer("max_delay_ms", max_delay_ms, low, INT32_MAX)


def data_dir(path: object, brokers: int, log_dirs_per_broker: int) -> str:
    """Create the real cluster's data directory if needed; its absolute path.

    Refuses (InvalidArgument, nothing created) a path of the wrong type, a path that is a file,
    one that cannot be created or written, and a broker or log dir inside it that is a file.
    """
    if not isinstance(path, str | os.PathLike):
        raise InvalidArgument(f"path must be a str or a path, not {_kind(path)} {_show(path)}")
    text = os.fsdecode(path)
    if not text or "\0" in text:
        raise InvalidArgument(f"path {_show(text)} is not a usable directory name")
    root = os.path.abspath(text)
    fs = RealFileSystem()
    if fs.exists(root) and not fs.is_dir(root):
        raise InvalidArgument(f"data path {text} exists and is not a directory")
    wanted = [root, os.path.join(root, METADATA_FILE)]
    for b in range(1, brokers + 1):
        wanted.append(os.path.join(root, f"broker-{b}"))
        wanted += [os.path.join(root, f"broker-{b}", f"d{j}")
                   for j in range(1, log_dirs_per_broker + 1)]
    for p in wanted[2:]:
        if fs.exists(p) and not fs.is_dir(p):
            raise InvalidArgument(f"{p} exists and is not a directory; it cannot be a log dir")
    if fs.is_dir(wanted[1]):
        raise ClusterError(f"{wanted[1]} is a directory, not a metadata store")
    try:
        make_data_root(fs, root)
    except OSError as exc:
        raise InvalidArgument(f"data path {text} cannot be created: "
                              f"{exc.strerror or exc}") from exc
    if not os.access(root, os.R_OK | os.W_OK | os.X_OK):
        raise InvalidArgument(f"data path {text} is not readable and writable")
    return root


def open_store(root: str) -> SqliteStore:
    """Open ``<root>/metadata.db``; a file that is not a readable logwright metadata store is a
    ClusterError naming it, and is left as it was."""
    path = os.path.join(root, METADATA_FILE)
    if os.path.exists(path) and not os.access(path, os.R_OK | os.W_OK):
        raise ClusterError(f"{path}: the metadata store is not readable and writable")
    try:
        store = SqliteStore(path)
    except (sqlite3.Error, ValueError, OSError) as exc:
        raise ClusterError(f"{path}: cannot open the metadata store: {exc}") from exc
    try:
        store.check_readable()
        return store
    except (sqlite3.Error, ValueError, KeyError, TypeError, IndexError) as exc:
        store.close()
        raise ClusterError(f"{path}: cannot open the metadata store: {exc}") from exc


def create_topic(cluster: Cluster, name: object, partitions: object,
                 replication_factor: object, topic_configs: object) -> None:
    """``Cluster.create_topic``: a legal new name, partitions and replication factor in range."""
    usable(cluster)
    topic(name)
    if not isinstance(partitions, int) or isinstance(partitions, bool):
        raise InvalidArgument(f"partitions must be an int, not {_kind(partitions)} "
                              f"{_show(partitions)}")
    if not 1 <= partitions <= PARTITION_MAX:
        raise KafkaError.of(Errors.INVALID_PARTITIONS,
                         f"topic {name!r}: {partitions} partitions; from 1 to {PARTITION_MAX}")
    if replication_factor is not None:
        if not isinstance(replication_factor, int) or isinstance(replication_factor, bool):
            raise InvalidArgument(f"replication_factor must be an int or None, not "
                                  f"{_kind(replication_factor)} {_show(replication_factor)}")
        if not 1 <= replication_factor <= min(INT16_MAX, len(cluster.brokers)):
            raise KafkaError.of(Errors.INVALID_REPLICATION_FACTOR,
                             f"topic {name!r}: replication factor {replication_factor}; from 1 "
                             f"to the {len(cluster.brokers)} brokers")
    configs(topic_configs)


def produce(cluster: Cluster, name: object, part: object, values: object, keys: object,
            acks: object, timeout_ms: object) -> None:
    """``Cluster.produce``: a legal topic, a partition index, bytes values and keys of one length,
    acks 0, 1 or -1, a positive timeout."""
    usable(cluster)
    topic(name)
    partition(part)
    vs = _record_parts("values", values)
    if keys is not None and len(_record_parts("keys", keys)) != len(vs):
        raise KafkaError.of(Errors.INVALID_REQUEST, "keys and values differ in length")
    if isinstance(acks, bool) or acks not in (0, 1, -1, "all"):
        raise KafkaError.of(Errors.INVALID_REQUEST,
                            f"acks must be 0, 1, -1 or 'all', not {_show(acks)}")
    if not vs:
        raise KafkaError.of(Errors.INVALID_REQUEST, "nothing to produce")
    timeout("timeout_ms", timeout_ms, optional=True)


def fetch(cluster: Cluster, name: object, part: object, offset: object, max_bytes: object,
          timeout_ms: object) -> None:
    """``Cluster.fetch``: a legal topic, a partition index, an offset, positive sizes."""
    usable(cluster)
    topic(name)
    partition(part)
    if not isinstance(offset, int) or isinstance(offset, bool):
        raise InvalidArgument(f"offset must be an int, not {_kind(offset)} {_show(offset)}")
    if not 0 <= offset <= OFFSET_MAX:
        raise KafkaError.of(Errors.OFFSET_OUT_OF_RANGE,
                         f"{name}-{part}: offset {offset} is outside 0 to {OFFSET_MAX}")
    integer("max_bytes", max_bytes, 1, INT32_MAX)
    timeout("timeout_ms", timeout_ms, optional=True)


def list_offsets(cluster: Cluster, name: object, part: object, which: object,
                 timeout_ms: object) -> None:
    """``Cluster.list_offsets``: a legal topic, a partition index, "earliest" or "latest", a
    positive timeout."""
    usable(cluster)
    topic(name)
    partition(part)
    if not isinstance(which, str) or which not in ("earliest", "latest"):
        raise KafkaError.of(Errors.INVALID_REQUEST,
                            f"which must be 'earliest' or 'latest', not {_show(which)}")
    timeout("timeout_ms", timeout_ms, optional=True)


def delete_records(cluster: Cluster, offsets: object, timeout_ms: object
                   ) -> list[tuple[tuple[str, int], int]]:
    """``Cluster.delete_records``: a mapping of (topic, partition) to an offset >= -1, not
    empty, and a positive timeout; returns the pairs in order."""
    usable(cluster)
    if not isinstance(offsets, Mapping) or not offsets:
        raise InvalidArgument(f"offsets must be a non-empty mapping of (topic, partition) to "
                              f"an offset, not {_kind(offsets)} {_show(offsets)}")
    out: list[tuple[tuple[str, int], int]] = []
    for key, offset in offsets.items():
        if not isinstance(key, tuple) or len(key) != 2:
            raise InvalidArgument(f"offsets: key {_show(key)} must be a (topic, partition) pair")
        name, part = topic(key[0]), partition(key[1])
        out.append(((name, part), integer(f"offsets[{key!r}]", offset, -1, OFFSET_MAX)))
    timeout("timeout_ms", timeout_ms)
    return out


def alter_topic_configs(cluster: Cluster, name: object, changes: object,
                        deletions: object) -> None:
    """``Cluster.alter_topic_configs``: a legal topic, a mapping of configs to set, and config
    names to delete (the names and values are checked by the controller: InvalidConfig)."""
    usable(cluster)
    topic(name)
    configs(changes, "set")
    if isinstance(deletions, str | bytes) or not isinstance(deletions, Iterable):
        raise InvalidArgument(f"delete must be a list of config names, not "
                              f"{_kind(deletions)} {_show(deletions)}")
    for key in list(deletions):
        if not isinstance(key, str):
            raise InvalidArgument(f"delete: config name {_show(key)} must be a str, not "
                                  f"{_kind(key)}")


def config_source(config_file: object, broker_properties: object) -> None:
    """``Cluster.real``'s ``config_file`` (a path) and ``broker_properties`` (a mapping of Kafka
    property names to values; the names and values are checked by ``logwright.configs``)."""
    if config_file is not None and not isinstance(config_file, str | os.PathLike):
        raise InvalidArgument(f"config_file must be a path, not {_kind(config_file)} "
                              f"{_show(config_file)}")
    configs(broker_properties, "broker_properties")


def client_config(value: object) -> None:
    """A ``ClientConfig`` or None (its fields are checked by ``ClientConfig`` itself)."""
    if value is not None and not isinstance(value, ClientConfig):
        raise InvalidArgument(f"client_config must be a ClientConfig, not {_kind(value)}")


def metrics_endpoint(port: object, host: object) -> None:
    """``metrics_port`` (None: off; 0: any free port; else 1 to 65535) and ``metrics_host``."""
    if port is not None:
        integer("metrics_port", port, 0, 65_535)
    if not isinstance(host, str) or not host:
        raise InvalidArgument(f"metrics_host must be a host name or address, not "
                              f"{_kind(host)} {_show(host)}")


def reassign(cluster: Cluster, json_text: object, wait: object, timeout_ms: object) -> None:
    """``Cluster.reassign``'s own arguments (the document is checked by the controller)."""
    usable(cluster)
    if not isinstance(json_text, str):
        raise KafkaError.of(Errors.INVALID_REQUEST, "the reassignment must be JSON text, not "
                         f"{_kind(json_text)}")
    boolean("wait", wait)
    timeout("timeout_ms", timeout_ms)


def partition_state(cluster: Cluster, name: object, part: object) -> None:
    """``Cluster.partition_state``: a legal topic and a partition index."""
    usable(cluster)
    topic(name)
    partition(part)


def create_partitions(cluster: Cluster, name: object, total: object) -> None:
    """``Cluster.create_partitions``: a legal topic name and an int count within the cap."""
    usable(cluster)
    topic(name)
    if not isinstance(total, int) or isinstance(total, bool):
        raise InvalidArgument(f"total must be an int, not {_kind(total)} {_show(total)}")
    if not 1 <= total <= PARTITION_MAX:
        raise KafkaError.of(Errors.INVALID_PARTITIONS,
                            f"topic {name!r}: {total} partitions; from 1 to {PARTITION_MAX}")


def _items_of(value: object, name: str, kind: type[_T]) -> list[_T]:
    """``value`` as a list, refused unless it is an iterable (not a string) of ``kind``."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidArgument(f"{name} must be an iterable of {kind.__name__}, not "
                              f"{_kind(value)} {_show(value)}")
    out = list(value)
    for item in out:
        if not isinstance(item, kind):
            raise InvalidArgument(f"{name}: {_show(item)} is a {_kind(item)}, not a "
                                  f"{kind.__name__}")
    return out


def topic_partitions(cluster: Cluster, tps: object) -> list[TopicPartition]:
    """``Cluster.leaders_ready``: an iterable of TopicPartition with legal names and indexes."""
    usable(cluster)
    out = _items_of(tps, "tps", TopicPartition)
    for tp in out:
        topic(tp.topic)
        partition(tp.partition)
    return out


def acl_bindings(cluster: Cluster, acls: object) -> list[AclBinding]:
    """``Cluster.add_acls``/``remove_acls``: an iterable of AclBinding."""
    usable(cluster)
    return _items_of(acls, "acls", AclBinding)


def delete_topic(cluster: Cluster, name: object) -> None:
    """``Cluster.delete_topic``: a legal topic name."""
    usable(cluster)
    topic(name)


def fail_controller(cluster: Cluster, zombie: object) -> None:
    """``Cluster.fail_controller``: ``zombie`` is a bool."""
    usable(cluster)
    boolean("zombie", zombie)


def advance_time(cluster: Cluster, delta_ms: object) -> None:
    """``Cluster.advance_time``: a time step of 0 to 2**31-1 ms (never negative)."""
    usable(cluster)
    integer("delta_ms", delta_ms, 0, INT32_MAX)


def run_until_idle(cluster: Cluster, max_ms: object) -> None:
    """``Cluster.run_until_idle``: a positive bound."""
    usable(cluster)
    timeout("max_ms", max_ms)


def trace_path(value: object) -> str | None:
    """``Cluster.simulated(trace=...)``: None, or the path of a file to write (its directory
    must exist; the file itself is replaced)."""
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise InvalidArgument(f"trace must be a path (str), not {_kind(value)} {_show(value)}")
    path = os.fspath(value)
    if not isinstance(path, str) or not path or "\0" in path:
        raise InvalidArgument(f"trace must be a non-empty path, not {_show(value)}")
    fs = RealFileSystem()
    if fs.is_dir(path):
        raise InvalidArgument(f"trace {path} is a directory; give a file name in it")
    parent = os.path.dirname(os.path.abspath(path))
    if not fs.is_dir(parent):
        raise InvalidArgument(f"trace {path}: its directory {parent} does not exist")
    return path


def trace_id(value: object, trace: str | None) -> str | None:
    """``Cluster.simulated(trace_id=...)``: None, or a non-empty single-line string, and only
    with a trace to record."""
    if value is None:
        return None
    if not isinstance(value, str) or not value or "\n" in value:
        raise InvalidArgument(f"trace_id must be a non-empty single-line string, not "
                              f"{_kind(value)} {_show(value)}")
    if trace is None:
        raise InvalidArgument("trace_id names the trace recorded: give trace=PATH too")
    return value


def alter_replica_log_dirs(cluster: Cluster, moves: object
                           ) -> list[tuple[tuple[str, int, int], str]]:
    """``Cluster.alter_replica_log_dirs``: a non-empty mapping of (topic, partition, broker)
    to a dir (a string; whether it is one of the broker's dirs is the broker's answer), each
    broker one of the cluster's; returns the pairs in order."""
    usable(cluster)
    if not isinstance(moves, Mapping) or not moves:
        raise InvalidArgument(f"moves must be a non-empty mapping of (topic, partition, broker) "
                              f"to a log dir, not {_kind(moves)} {_show(moves)}")
    out: list[tuple[tuple[str, int, int], str]] = []
    for key, log_dir in moves.items():
        if not isinstance(key, tuple) or len(key) != 3:
            raise InvalidArgument(f"moves: key {_show(key)} must be a (topic, partition, broker) "
                                  "triple")
        name, part = topic(key[0]), partition(key[1])
        b = broker_id(cluster, key[2], "broker")
        if not isinstance(log_dir, str):
            raise InvalidArgument(f"moves[{key!r}] must be a log dir path (a string), not "
                                  f"{_kind(log_dir)} {_show(log_dir)}")
        out.append(((name, part, b), log_dir))
    return out
