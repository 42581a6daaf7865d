"""The ``logwright`` command line."""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from logwright import __version__
from logwright.errors import LogwrightError

#: Exit codes of every command (documented in docs/cli.md and in ``logwright --help``).
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_MISSED = 3
EXIT_UNDECIDED = 4
EXIT_INTERNAL = 5
EXIT_IN_PROGRESS = 6  # reassign-partitions: the reassignment is still in progress


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "unknown error"


class LogwrightGroup(click.Group):
    """A click group whose commands fail in one line: ``error: <message>`` on stderr and a
    documented exit code, with the traceback only under ``--debug``."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; turn a failure into one line on stderr and its exit code."""
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise  # click's own: usage errors exit 2 with click's message
        except Exception as exc:
            code, message = _failure(exc)
            if ctx.params.get("debug"):
                traceback.print_exception(exc)
            click.echo(f"error: {_one_line(message)}", err=True)
            ctx.exit(code)


def _failure(exc: Exception) -> tuple[int, str]:
    """The exit code and message for a command that raised ``exc``."""
    if isinstance(exc, LogwrightError):
        return EXIT_FAILED, str(exc)
    if isinstance(exc, OSError):
        return EXIT_FAILED, (f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror
                             else str(exc))
    return EXIT_INTERNAL, (f"internal error ({type(exc).__name__}: {exc}); rerun with --debug "
                           "for the traceback")


_BOOTSTRAP_REQUIRED = click.option(
    "--bootstrap-server", "bootstrap", required=True, metavar="HOST:PORT,...",
    help="The cluster to talk to over Kafka's protocol (e.g. a 'logwright serve').")
_BOOTSTRAP_OPTIONAL = click.option(
    "--bootstrap-server", "bootstrap", default=None, metavar="HOST:PORT,...",
    help="Reach the cluster over Kafka's protocol (e.g. a 'logwright serve') instead of "
         "opening DATA_PATH.")
_COMMAND_CONFIG = click.option(
    "--command-config", default=None, metavar="FILE", type=click.Path(dir_okay=False),
    help="With --bootstrap-server: Kafka client properties (security.protocol, sasl.mechanism, "
         "sasl.jaas.config, PEM ssl.truststore/keystore, request.timeout.ms).")


@click.group(cls=LogwrightGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="""\b
Exit codes:
  0  ok
  1  the operation failed: bad input, a Kafka error, a data directory problem
  2  usage error
  3  verify: a deliberately planted bug was not caught
  4  verify: a check could not decide; check: stopped by --max-states
  5  internal or tool error (rerun with --debug)
  6  reassign-partitions: the reassignment is still in progress
A failure prints one line on stderr, 'error: <message>'; --debug adds the traceback.""")
@click.version_option(__version__, prog_name="logwright")
@click.option("--debug", is_flag=True, help="On failure, print the traceback too.")
def main(debug: bool) -> None:
    """logwright: the Kafka broker's log lifecycle, implemented and verified."""


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON, not a table.")
@click.option("--suite", "only", multiple=True, metavar="NAME",
              help="Run only this suite (repeatable): storage, formal, agreement, traces; "
                   "see --list.")
@click.option("--module", "modules", multiple=True, metavar="NAME",
              help="The formal and agreement suites check only this TLA+ module "
                   "(repeatable), e.g. LogStartOffset; default: every module.")
@click.option("--list", "list_suites", is_flag=True, help="List the suites and exit.")
@click.option("--quiet", "-q", is_flag=True,
              help="No progress lines on stderr, only the table (or JSON) and the summary.")
def verify(as_json: bool, only: tuple[str, ...], modules: tuple[str, ...], list_suites: bool,
           quiet: bool) -> None:
    """Check every safety invariant by every method available.

    Runs, in order: the storage crash campaign (suite "storage"), then the explicit-state model
    checker on every TLA+ module, the Z3 proofs, and TLC when TLA2TOOLS_JAR names a tla2tools.jar
    (suite "formal"), then each packed encoding against its readable twin on every reachable
    state of every shipped .cfg (suite "agreement"), then recorded traces on Spark (suite
    "traces"). Prints a line on stderr as each check starts and ends, then one table
    (invariant x method -> verdict, checks, time) with the details numbered below it, and a
    summary line. Every check is bounded by counts and z3 resource limits, never by time: the
    verdicts are the same on a fast or a loaded machine.

    \b
    Exit codes (when several apply, the first in this order wins: 1, 3, 5, 4):
      0  every invariant holds, every injected bug is caught (skipped allowed)
      1  a safety invariant is VIOLATED
      2  usage error (an unknown option or suite)
      3  an injected bug was MISSED: a checker is too weak to see it
      4  UNDECIDED: a proof used up its resource limit without deciding
      5  ERROR: a check crashed, or a tool (TLC, SANY) failed
    """
    from logwright.verify import render_json, render_table, run_suites
    from logwright.verify.core import Progress, exit_code, summary
    from logwright.verify.suites import DESCRIPTIONS, SUITES

    if list_suites:
        for name, _ in SUITES:
            click.echo(f"{name:<9} {DESCRIPTIONS.get(name, '')}".rstrip())
        return
    unknown = set(only) - {name for name, _ in SUITES}
    if unknown:
        raise click.BadParameter(f"unknown suite(s): {', '.join(sorted(unknown))}; "
                                 f"choose from: {', '.join(n for n, _ in SUITES)}",
                                 param_hint="--suite")
    chosen = [(n, s) for n, s in SUITES if not only or n in only]
    if modules:
        from functools import partial

        from logwright.model import SPECS
        from logwright.verify.agreement import agreement_suite
        from logwright.verify.formal import formal_suite

        unknown = set(modules) - set(SPECS)
        if unknown:
            raise click.BadParameter(f"unknown module(s): {', '.join(sorted(unknown))}; "
                                     f"choose from: {', '.join(SPECS)}", param_hint="--module")
        narrowed = {"formal": partial(formal_suite, modules),
                    "agreement": partial(agreement_suite, modules)}
        chosen = [(n, narrowed.get(n, s)) for n, s in chosen]
    progress = Progress(None if quiet else sys.stderr)
    rows = run_suites(chosen, progress=progress)
    if as_json:
        click.echo(render_json(rows))
        click.echo(summary(rows), err=True)
    else:
        render_table(rows, Console())
        click.echo(summary(rows))
    sys.exit(exit_code(rows))


@main.command()
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the campaign: batch i of examples is seeded SEED + i.")
@click.option("--max-examples", type=click.IntRange(min=1), default=None,
              help="Stop after this many examples (default: run until interrupted).")
@click.option("--duration", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="Stop starting new batches after this long (it decides when to stop "
                   "looking, never a verdict).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="traces/regressions",
              show_default=True, help="Where each failure is saved as a replayable trace.")
@click.option("--avoid-known-defects", is_flag=True,
              help="Leave out the rules known open defects make fail (none today: issue "
                   "10's topic re-creation is fixed).")
@click.option("--steps", type=click.IntRange(min=1), default=40, show_default=True,
              help="Steps per example.")
@click.option("--light", is_flag=True,
              help="Leave out the per-event refinement checks of the LogStartOffset, "
                   "ControllerFencing, FetcherFailure and StrayCleanup models (about 8 times "
                   "faster): every property of the run (no acknowledged record lost, none "
                   "served wrongly, topic identity) and the LeaderElection and ReplicaMove "
                   "checks stay. For long campaigns after durability; CI's runs check all.")
@click.option("--seeds", type=click.IntRange(min=1), default=None, metavar="N",
              help="Instead of the state machine's batches: N seeded runs, seeds SEED to "
                   "SEED+N-1, each STEPS actions, each recording its trace into --out (which "
                   "must be given) and checking it against the models.")
@click.option("--master", default=None, metavar="URL",
              help="With --seeds: spread the seeds over Spark tasks at this master "
                   "(local[2], spark://HOST:PORT, ...); without it a process pool runs them.")
