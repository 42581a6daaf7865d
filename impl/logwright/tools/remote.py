"""The operator tools' view of a cluster over the network (``--bootstrap-server``).

Invariant upheld: a tool given ``--bootstrap-server`` learns and changes the cluster only
through Kafka's protocol (kafka-python's admin client), exactly as Kafka's own tools do, so it
works against ``logwright serve`` and is answered by the same broker and controller code as
the in-process tools. Answers are turned into the same values the in-process tools format
(``DescribeLogDirsResponse``, ``ReassignmentStatus``), so both print the same lines.

``--command-config`` takes Kafka's client properties: ``security.protocol``,
``sasl.mechanism`` (PLAIN, SCRAM-SHA-256), ``sasl.jaas.config`` (a PlainLoginModule or
ScramLoginModule line with ``username`` and ``password``), and PEM stores:
``ssl.truststore.type=PEM`` with ``ssl.truststore.location``, ``ssl.keystore.type=PEM`` with
``ssl.keystore.location`` (certificate and key) and ``ssl.key.password``. Anything else is
refused by name, never ignored.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import javaproperties

from logwright.controller.reassigning import ReassignmentStatus
from logwright.controller.reassignment import ReassignmentPlan
from logwright.errors import Errors, KafkaError, LogwrightError
from logwright.protocol.messages import (
    DescribeLogDirsPartition,
    DescribeLogDirsResponse,
    DescribeLogDirsResult,
    DescribeLogDirsTopic,
)

__all__ = ["RemoteCluster", "client_options"]

_SUPPORTED = ("security.protocol", "sasl.mechanism", "sasl.jaas.config",
              "ssl.truststore.type", "ssl.truststore.location", "ssl.keystore.type",
              "ssl.keystore.location", "ssl.key.password",
              "ssl.endpoint.identification.algorithm", "request.timeout.ms")
_JAAS = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def client_options(command_config: str | None) -> dict[str, Any]:
    """kafka-python's options for the Kafka client properties file ``command_config``."""
    if command_config is None:
        return {}
    try:
        with open(command_config, encoding="utf-8") as f:
            props = javaproperties.load(f)
    except OSError as exc:
        raise LogwrightError(f"{command_config}: cannot read the command config: "
                             f"{exc.strerror or exc}") from None
    unknown = sorted(set(props) - set(_SUPPORTED))
    if unknown:
        raise LogwrightError(f"{command_config}: unsupported client properties "
                             f"{', '.join(unknown)} (supported: {', '.join(_SUPPORTED)})")
    options: dict[str, Any] = {}
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
        raise LogwrightError(f"{command_config}: security.protocol {protocol!r} is not one of "
                             "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL")
    options["security_protocol"] = protocol
    if protocol.startswith("SASL"):
        mechanism = props.get("sasl.mechanism", "PLAIN")
        jaas = dict(_JAAS.findall(props.get("sasl.jaas.config", "")))
        if "username" not in jaas or "password" not in jaas:
            raise LogwrightError(f"{command_config}: sasl.jaas.config needs username=\"...\" "
                                 "and password=\"...\"")
        options.update(sasl_mechanism=mechanism, sasl_plain_username=jaas["username"],
                       sasl_plain_password=jaas["password"])
    for store in ("truststore", "keystore"):
        kind = props.get(f"ssl.{store}.type", "PEM" if f"ssl.{store}.location" in props else None)
        if kind is not None and kind.upper() != "PEM":
            raise LogwrightError(f"{command_config}: ssl.{store}.type {kind!r}: only PEM stores "
                                 "are supported")
    if "ssl.truststore.location" in props:
        options["ssl_cafile"] = props["ssl.truststore.location"]
    if "ssl.keystore.location" in props:
        options["ssl_certfile"] = options["ssl_keyfile"] = props["ssl.keystore.location"]
        if "ssl.key.password" in props:
            options["ssl_password"] = props["ssl.key.password"]
    if props.get("ssl.endpoint.identification.algorithm", "https") == "":
        options["ssl_check_hostname"] = False
    if "request.timeout.ms" in props:
        text = props["request.timeout.ms"].strip()
        if not text.isdigit() or not 0 < int(text) < 2**31:
            raise LogwrightError(f"{command_config}: request.timeout.ms {text!r} is not a "
                                 "positive int")
        options["request_timeout_ms"] = int(text)
    return options