@click.option("--workers", type=click.IntRange(min=1), default=None, metavar="N",
              help="With --seeds and no --master: processes (default: one per core).")
@click.pass_context
def fuzz(ctx: click.Context, seed: int, max_examples: int | None, duration: float | None,
         out_dir: str, avoid_known_defects: bool, steps: int, light: bool, seeds: int | None,
         master: str | None, workers: int | None) -> None:
    """Fuzz the simulated cluster: every user action and fault, the properties after each step.

    Runs seeded batches of the cluster state machine until interrupted (Ctrl-C), or until
    --max-examples or --duration. Progress on stderr (examples, steps, failures, the current
    seed). Each failure is shrunk and written to --out as a trace JSON that
    tests/test_regression_traces.py replays. Exit code 0 when nothing failed, 1 when a failure
    was found (its trace files are listed).

    With --seeds N: N seeded runs instead (docs/pipeline.md), on Spark with --master. Each
    seed's trace goes to --out as seed-<seed>.jsonl and is checked against the models; a
    failing run's steps are saved in --out/failures/; summary.json lists every seed. The same
    seeds give the same results on either engine.
    """
    from logwright.verify.fuzz import run_campaign

    if seeds is not None:
        given = ctx.get_parameter_source("out_dir") == click.core.ParameterSource.COMMANDLINE
        if not given:
            raise click.BadParameter("--seeds writes a trace per seed: give --out DIR",
                                     param_hint="--out")
        if max_examples is not None or duration is not None or avoid_known_defects:
            raise click.BadParameter("--seeds runs seeded runs, not the state machine: no "
                                     "--max-examples, --duration or --avoid-known-defects",
                                     param_hint="--seeds")
        _fuzz_seeds(seed, seeds, steps, Path(out_dir), master, workers, light)
        return
    if master is not None or workers is not None:
        raise click.BadParameter("--master and --workers go with --seeds", param_hint="--seeds")
    from logwright.verify.stateful_cluster import KNOWN_DEFECT_RULES

    result = run_campaign(seed, max_examples=max_examples, duration_s=duration,
                          out_dir=Path(out_dir), steps_per_example=steps,
                          avoid=KNOWN_DEFECT_RULES if avoid_known_defects else (),
                          progress=sys.stderr, light=light)
    per_min, per_s = result.rates()
    click.echo(f"{result.examples} examples, {result.steps} steps in {result.elapsed_s:.1f} s "
               f"({per_min:.0f} examples/min, {per_s:.0f} steps/s); "
               f"{len(result.found)} failure(s)")
    for found in result.found:
        where = found.path if found.path is not None else "(a repeat, not saved again)"
        click.echo(f"  seed {found.seed}: {where}: {found.message}")
    sys.exit(EXIT_FAILED if result.found else EXIT_OK)


def _fuzz_seeds(first: int, n: int, steps: int, out: Path, master: str | None,
                workers: int | None, light: bool) -> None:
    from logwright.verify.seed_runs import run_seeds

    campaign = run_seeds(range(first, first + n), steps, out, master=master, workers=workers,
                         light=light)
    campaign.write_summary(out)
    for r in campaign.failures:
        what = r.failure or (f"trace check: {r.trace_violations} violation(s), "
                             f"{r.trace_bad_input} bad input (logwright traces check "
                             f"{out / r.trace})")
        click.echo(f"  seed {r.seed}: {what}")
    steps_run = sum(r.steps for r in campaign.results)
    events = sum(r.trace_events for r in campaign.results)
    start = (f", Spark session {campaign.startup_seconds:.1f} s"
             if campaign.startup_seconds else "")
    click.echo(f"{len(campaign.results)} seeds ({campaign.engine}), {steps_run} steps, "
               f"{events:,} trace events in {campaign.seconds:.1f} s{start}; "
               f"{len(campaign.failures)} failure(s); traces and summary.json in {out}")
    sys.exit(EXIT_FAILED if campaign.failures else EXIT_OK)


@main.command()
@click.option("--seed", type=int, default=1, show_default=True,
              help="Seed of the simulated world.")
@click.option("--real", "real_path", metavar="DIR", default=None,
              help="Run on the real file system under DIR (a new or empty directory) instead "
                   "of in simulation.")
@click.option("--trace", "trace_path", metavar="PATH", default=None,
              help="Record the run's model events to PATH (JSON Lines), for "
                   "'logwright traces check'.")
def demo(seed: int, real_path: str | None, trace_path: str | None) -> None:
    """Run a small 3-broker cluster: produce, crash the leader, fail the controller over.

    With --real, DIR must not exist yet or be empty: the demo refuses a directory that already
    holds data (a second run would mix two runs' data); remove it or choose another DIR.
    """
    from logwright.cluster.demo import run_demo

    console = Console()
    cluster = run_demo(lambda line: console.print(line, highlight=False), seed, real_path,
                       trace=trace_path)
    cluster.close()


@main.command()
@click.option("--data-dir", "data_dir", required=True, metavar="DIR",
              help="The cluster's data: opened if it holds one, created if new or empty.")
@click.option("--brokers", type=click.IntRange(1, 64), default=None,
              help="Brokers of a new cluster (default 3; an existing one keeps its own).")
@click.option("--log-dirs-per-broker", "dirs", type=click.IntRange(1, 16), default=None,
              help="Log dirs per broker of a new cluster (default 2).")
@click.option("--listeners", default=None, metavar="LIST",
              help="Comma-separated PROTOCOL://HOST:PORT entries (PLAINTEXT, SSL, "
                   "SASL_PLAINTEXT, SASL_SSL; a bare HOST:PORT is PLAINTEXT): per protocol "
                   "either one entry per broker, in broker order, or one entry with port 0 for "
                   "free ports on every broker. Default: PLAINTEXT://127.0.0.1:0.")
@click.option("--config", "config_file", default=None, metavar="FILE",
              type=click.Path(dir_okay=False),
              help="A server.properties file configuring every broker and the controller.")
@click.option("--max-request-bytes", type=click.IntRange(1024, 2**31 - 1),
              default=104_857_600, show_default=True,
              help="socket.request.max.bytes: a larger request frame closes its connection.")
@click.option("--users", "users_file", default=None, metavar="FILE",
              type=click.Path(dir_okay=False),
              help="SASL users (PLAIN and SCRAM-SHA-256), one name=password per line; needed "
                   "by SASL listeners. Keep it readable by the server only.")
@click.option("--ssl-certfile", default=None, metavar="PEM", type=click.Path(dir_okay=False),
              help="The brokers' TLS certificate chain (SSL and SASL_SSL listeners).")
@click.option("--ssl-keyfile", default=None, metavar="PEM", type=click.Path(dir_okay=False),
              help="Its private key, if not in the certificate file.")
@click.option("--ssl-cafile", default=None, metavar="PEM", type=click.Path(dir_okay=False),
              help="CA certificates that client certificates are checked against.")
@click.option("--ssl-client-auth", is_flag=True,
              help="Require a client certificate (ssl.client.auth=required); on SSL listeners "
                   "its subject is the principal.")
@click.option("--super-user", "super_users", multiple=True, metavar="PRINCIPAL",
              help="A principal (User:NAME) that every ACL check allows (repeatable).")
def serve(data_dir: str, brokers: int | None, dirs: int | None, listeners: str | None,
          config_file: str | None, max_request_bytes: int, users_file: str | None,
          ssl_certfile: str | None, ssl_keyfile: str | None, ssl_cafile: str | None,
          ssl_client_auth: bool, super_users: tuple[str, ...]) -> None:
    """Run a real cluster with its brokers on the network, speaking Kafka's protocol.

    Prints "bootstrap.servers=HOST:PORT,..." (the first listener; other listeners follow as
    "bootstrap.servers.PROTOCOL=...") once every broker listens, then serves Kafka clients
    (kafka-python, confluent-kafka, kcat) until Ctrl-C or SIGTERM, when it closes every
    connection and shuts the brokers down cleanly (clean-shutdown markers written). The APIs
    served, security and ACLs are in docs/wire.md.

    \b
    Exit codes:
      0  stopped by Ctrl-C or SIGTERM after a clean shutdown
      1  the cluster could not start (a bad DIR, a port in use, a bad config, users or
         certificate file)
      2  usage error
      5  internal error (rerun with --debug)
    """
    import signal
    import threading

    from logwright.cluster import Cluster
    from logwright.errors import ClusterError
    from logwright.wire import WireServer
    from logwright.wire.security import SecurityConfig, Users, server_ssl_context

    existing = os.path.isfile(os.path.join(data_dir, "metadata.db"))
    if existing:
        layout = _cluster_layout(data_dir)
        for name, given, actual in (("--brokers", brokers, layout[0]),
                                    ("--log-dirs-per-broker", dirs, layout[1])):
            if given is not None and given != actual:
                raise ClusterError(f"{data_dir} holds a cluster with {name} {actual}, "
                                   f"not {given}")
        brokers, dirs = layout
    brokers = 3 if brokers is None else brokers
    dirs = 2 if dirs is None else dirs
    configs = parse_listeners(listeners, brokers)
    for principal in super_users:
        if not principal.startswith("User:") or principal == "User:":
            raise ClusterError(f"--super-user {principal!r}: a principal is User:NAME")
    users = Users.from_file(users_file) if users_file is not None else Users()
    context = None
    if ssl_certfile is not None:
        context = server_ssl_context(ssl_certfile, ssl_keyfile, ssl_cafile, ssl_client_auth)
    elif ssl_keyfile is not None or ssl_cafile is not None or ssl_client_auth:
        raise ClusterError("--ssl-keyfile, --ssl-cafile and --ssl-client-auth need "
                           "--ssl-certfile")
    security = SecurityConfig(users, context, tuple(super_users))
    for config in configs:
        if config.protocol.tls and context is None:
            raise ClusterError(f"a {config.protocol.value} listener needs --ssl-certfile")
        if config.protocol.sasl and not len(users):
            raise ClusterError(f"a {config.protocol.value} listener needs --users")
    stop = threading.Event()

    def on_signal(_signum: int, _frame: object) -> None:
        stop.set()

    previous = signal.signal(signal.SIGTERM, on_signal)
    try:
        with Cluster.real(data_dir, brokers=brokers, log_dirs_per_broker=dirs,
                          config_file=config_file) as cluster:
            server = WireServer(cluster, listeners=configs, security=security,
                                max_request_bytes=max_request_bytes)
            try:
                for i, config in enumerate(configs):
                    key = ("bootstrap.servers" if i == 0
                           else f"bootstrap.servers.{config.protocol.value}")
                    click.echo(f"{key}={server.bootstrap_for(config.protocol)}")
                for x in server.listeners:
                    click.echo(f"broker {x.broker_id} listening on {x.protocol.value}://"
                               f"{x.host}:{x.port}", err=True)
                try:
                    server.serve_forever(stop)
                except KeyboardInterrupt:
                    pass
            finally:
                server.close()
        click.echo("stopped: every broker shut down cleanly", err=True)
    finally:
        signal.signal(signal.SIGTERM, previous)


def parse_listeners(text: str | None, brokers: int) -> list[Any]:
    """``--listeners``: one ``ListenerConfig`` per protocol named, in the order first named."""
    from logwright.errors import InvalidArgument
    from logwright.wire.security import Protocol
    from logwright.wire.server import ListenerConfig

    if text is None:
        return [ListenerConfig(Protocol.PLAINTEXT, "127.0.0.1", {})]
    grouped: dict[Protocol, list[tuple[str, int]]] = {}
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        protocol = Protocol.PLAINTEXT
        if "://" in item:
            scheme, item = item.split("://", 1)
            try:
                protocol = Protocol(scheme.upper())
            except ValueError:
                raise InvalidArgument(f"--listeners: unknown protocol {scheme!r}; one of "
                                      f"{', '.join(p.value for p in Protocol)}") from None
        host, sep, port_text = item.rpartition(":")
        host = host.strip("[]")
        if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
            raise InvalidArgument(f"--listeners: {item!r} is not HOST:PORT")
        grouped.setdefault(protocol, []).append((host, int(port_text)))
    if not grouped:
        raise InvalidArgument("--listeners: no listener given")
    out = []
    for protocol, entries in grouped.items():
        hosts = {h for h, _ in entries}
        if len(hosts) > 1:
            raise InvalidArgument(f"--listeners: the {protocol.value} listener of every "
                                  f"broker is on one host, not {sorted(hosts)}")
        if len(entries) == 1 and entries[0][1] == 0:
            ports: dict[int, int] = {}
        elif len(entries) == brokers:
            ports = {b: port for b, (_, port) in enumerate(entries, start=1)}
        else:
            raise InvalidArgument(f"--listeners: {len(entries)} {protocol.value} listener(s) "
                                  f"for {brokers} broker(s); give one per broker, or one with "
                                  f"port 0")
        out.append(ListenerConfig(protocol, hosts.pop(), ports))
    return out




def _one_action(**actions: bool) -> str:
    chosen = [name for name, on in actions.items() if on]
    if len(chosen) != 1:
        raise click.UsageError("give exactly one of "
                               + ", ".join(f"--{a}" for a in actions))
    return chosen[0]


def _config_pairs(values: tuple[str, ...], option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for text in values:
        for item in (x for x in text.split(",") if x.strip()):
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint=option)
            out[key.strip()] = value.strip()
    return out


@main.command()
@_BOOTSTRAP_REQUIRED
@_COMMAND_CONFIG
@click.option("--create", is_flag=True, help="Create --topic.")
@click.option("--list", "list_", is_flag=True, help="List the topics' names.")
@click.option("--describe", is_flag=True, help="Describe --topic (default: every topic).")
@click.option("--delete", is_flag=True, help="Delete --topic.")
@click.option("--alter", is_flag=True, help="Give --topic more --partitions.")
@click.option("--topic", default=None, metavar="NAME", help="The topic.")
@click.option("--partitions", type=click.IntRange(1, 2**31 - 1), default=None,
              help="Partitions (--create: default 1; --alter: the new, larger count).")
@click.option("--replication-factor", type=click.IntRange(1, 32767), default=None,
              help="--create: replicas per partition (default min(3, brokers)).")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE",
              help="--create: a topic config (repeatable).")
def topics(bootstrap: str, command_config: str | None, create: bool, list_: bool,
           describe: bool, delete: bool, alter: bool, topic: str | None,
           partitions: int | None, replication_factor: int | None,
           configs: tuple[str, ...]) -> None:
    """Create, list, describe, delete and grow topics (kafka-topics.sh), over the protocol.

    Output is Kafka's: "Created topic NAME." for --create; names one a line for --list; for
    --describe, per topic "Topic: t<TAB>TopicId: ...<TAB>PartitionCount: N<TAB>
    ReplicationFactor: N<TAB>Configs: k=v,..." and per partition "<TAB>Topic: t<TAB>Partition:
    0<TAB>Leader: 1<TAB>Replicas: 1,2,3<TAB>Isr: 1,2,3"; nothing for --delete and --alter.

    \b
    Exit codes:
      0  done
      1  the cluster refused (its error's Kafka name and code on stderr) or cannot be reached
      2  usage error (not exactly one action, --topic missing)
      5  internal error (rerun with --debug)
    """
    from kafka.admin import NewPartitions, NewTopic

    from logwright.tools.remote import RemoteCluster

    action = _one_action(create=create, list=list_, describe=describe, delete=delete,
                         alter=alter)
    if action in ("create", "delete", "alter") and topic is None:
        raise click.UsageError(f"--{action} needs --topic")
    if action == "alter" and partitions is None:
        raise click.UsageError("--alter needs --partitions (the new count)")
    pairs = _config_pairs(configs, "--config")
    with RemoteCluster(bootstrap, command_config) as remote:
        admin = remote.admin
        if action == "create":
            assert topic is not None
            rf = replication_factor or min(3, len(remote.brokers()))
            remote.call(lambda: admin.create_topics(
                [NewTopic(topic, partitions or 1, rf, topic_configs=pairs)]))
            click.echo(f"Created topic {topic}.")
        elif action == "list":
            for name in sorted(remote.topics()):
                click.echo(name)
        elif action == "delete":
            remote.call(lambda: admin.delete_topics([topic]))
        elif action == "alter":
            assert topic is not None and partitions is not None
            remote.call(lambda: admin.create_partitions({topic: NewPartitions(partitions)}))
        else:
            known = remote.topics()
            if topic is not None and topic not in known:
                raise LogwrightError(f"UNKNOWN_TOPIC_OR_PARTITION (3): no topic {topic}")
            for name in [topic] if topic is not None else sorted(known):
                meta = known[name]
                parts = sorted(meta["partitions"], key=lambda p: p["partition_index"])
                dynamic = remote.describe_topic_configs(name, all_configs=False)
                click.echo(f"Topic: {name}\tTopicId: {_short_uuid(meta.get('topic_id'))}\t"
                           f"PartitionCount: {len(parts)}\tReplicationFactor: "
                           f"{len(parts[0]['replica_nodes']) if parts else 0}\tConfigs: "
                           + ",".join(f"{c['name']}={c['value']}" for c in dynamic))
                for p in parts:
                    click.echo(f"\tTopic: {name}\tPartition: {p['partition_index']}\t"
                               f"Leader: {p['leader_id'] if p['leader_id'] >= 0 else 'none'}\t"
                               f"Replicas: {','.join(map(str, p['replica_nodes']))}\t"
                               f"Isr: {','.join(map(str, p['isr_nodes']))}")