def _wrapped(exc: BaseException) -> LogwrightError:
    """kafka-python's error as one line with Kafka's error name and code."""
    code = getattr(exc, "errno", None)
    name = type(exc).__name__
    text = str(exc)
    # kafka-python's admin errors quote the whole request and response; the broker's own
    # error_message says it in one line.
    said = re.search(r"error_message=(['\"])(.+?)\1", text)
    detail = said.group(2) if said else (text.split(": ", 1)[-1] if ": " in text else text)
    if isinstance(code, int) and code > 0:
        try:
            return KafkaError.of(Errors(code), detail)
        except ValueError:
            pass
        return LogwrightError(f"{name} ({code}): {detail}")
    return LogwrightError(f"{name}: {detail}" if detail else name)


def _error(code: int) -> Errors:
    try:
        return Errors(code)
    except ValueError:
        return Errors.INVALID_REQUEST


class RemoteCluster:
    """A cluster reached through ``bootstrap`` (``host:port,...``) with kafka-python."""

    def __init__(self, bootstrap: str, command_config: str | None = None,
                 timeout_ms: int = 30_000) -> None:
        from kafka.admin import KafkaAdminClient
        from kafka.errors import KafkaError as ClientError

        options = {"request_timeout_ms": timeout_ms, **client_options(command_config)}
        self.timeout_ms = options["request_timeout_ms"]
        try:
            self.admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","),
                                          bootstrap_timeout_ms=self.timeout_ms,
                                          client_id="logwright-tools", **options)
        except ClientError as exc:
            raise LogwrightError(f"cannot reach the cluster at {bootstrap}: {exc}") from None

    def close(self) -> None:
        """Close the connections."""
        self.admin.close()

    def __enter__(self) -> RemoteCluster:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # ---- reads -------------------------------------------------------------------------

    def brokers(self) -> list[int]:
        """The live brokers' ids."""
        return sorted(b["broker_id"] for b in self.admin.describe_cluster()["brokers"])

    def topics(self) -> dict[str, dict[str, Any]]:
        """Every topic's metadata by name (kafka-python's describe_topics entries)."""
        return {t["name"]: t for t in self.admin.describe_topics()}

    def partition_counts(self) -> dict[str, int]:
        """Every topic's partition count."""
        return {name: len(t["partitions"]) for name, t in self.topics().items()}

    def describe_log_dirs(self, brokers: Sequence[int] | None = None
                          ) -> dict[int, DescribeLogDirsResponse]:
        """Each broker's DescribeLogDirs answer, as the in-process ``Cluster`` returns it."""
        live = self.brokers()
        for b in brokers or ():
            if b not in live:
                raise LogwrightError(f"--broker-list: broker {b} is not a live broker of the "
                                     f"cluster (live: {','.join(map(str, live))})")
        wanted = set(brokers) if brokers else set(live)
        out = {}
        for entry in self.admin.describe_log_dirs(brokers=sorted(wanted)):
            out[entry["broker"]] = DescribeLogDirsResponse(0, Errors.NONE, tuple(
                DescribeLogDirsResult(
                    d["log_dir"], _error(d["error_code"]), tuple(
                        DescribeLogDirsTopic(t["name"], tuple(
                            DescribeLogDirsPartition(p["partition_index"], p["partition_size"],
                                                     p["offset_lag"], p["is_future_key"])
                            for p in t["partitions"]))
                        for t in d["topics"]),
                    d.get("total_bytes", -1), d.get("usable_bytes", -1))
                for d in entry["log_dirs"]))
        return out

    def reassignment_statuses(self, plan: ReassignmentPlan) -> list[ReassignmentStatus]:
        """``plan``'s partitions as ``Controller.reassignment_status`` describes them, from
        ListPartitionReassignments and Metadata."""
        pending = {(tp.topic, tp.partition): info for tp, info in
                   self.admin.list_partition_reassignments().items()}
        topics = self.topics()
        out = []
        for move in plan.moves:
            tp = move.tp
            meta = next((p for p in topics.get(tp.topic, {}).get("partitions", ())
                         if p["partition_index"] == tp.partition), None)
            replicas = tuple(meta["replica_nodes"]) if meta else ()
            isr = tuple(meta["isr_nodes"]) if meta else ()
            leader = meta["leader_id"] if meta else -1
            info = pending.get((tp.topic, tp.partition))
            if info is not None:
                adding = tuple(info["adding_replicas"])
                removing = tuple(info["removing_replicas"])
                target = tuple(r for r in info["replicas"] if r not in removing)
                state = "in progress"
            else:
                adding = removing = ()
                target = move.replicas
                state = "complete" if replicas == move.replicas else "differs"
            out.append(ReassignmentStatus(tp, state, target, replicas, isr, leader, adding,
                                          removing, tuple(r for r in target if r not in isr)))
        return out

    def describe_topic_configs(self, topic: str, all_configs: bool) -> list[dict[str, Any]]:
        """``topic``'s configs (only its overrides unless ``all_configs``): dicts with name,
        value, config_source and is_sensitive."""
        from kafka.admin import ConfigResource, ConfigResourceType

        answer = self.call(lambda: self.admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic)],
            config_filter="all" if all_configs else "modified"))
        entries = answer.get("topic", {}).get(topic, {})
        if isinstance(entries, Exception):
            raise _wrapped(entries)
        return [{"name": name, **entry} for name, entry in sorted(entries.items())]

    def call(self, fn: Any) -> Any:
        """``fn()``, kafka-python's errors raised as logwright's, with Kafka's names."""
        from kafka.errors import KafkaError as ClientError

        try:
            return fn()
        except ClientError as exc:
            raise _wrapped(exc) from None

    # ---- changes -----------------------------------------------------------------------

    def delete_records(self, offsets: Mapping[tuple[str, int], int], timeout_ms: int
                       ) -> dict[tuple[str, int], tuple[int, Errors]]:
        """DeleteRecords to each partition's leader: (low watermark, error) per partition."""
        from kafka import TopicPartition as KafkaTopicPartition
        from kafka.errors import KafkaError as ClientError

        out: dict[tuple[str, int], tuple[int, Errors]] = {}
        for (topic, partition), offset in offsets.items():
            tp = KafkaTopicPartition(topic, partition)
            try:
                result = self.admin.delete_records({tp: offset}, timeout_ms=timeout_ms)[tp]
                out[(topic, partition)] = (result.get("low_watermark", -1),
                                           _error(result.get("error_code", 0)))
            except ClientError as exc:
                out[(topic, partition)] = (-1, _error(getattr(exc, "errno", 42) or 42))
        return out

    def reassign(self, plan: ReassignmentPlan) -> None:
        """Start ``plan``: AlterPartitionReassignments, then AlterReplicaLogDirs for every
        replica it names a dir for (Kafka's tool does the same, in the same order)."""
        from kafka import TopicPartition as KafkaTopicPartition
        from kafka.structs import TopicPartitionReplica

        answers = self.admin.alter_partition_reassignments(
            {KafkaTopicPartition(m.tp.topic, m.tp.partition): list(m.replicas)
             for m in plan.moves}, timeout_ms=self.timeout_ms)
        failed = {tp: err for tp, err in answers.items() if err is not None}
        if failed:
            tp, err = next(iter(failed.items()))
            raise KafkaError.of(_error(getattr(err, "errno", 42) or 42),
                                f"{tp.topic}-{tp.partition}: {err.__name__}")
        dirs = {TopicPartitionReplica(m.tp.topic, m.tp.partition, b): d
                for m in plan.moves for b, d in zip(m.replicas, m.log_dirs, strict=True)
                if d != "any"}
        # A replica the reassignment adds does not exist on its broker yet
        # (REPLICA_NOT_AVAILABLE): asked again until it does, as Kafka's tool does.
        deadline = time.monotonic() + self.timeout_ms / 1000
        while dirs:
            errors = self.admin.alter_replica_log_dirs(dirs)
            dirs = {r: d for r, d in dirs.items()
                    if getattr(errors.get(r), "errno", 0) == int(Errors.REPLICA_NOT_AVAILABLE)}
            bad = {r: e for r, e in errors.items()
                   if getattr(e, "errno", 0) not in (0, int(Errors.REPLICA_NOT_AVAILABLE))}
            if bad:
                r, e = next(iter(bad.items()))
                raise KafkaError.of(_error(e.errno), f"{r.topic}-{r.partition}-{r.broker_id}: "
                                    f"{e.__name__}")
            if dirs and time.monotonic() > deadline:
                raise KafkaError.of(Errors.REPLICA_NOT_AVAILABLE, "replicas not created in "
                                    f"time for their log dir moves: {sorted(map(str, dirs))}")
            if dirs:
                time.sleep(0.2)