def _short_uuid(text: object) -> str:
    """A topic id as Kafka prints it (URL-safe base64 of its 16 bytes, no padding)."""
    import base64
    import uuid

    if not isinstance(text, str):
        return str(text)
    try:
        raw = uuid.UUID(text).bytes
    except ValueError:
        return text
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@main.command()
@_BOOTSTRAP_REQUIRED
@_COMMAND_CONFIG
@click.option("--entity-type", type=click.Choice(["topics"]), required=True,
              help="What the configs belong to (topics; a broker's are in its "
                   "server.properties).")
@click.option("--entity-name", required=True, metavar="NAME", help="The topic.")
@click.option("--describe", is_flag=True, help="Print the topic's config overrides.")
@click.option("--all", "all_", is_flag=True, help="With --describe: every config, not only "
              "the overrides.")
@click.option("--alter", is_flag=True, help="Change configs (--add-config, --delete-config).")
@click.option("--add-config", "add", multiple=True, metavar="K=V,...",
              help="--alter: set these overrides.")
@click.option("--delete-config", "remove", multiple=True, metavar="K,...",
              help="--alter: remove these overrides (the broker default applies again).")
def configs(bootstrap: str, command_config: str | None, entity_type: str, entity_name: str,
            describe: bool, all_: bool, alter: bool, add: tuple[str, ...],
            remove: tuple[str, ...]) -> None:
    """Describe and change a topic's configs (kafka-configs.sh), over the protocol.

    --describe prints Kafka's "Dynamic configs for topic t are:" (with --all, "All configs
    for topic t are:") and one line per config, "  name=value sensitive=false
    synonyms={SOURCE:name=value}". --alter applies --add-config and --delete-config in one
    IncrementalAlterConfigs and prints "Completed updating config for topic t.".

    \b
    Exit codes:
      0  done
      1  the cluster refused (an unknown topic or config, a bad value) or cannot be reached
      2  usage error
      5  internal error (rerun with --debug)
    """
    from kafka.admin import ConfigResource, ConfigResourceType

    from logwright.tools.remote import RemoteCluster

    action = _one_action(describe=describe, alter=alter)
    if action == "alter" and not add and not remove:
        raise click.UsageError("--alter needs --add-config or --delete-config")
    if action == "describe" and (add or remove):
        raise click.UsageError("--add-config and --delete-config go with --alter")
    changes: dict[str, Any] = {k: ("SET", v) for k, v in _config_pairs(
        add, "--add-config").items()}  # a bad argument is refused before connecting
    for text in remove:
        for key in (k.strip() for k in text.split(",") if k.strip()):
            changes[key] = ("DELETE", None)
    with RemoteCluster(bootstrap, command_config) as remote:
        if action == "describe":
            entries = remote.describe_topic_configs(entity_name, all_configs=all_)
            click.echo(f"{'All' if all_ else 'Dynamic'} configs for topic {entity_name} are:")
            for c in entries:
                source = c.get("config_source", "UNKNOWN")
                click.echo(f"  {c['name']}={c['value']} sensitive="
                           f"{str(bool(c.get('is_sensitive'))).lower()} "
                           f"synonyms={{{source}:{c['name']}={c['value']}}}")
            return
        result = remote.call(lambda: remote.admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, entity_name, configs=changes)],
            raise_on_unknown=False))
        outcome = result.get("topic", {}).get(entity_name)
        if outcome != "OK":
            raise LogwrightError(f"topic {entity_name}: {outcome}")
        click.echo(f"Completed updating config for topic {entity_name}.")


@main.command("native")
@click.argument("action", type=click.Choice(["build", "clean", "status"]), default="status")
@click.option("--force", is_flag=True, help="build: compile even if the build is up to date.")
@click.option("--require", is_flag=True,
              help="build: fail (exit 5) if the build fails, instead of warning and leaving "
                   "pure Python to run.")
@click.option("--jobs", type=click.IntRange(1, 64), default=2, show_default=True,
              help="build: C compiler jobs.")
def native(action: str, force: bool, require: bool, jobs: int) -> None:
    """The compiled build: the hot modules compiled with mypyc beside their sources.

    \b
    status  say whether this process runs compiled code, and why (default)
    build   compile them (about 3 minutes; nothing to do if the build is of these sources)
    clean   remove the extension modules and the manifest

    Compiled code runs only when it was built from exactly the sources in the tree: an edit to
    any compiled module makes every module run from source until the next build. Set
    LOGWRIGHT_PURE=1 to run from source anyway. docs/native.md says more.
    """
    from logwright import _native

    if action == "status":
        click.echo(_native.status().describe())
    elif action == "clean":
        click.echo(f"removed {_native.clean()} file(s)")
    elif os.environ.get(_native.PURE_ENV, "") not in ("", "0"):
        click.echo(f"{_native.PURE_ENV} is set: nothing built, pure Python runs")
    else:
        try:
            click.echo(_native.build(jobs, force))
        except RuntimeError as exc:
            if require:
                click.echo(f"error: {exc}\n(set {_native.PURE_ENV}=1 to run without the "
                           "compiled build)", err=True)
                sys.exit(EXIT_INTERNAL)
            click.echo(f"warning: {exc}", err=True)


@main.command("check")
@click.argument("module", metavar="MODULE")
@click.option("--cfg", "cfg_path", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="The TLC configuration to check (constants, invariants, constraint); "
                   "default: the module's own MODULE.cfg in spec/.")
@click.option("--workers", type=click.IntRange(min=1), default=None, metavar="N",
              help="Threads sharing the search (default: every core). The packed engine "
                   "uses them all; the generic engine uses one.")
@click.option("--max-states", type=click.IntRange(min=1), default=None, metavar="N",
              help="Stop after N distinct states (the verdict is then incomplete, exit 4).")
@click.option("--engine", type=click.Choice(["auto", "packed", "generic"]), default="auto",
              show_default=True,
              help="packed: states as 64-bit codes, levels expanded with numpy; generic: one "
                   "state at a time. auto takes packed when the module has it and the "
                   "constants' states fit in 64 bits.")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr.")
def check_command(module: str, cfg_path: str | None, workers: int | None,
                  max_states: int | None, engine: str, quiet: bool) -> None:
    """Model-check one TLA+ module's Python twin on a TLC configuration, as TLC would.

    Reads the constants, invariants and constraint of the .cfg, explores every reachable state
    breadth first, and prints TLC's verdict, counts and depth: the same distinct-state count
    and depth TLC reports for the same file. A violation is printed as TLC prints it, the
    shortest behaviour first state to last. While it runs, one line per level on stderr: depth,
    states generated and distinct, states queued, states per second and resident memory.

    \b
    Modules: LogStartOffset, ControllerFencing, FetcherFailure, StrayCleanup, ReplicaMove,
    LeaderElection.
    Exit codes: 0 no violation; 1 an invariant is violated (or the file is not a
    configuration of MODULE); 2 usage error; 4 stopped by --max-states before the end.
    """
    from logwright.model import SPECS
    from logwright.model.cfg import CfgError
    from logwright.model.checker import check
    from logwright.model.core import SearchProgress
    from logwright.verify.formal import spec_dir

    spec_class = SPECS.get(module)
    if spec_class is None:
        raise click.BadParameter(f"unknown module {module!r}; choose from: {', '.join(SPECS)}",
                                 param_hint="MODULE")
    path = Path(cfg_path) if cfg_path is not None else spec_dir() / f"{module}.cfg"
    try:
        spec = spec_class.from_cfg(path)  # type: ignore[attr-defined]
    except (CfgError, KeyError, TypeError, ValueError) as exc:
        raise LogwrightError(f"{path}: not a configuration of {module}: {exc}") from exc
    if engine == "packed" and not getattr(spec, "packed_available", lambda: False)():
        raise LogwrightError(f"{module} has no packed engine for the constants of {path} (no "
                             "packed encoding, or its states do not fit in 64 bits); use "
                             "--engine generic or auto")
    threads = workers if workers is not None else _cores()

    def show(p: SearchProgress) -> None:
        rate = p.distinct / p.seconds if p.seconds > 0 else 0.0
        click.echo(f"Progress({p.depth}): {p.generated:,} states generated, {p.distinct:,} "
                   f"distinct states found, {p.queued:,} states left on queue; "
                   f"{rate:,.0f} distinct/s, {_rss_mb():,.0f} MB resident", err=True)

    if not quiet:
        click.echo(f"Checking {module} on {path} with {threads} worker(s)", err=True)
    result = check(spec, max_states, packed={"auto": None, "packed": True,
                                             "generic": False}[engine],
                   workers=threads, progress=None if quiet else show)
    click.echo(result.tlc_report(spec))
    if not quiet:
        click.echo(f"Finished in {result.seconds:.2f} s ({result.states_per_second:,.0f} "
                   f"distinct states/s, {result.engine} engine, {_rss_mb():,.0f} MB "
                   "resident)", err=True)
    sys.exit(EXIT_FAILED if result.violation is not None
             else EXIT_OK if result.complete else EXIT_UNDECIDED)


def _cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _rss_mb() -> float:
    """This process's resident memory in MB (its peak where the current figure is not known)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3


@main.group()
def traces() -> None:
    """Recorded traces of the implementation (traces/SCHEMA.md)."""


@traces.command("check")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--quiet", "-q", is_flag=True, help="Only the failures and the summary line.")
@click.option("--master", default=None, metavar="URL",
              help="Run on Spark at this master: local[2], local[*], spark://HOST:PORT, yarn, "
                   "k8s://... (default: no Spark, one process). PATHs may then be any path "
                   "Hadoop's file systems understand (hdfs://, s3a://).")
@click.option("--out", "out_dir", default=None, metavar="DIR",
              type=click.Path(file_okay=False),
              help="Write violations, bad input and coverage (Parquet), summary.json and "
                   "coverage.png into DIR (created).")
@click.option("--partitions", type=click.IntRange(min=1), default=None, metavar="N",
              help="With --master: replay traces gathered by id in N tasks, read and check "
                   "files in about 4N (default N: twice Spark's parallelism).")
def traces_check(paths: tuple[str, ...], quiet: bool, master: str | None, out_dir: str | None,
                 partitions: int | None) -> None:
    """Replay traces (files, or directories of *.jsonl / *.parquet) against the model twins.

    Every event must be an enabled action of its model instance whose result equals the
    recorded values, and every invariant must hold after it. Events the models cannot express
    are counted as "outside the model", by reason, and are not failures.

    Events are grouped by trace id and replayed in sequence-number order. Bad input (a line
    that is not an event of this schema, a sequence number twice, events missing, a trace
    whose start is cut off) is reported with its reason, one "bad input:" line each; that
    trace is not replayed, every other one is.

    With --master the same checks run on Spark, in batches over whole partitions, with the
    same verdicts (docs/pipeline.md); the Spark session's start-up is reported apart from
    the work.

    \b
    Exit codes:
      0  every event checked
      1  an event was refused (not enabled, a mismatch, an invariant violated), or bad
         input (each reported above one "error:" line), or a PATH holds no trace, or
         --master without pyspark
      2  usage error (no PATH, or a local PATH that does not exist)
      5  internal error (rerun with --debug)
    """
    from logwright.verify.trace_outputs import write_outputs
    from logwright.verify.traces import CheckReport, TraceFormatError, check_paths

    for p in paths:
        if "://" not in p and not os.path.exists(p):
            raise click.BadParameter(f"{p!r} does not exist", param_hint="PATH...")
    extra: dict[str, object]
    if master is not None:
        from logwright.verify.spark import check_on_spark

        run = check_on_spark(paths, master, partitions=partitions, progress=not quiet)
        report, distinct, extra = run.report, run.distinct, run.timings()
    else:
        if any("://" in p for p in paths):
            raise click.BadParameter("a path with a scheme needs --master (Spark reads it)",
                                     param_hint="PATH...")
        if partitions is not None:
            raise click.BadParameter("--partitions needs --master", param_hint="--partitions")
        # A directory without a trace: one "error:" line, exit 1.
        report = check_paths(paths, CheckReport(track_states=out_dir is not None))
        distinct = report.distinct_states()
        extra = {"engine": "single process", "work_seconds": round(report.seconds, 3),
                 "events_per_second": round(report.events_per_second)}
    for failure in report.failures:
        click.echo(failure.format())
    for bad in report.bad_input:
        click.echo(bad.format())
    if not quiet:
        for name, n in sorted(report.actions.items()):
            click.echo(f"  step     {n:>7,}  {name}")
        for name, n in sorted(report.stutter_actions.items()):
            click.echo(f"  stutter  {n:>7,}  {name}")
        for reason, n in sorted(report.outside.items()):
            click.echo(f"  outside  {n:>7,}  {reason}")
    if master is not None:
        click.echo(f"Spark {extra['master']}: session started in "
                   f"{extra['session_start_seconds']:.1f}s, {extra['partitions']} replay tasks")
    if out_dir is not None:
        write_outputs(report, Path(out_dir), distinct, extra)
        click.echo(f"wrote violations, bad input, coverage and states (Parquet), summary.json "
                   f"and coverage.png into {out_dir}")
    click.echo(report.summary())
    if report.bad_input:
        raise TraceFormatError(f"bad input in {len(report.bad_input)} place(s), each reported "
                               "above; the other traces were checked")
    sys.exit(EXIT_OK if report.ok else EXIT_FAILED)


@main.group("log-dirs", invoke_without_command=True)
@click.option("--describe", "describe_path", metavar="DATA_PATH", default=None,
              is_flag=False, flag_value="",
              help="Print Kafka's JSON of the log dirs of the cluster under DATA_PATH (or, "
                   "with --bootstrap-server, of the cluster there).")
@_BOOTSTRAP_OPTIONAL
@_COMMAND_CONFIG
@click.option("--broker-list", default=None, metavar="1,2",
              help="With --describe: only these brokers (default: every running broker).")
@click.option("--topic-list", default=None, metavar="t1,t2",
              help="With --describe: only these topics' partitions (default: all).")
@click.pass_context
def log_dirs(ctx: click.Context, describe_path: str | None, bootstrap: str | None,
             command_config: str | None, broker_list: str | None,
             topic_list: str | None) -> None:
    """The log dirs of a cluster's brokers (what Kafka's kafka-log-dirs.sh shows).

    `logwright log-dirs --describe DATA_PATH [--broker-list 1,2] [--topic-list t1,t2]` works as
    kafka-log-dirs.sh --describe: it opens the real cluster under DATA_PATH, asks each broker
    DescribeLogDirs, and prints Kafka's JSON on stdout, {"version":1,"brokers":[{"broker":1,
    "logDirs":[{"logDir":...,"error":null,"partitions":[{"partition":"t-0","size":...,
    "offsetLag":0,"isFuture":false}],...}]}]}, each dir with the logwright extensions
    "totalBytes", "usableBytes" and "strays"; Kafka's two lines before it ("Querying brokers for
    log directories information", "Received log directory information from brokers 1,2") go to
    stderr. `log-dirs describe DATA_PATH` prints the same as text.

    \b
    Exit codes:
      0  described
      1  no cluster under DATA_PATH, it cannot be opened, or a listed broker is not running
      2  usage error (no --describe, a bad --broker-list or --topic-list)
      5  internal error (rerun with --debug)
    """
    if ctx.invoked_subcommand is not None:
        if (describe_path is not None or broker_list is not None or topic_list is not None
                or bootstrap is not None):
            raise click.UsageError(f"--describe, --broker-list and --topic-list are options of "
                                   f"'log-dirs --describe', not of '{ctx.invoked_subcommand}'")
        return
    if describe_path is None:
        raise click.UsageError("give --describe DATA_PATH (or the subcommand describe)")
    from logwright.broker.log_dirs import describe_json
    from logwright.cluster import Cluster
    from logwright.errors import ClusterError

    brokers_wanted = _int_list(broker_list, "--broker-list")
    topics_wanted = _name_list(topic_list, "--topic-list")
    if _source(describe_path or None, bootstrap, command_config) == "remote":
        from logwright.tools.remote import RemoteCluster

        assert bootstrap is not None
        with RemoteCluster(bootstrap, command_config) as remote:
            click.echo("Querying brokers for log directories information", err=True)
            answers = remote.describe_log_dirs(brokers_wanted)
        click.echo("Received log directory information from brokers "
                   + ",".join(map(str, sorted(answers))), err=True)
        _print_log_dirs(describe_json(answers), topics_wanted)
        return
    brokers, dirs = _cluster_layout(describe_path)  # before any line: a failure is one line
    click.echo("Querying brokers for log directories information", err=True)
    with Cluster.real(describe_path, brokers=brokers, log_dirs_per_broker=dirs) as cluster:
        if brokers_wanted is None:
            answers = cluster.describe_log_dirs()
        else:
            answers = {}
            for b in brokers_wanted:
                if b not in cluster.brokers:
                    raise ClusterError(f"--broker-list: broker {b} is not in the cluster under "
                                       f"{describe_path} (brokers 1 to {brokers})")
                answers.update(cluster.describe_log_dirs(b))
    click.echo("Received log directory information from brokers "
               + ",".join(map(str, sorted(answers))), err=True)
    _print_log_dirs(describe_json(answers), topics_wanted)


def _print_log_dirs(rendered: dict[str, Any], topics_wanted: set[str] | None) -> None:
    if topics_wanted is not None:
        for broker in rendered["brokers"]:
            for d in broker["logDirs"]:
                d["partitions"] = [p for p in d["partitions"]
                                   if p["partition"].rsplit("-", 1)[0] in topics_wanted]
                d["strays"] = [s for s in d["strays"]
                               if s["partition"].rsplit("-", 1)[0] in topics_wanted]
    click.echo(json.dumps(rendered, separators=(",", ":")))


def _source(path: str | None, bootstrap: str | None, command_config: str | None) -> str:
    """Which cluster a tool talks to: "local" (DATA_PATH, opened in process) or "remote"
    (--bootstrap-server, over Kafka's protocol); exactly one must be given."""
    if path is not None and bootstrap is not None:
        raise click.UsageError("give DATA_PATH or --bootstrap-server, not both")
    if path is None and bootstrap is None:
        raise click.UsageError("give DATA_PATH or --bootstrap-server")
    if command_config is not None and bootstrap is None:
        raise click.UsageError("--command-config goes with --bootstrap-server")
    return "remote" if bootstrap is not None else "local"


def _int_list(text: str | None, option: str) -> list[int] | None:
    """``"1,2"`` as [1, 2] (None: not given); a usage error names ``option`` otherwise."""
    if text is None:
        return None
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a comma-separated list of broker ids",
                                 param_hint=option) from None
    if any(v < 0 for v in values):
        raise click.BadParameter(f"{text!r}: broker ids are not negative", param_hint=option)
    return sorted(set(values))


def _name_list(text: str | None, option: str) -> set[str] | None:
    """``"t1,t2"`` as {"t1", "t2"} (None: not given); a usage error for an empty name."""
    if text is None:
        return None
    names = text.split(",")
    if not all(names):
        raise click.BadParameter(f"{text!r} has an empty topic name", param_hint=option)
    return set(names)


@log_dirs.command("describe")
@click.argument("path", metavar="DATA_PATH")
@click.option("--broker", "broker_id", type=int, default=None, metavar="ID",
              help="Only this broker (default: every broker).")
@click.option("--json", "as_json", is_flag=True,
              help="Print kafka-log-dirs.sh's JSON (plus each dir's \"strays\"), not text.")
def log_dirs_describe(path: str, broker_id: int | None, as_json: bool) -> None:
    """Describe each broker's log dirs: their partitions and their strays.

    Opens the real cluster whose data is under DATA_PATH (as Cluster.real does: its brokers
    start, load their logs and register), asks each broker DescribeLogDirs, prints the
    answers, and shuts the cluster down cleanly. The number of brokers and of log dirs per
    broker is read from DATA_PATH's layout. Per dir: its state (online, or
    KAFKA_STORAGE_ERROR), each partition's size and offset lag, and each stray partition
    (set aside, never served; docs/orphan-partitions.md) with its topic id, since when, its
    size, and orphan removal's last decision and next check.

    \b
    Exit codes:
      0  described
      1  no cluster under DATA_PATH, or it cannot be opened (e.g. a running cluster holds it)
      2  usage error
      5  internal error (rerun with --debug)
    """
    from logwright.broker.log_dirs import describe_json
    from logwright.cluster import Cluster

    brokers, dirs = _cluster_layout(path)
    with Cluster.real(path, brokers=brokers, log_dirs_per_broker=dirs) as cluster:
        answers = cluster.describe_log_dirs(broker_id)
    rendered = describe_json(answers)
    if as_json:
        click.echo(json.dumps(rendered, indent=2))
        return
    for broker in rendered["brokers"]:
        click.echo(f"broker {broker['broker']}"
                   + (f"  error: {broker['error']}" if "error" in broker else ""))
        for d in broker["logDirs"]:
            state = "online" if d["error"] is None else d["error"]
            usage = (f"  {d['usableBytes']:,} of {d['totalBytes']:,} bytes free"
                     if d["totalBytes"] >= 0 else "")
            click.echo(f"  {d['logDir']}  {state}{usage}")
            for p in d["partitions"]:
                click.echo(f"    {p['partition']}  {p['size']:,} bytes  offset lag "
                           f"{p['offsetLag']}" + ("  (future)" if p["isFuture"] else ""))
            for s in d["strays"]:
                click.echo(f"    stray {s['name']}  topic id {s['topicId'] or 'unknown'}  "
                           f"since {_utc(s['since'])}  {s['size']:,} bytes")
                nxt = "never" if s["nextCheck"] is None else _utc(s["nextCheck"])
                click.echo(f"      orphan removal: {s['lastDecision'] or 'not checked yet'}; "
                           f"next check {nxt}")


@main.command("delete-records")
@click.argument("path", metavar="[DATA_PATH]", required=False)
@_BOOTSTRAP_OPTIONAL
@_COMMAND_CONFIG
@click.option("--offset-json-file", "offset_file", required=True, metavar="FILE",
              type=click.Path(dir_okay=False),
              help='Kafka\'s JSON: {"partitions": [{"topic": "t", "partition": 0, '
                   '"offset": 3}], "version": 1}; offset -1 means the high watermark.')
@click.option("--timeout-ms", type=click.IntRange(1, 2**31 - 1), default=30_000,
              show_default=True, help="How long each partition's deletion may wait.")
def delete_records(path: str | None, bootstrap: str | None, command_config: str | None,
                   offset_file: str, timeout_ms: int) -> None:
    """Delete every record below an offset of each partition (kafka-delete-records.sh).

    Reads FILE first and refuses it whole, in one line, if it is not valid: not JSON, a
    missing or wrongly typed field, a partition named twice, an offset below -1, a version
    other than 1. Then opens the real cluster whose data is under DATA_PATH (as Cluster.real
    does), refuses a partition the cluster does not have before deleting anything, sends
    DeleteRecords to each partition's leader, prints one line per partition,
    "partition: t-0<TAB>low_watermark: N" or "partition: t-0<TAB>error: ...", and shuts the
    cluster down cleanly. A deletion is acknowledged once every replica counted holds the new
    start offset durably (docs/delete-records.md).

    \b
    Exit codes:
      0  every partition's deletion acknowledged
      1  a bad FILE or DATA_PATH (nothing deleted), or some partition answered an error
         (its line says which; the others are deleted)
      2  usage error
      5  internal error (rerun with --debug)
    """
    from logwright.cluster import Cluster
    from logwright.errors import Errors, InvalidArgument

    source = _source(path, bootstrap, command_config)  # a usage error before any reading
    try:
        with open(offset_file, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise InvalidArgument(f"{offset_file}: cannot read the offset JSON file: "
                              f"{exc.strerror or exc}") from exc
    wanted = parse_offset_json(text, offset_file)
    if source == "remote":
        from logwright.tools.remote import RemoteCluster

        assert bootstrap is not None
        with RemoteCluster(bootstrap, command_config, timeout_ms) as remote:
            counts = remote.partition_counts()
            for (topic, partition), _ in wanted.items():
                if partition >= counts.get(topic, 0):
                    raise InvalidArgument(
                        f"{offset_file}: partition {topic}-{partition} does not exist in the "
                        f"cluster at {bootstrap}; nothing was deleted")
            outcome = remote.delete_records(wanted, timeout_ms)
        failed = False
        for (topic, partition), (low, error) in outcome.items():
            if error is Errors.NONE:
                click.echo(f"partition: {topic}-{partition}\tlow_watermark: {low}")
            else:
                failed = True
                click.echo(f"partition: {topic}-{partition}\terror: {error.name} "
                           f"({int(error)})")
        if failed:
            sys.exit(EXIT_FAILED)
        return
    assert path is not None
    brokers, dirs = _cluster_layout(path)
    failed = False
    with Cluster.real(path, brokers=brokers, log_dirs_per_broker=dirs) as cluster:
        for (topic, partition), _ in wanted.items():
            record = cluster.store.topic(topic)
            if record is None or partition >= record.partition_count:
                raise InvalidArgument(
                    f"{offset_file}: partition {topic}-{partition} does not exist in the "
                    f"cluster under {path}" + (
                        "" if record is None else
                        f" (topic {topic} has partitions 0 to {record.partition_count - 1})")
                    + "; nothing was deleted")
        results = cluster.delete_records(wanted, timeout_ms=timeout_ms)
        for (topic, partition), result in results.items():
            if result.ok:
                click.echo(f"partition: {topic}-{partition}\tlow_watermark: "
                           f"{result.low_watermark}")
            else:
                failed = True
                detail = f"{result.error.name} ({int(result.error)})"
                click.echo(f"partition: {topic}-{partition}\terror: {detail}")
    if failed:
        sys.exit(EXIT_FAILED)


@main.command("reassign-partitions")
@click.argument("path", metavar="[DATA_PATH]", required=False)
@_BOOTSTRAP_OPTIONAL
@_COMMAND_CONFIG
@click.option("--execute", "mode", flag_value="execute", default=None,
              help="Start the reassignment in FILE.")
@click.option("--verify", "mode", flag_value="verify",
              help="Say how far the reassignment in FILE has got.")
@click.option("--reassignment-json-file", "json_file", required=True, metavar="FILE",
              type=click.Path(dir_okay=False),
              help='Kafka\'s JSON: {"version": 1, "partitions": [{"topic": "t", "partition": 0, '
                   '"replicas": [1, 2], "log_dirs": ["any", "/data/broker-2/d2"]}]}.')
@click.option("--timeout-ms", type=click.IntRange(0, 2**31 - 1), default=30_000,
              show_default=True,
              help="How long the cluster may run toward the reassignment's end before the "
                   "command reports (it stops as soon as everything is complete).")
def reassign_partitions(path: str | None, bootstrap: str | None, command_config: str | None,
                        mode: str | None, json_file: str, timeout_ms: int) -> None:
    """Move partitions' replicas between brokers and log dirs (kafka-reassign-partitions.sh).

    Reads FILE first and refuses it whole, in one line, if it is not valid: not JSON, a missing,
    unknown or wrongly typed field, a partition named twice, log_dirs not parallel to replicas,
    a log dir neither "any" nor an absolute path. Then opens the real cluster under DATA_PATH
    (as Cluster.real does) and, with --execute, refuses the file whole if the cluster cannot
    honour it (an unknown topic, partition or broker, a dir the broker does not have, a
    partition already being reassigned); nothing changes then. Otherwise it prints the current
    assignment (Kafka's JSON, to save for a rollback), starts the reassignment and prints
    Kafka's "Successfully started ..." lines. The cluster runs only while a command holds it, so
    both --execute and --verify let it work toward the end for up to --timeout-ms; a pending
    reassignment resumes whenever the cluster is opened again. --verify prints Kafka's status:
    "Reassignment of partition t-0 is completed." (or "is still in progress.") per partition,
    and per replica named with a log dir "Reassignment of replica t-0-2 completed
    successfully." (or "is still in progress.", or where the replica is instead).

    \b
    Exit codes:
      0  --execute: started and completed; --verify: everything is where FILE says
      1  a bad FILE or DATA_PATH (nothing changed); --verify: nothing is pending, yet some
         partition or replica is not where FILE says
      2  usage error (neither or both of --execute and --verify, ...)
      5  internal error (rerun with --debug)
      6  the reassignment is still in progress (run --verify again later)
    """
    from logwright.cluster import Cluster
    from logwright.cluster.reassign_tool import (
        current_assignment_json,
        execute_lines,
        partition_status_lines,
        replica_move_lines,
        replica_moves,
        verify_outcome,
    )
    from logwright.controller.reassignment import parse_reassignment, validate_plan
    from logwright.errors import InvalidArgument, KafkaError

    if mode is None:
        raise click.UsageError("give --execute or --verify")
    source = _source(path, bootstrap, command_config)
    try:
        with open(json_file, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise InvalidArgument(f"{json_file}: cannot read the reassignment JSON file: "
                              f"{exc.strerror or exc}") from exc
    try:
        plan = parse_reassignment(text)
    except KafkaError as exc:
        raise KafkaError.of(exc.error, f"{json_file}: {exc.message}; nothing was changed") \
            from exc
    if source == "remote":
        assert bootstrap is not None
        _reassign_remote(bootstrap, command_config, mode, plan, json_file, timeout_ms)
        return
    assert path is not None
    brokers, dirs = _cluster_layout(path)
    with Cluster.real(path, brokers=brokers, log_dirs_per_broker=dirs) as cluster:
        controller = cluster.controller

        def status() -> tuple[str, list[str]]:
            statuses = controller.reassignment_status(text)
            named = {b for m in plan.moves for b, d in zip(m.replicas, m.log_dirs, strict=True)
                     if d != "any"}
            answers = {b: a for b in sorted(named)
                       if b in cluster.brokers and cluster.brokers[b].alive
                       for a in cluster.describe_log_dirs(b).values()}
            moves = replica_moves(plan, answers)
            return (verify_outcome(statuses, moves),
                    partition_status_lines(statuses) + replica_move_lines(moves))

        def settled() -> bool:  # no reassignment of FILE's partitions is pending
            return all(s.state != "in progress" for s in controller.reassignment_status(text))

        if mode == "execute":
            try:
                validate_plan(plan, cluster.store)
            except KafkaError as exc:
                raise KafkaError.of(exc.error, f"{json_file}: {exc.message}; nothing was "
                                    "changed") from exc
            click.echo("Current partition replica assignment\n\n"
                       f"{current_assignment_json(plan, cluster.store)}\n\n"
                       "Save this to use as the --reassignment-json-file option during rollback")
            cluster.reassign(text, wait=False)
            for line in execute_lines(plan):
                click.echo(line)
            if not cluster.runtime.run_until(settled, timeout_ms):
                click.echo(f"The reassignment is still in progress after {timeout_ms} ms; it "
                           f"goes on whenever the cluster under {path} is open: run --verify "
                           "to follow it.", err=True)
                sys.exit(EXIT_IN_PROGRESS)
            return
        cluster.runtime.run_until(settled, timeout_ms)
        outcome, lines = status()
    for line in lines:
        click.echo(line)
    if outcome != "complete":
        sys.exit(EXIT_IN_PROGRESS if outcome == "in progress" else EXIT_FAILED)


def _reassign_remote(bootstrap: str, command_config: str | None, mode: str, plan: Any,
                     json_file: str, timeout_ms: int) -> None:
    """``reassign-partitions --bootstrap-server``: the same lines and exit codes, over the
    protocol (AlterPartitionReassignments, AlterReplicaLogDirs, then polling
    ListPartitionReassignments, Metadata and DescribeLogDirs)."""
    import time

    from logwright.cluster.reassign_tool import (
        execute_lines,
        partition_status_lines,
        replica_move_lines,
        replica_moves,
        verify_outcome,
    )
    from logwright.errors import Errors, KafkaError
    from logwright.tools.remote import RemoteCluster

    with RemoteCluster(bootstrap, command_config, max(timeout_ms, 1_000)) as remote:
        named = sorted({b for m in plan.moves
                        for b, d in zip(m.replicas, m.log_dirs, strict=True) if d != "any"})

        def status() -> tuple[str, list[str]]:
            statuses = remote.reassignment_statuses(plan)
            live = set(remote.brokers())
            answers = remote.describe_log_dirs([b for b in named if b in live]) if named else {}
            moves = replica_moves(plan, answers)
            return (verify_outcome(statuses, moves),
                    partition_status_lines(statuses) + replica_move_lines(moves))

        def wait_settled() -> str:
            deadline = time.monotonic() + timeout_ms / 1000
            outcome, _ = status()
            while outcome == "in progress" and time.monotonic() < deadline:
                time.sleep(0.2)
                outcome, _ = status()
            return outcome

        if mode == "execute":
            topics = remote.topics()
            current = []
            for m in sorted(plan.moves, key=lambda m: (m.tp.topic, m.tp.partition)):
                meta = next((p for p in topics.get(m.tp.topic, {}).get("partitions", ())
                             if p["partition_index"] == m.tp.partition), None)
                if meta is None:
                    raise KafkaError.of(Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                        f"{json_file}: partition {m.tp.topic}-{m.tp.partition} "
                                        "does not exist; nothing was changed")
                current.append({"topic": m.tp.topic, "partition": m.tp.partition,
                                "replicas": list(meta["replica_nodes"]),
                                "log_dirs": ["any"] * len(meta["replica_nodes"])})
            click.echo("Current partition replica assignment\n\n"
                       + json.dumps({"version": 1, "partitions": current},
                                    separators=(",", ":"))
                       + "\n\nSave this to use as the --reassignment-json-file option during "
                         "rollback")
            remote.reassign(plan)
            for line in execute_lines(plan):
                click.echo(line)
            if wait_settled() == "in progress":
                click.echo(f"The reassignment is still in progress after {timeout_ms} ms: run "
                           "--verify to follow it.", err=True)
                sys.exit(EXIT_IN_PROGRESS)
            return
        wait_settled()
        outcome, lines = status()
    for line in lines:
        click.echo(line)
    if outcome != "complete":
        sys.exit(EXIT_IN_PROGRESS if outcome == "in progress" else EXIT_FAILED)


def parse_offset_json(text: str, source: str = "offset JSON") -> dict[tuple[str, int], int]:
    """Kafka's kafka-delete-records.sh input, ``{"partitions": [{"topic": t, "partition": p,
    "offset": o}, ...], "version": 1}``, as {(topic, partition): offset} in file order.
    ``InvalidArgument`` names the first problem: not JSON, not that shape, a missing or
    wrongly typed field, a partition named twice, an offset below -1, an illegal topic name."""
    from logwright.errors import InvalidArgument
    from logwright.identity import PARTITION_MAX, topic_name_problem
    from logwright.storage.naming import OFFSET_MAX

    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise InvalidArgument(f"{source}: not valid JSON: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("partitions"), list):
        raise InvalidArgument(f'{source}: expected {{"partitions": [...], "version": 1}}')
    if "version" in doc and doc["version"] != 1:
        raise InvalidArgument(f"{source}: unsupported version {doc['version']!r} (only 1)")
    if not doc["partitions"]:
        raise InvalidArgument(f"{source}: \"partitions\" is empty: nothing to delete")
    out: dict[tuple[str, int], int] = {}
    for i, entry in enumerate(doc["partitions"]):
        where = f"{source}: partitions[{i}]"
        if not isinstance(entry, dict):
            raise InvalidArgument(f"{where}: expected an object, not {entry!r}")
        for key in ("topic", "partition", "offset"):
            if key not in entry:
                raise InvalidArgument(f'{where}: missing "{key}"')
        topic, partition, offset = entry["topic"], entry["partition"], entry["offset"]
        if not isinstance(topic, str) or topic_name_problem(topic) is not None:
            raise InvalidArgument(f"{where}: bad topic {topic!r}"
                                  + (f": {topic_name_problem(topic)}"
                                     if isinstance(topic, str) else ""))
        if type(partition) is not int or not 0 <= partition <= PARTITION_MAX:
            raise InvalidArgument(f"{where}: partition must be an integer from 0, "
                                  f"not {partition!r}")
        if type(offset) is not int or offset > OFFSET_MAX:
            raise InvalidArgument(f"{where}: offset must be an integer, not {offset!r}")
        if offset < -1:
            raise InvalidArgument(f"{where}: offset {offset} is below -1 (-1 means the high "
                                  "watermark)")
        if (topic, partition) in out:
            raise InvalidArgument(f"{where}: partition {topic}-{partition} is named twice")
        out[(topic, partition)] = offset
    return out


def _utc(ms: int) -> str:
    """A time in ms since the epoch, as UTC to the second (for reading, never deciding)."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _cluster_layout(path: str) -> tuple[int, int]:
    """(brokers, log dirs per broker) of the real cluster under ``path``: ``broker-<n>`` dirs
    numbered from 1, each with ``d1``, ``d2``...; LogwrightError when there is none."""
    import os

    from logwright.cluster.validate import METADATA_FILE
    from logwright.errors import ClusterError

    if not os.path.isfile(os.path.join(path, METADATA_FILE)):
        raise ClusterError(f"{path}: no logwright cluster here (no metadata.db)")
    brokers = 0
    while os.path.isdir(os.path.join(path, f"broker-{brokers + 1}")):
        brokers += 1
    dirs = 0
    while brokers and os.path.isdir(os.path.join(path, "broker-1", f"d{dirs + 1}")):
        dirs += 1
    if not brokers or not dirs:
        raise ClusterError(f"{path}: no broker log dirs (broker-1/d1, ...)")
    return brokers, dirs


if __name__ == "__main__":
    main()
