"""The named faults ``make mutants`` plants, one at a time, in a copy of the package.

Each mutant is a text patch: ``anchor`` must occur exactly once in ``file`` (a path relative to
the repository root) and is replaced by ``replacement``. Anchors are the guard itself, kept small
so that a refactor elsewhere in the file does not move them; a refactor of the guard does, and
``tests/test_mutation_catalogue.py`` then fails naming the mutant, so the catalogue is mended in
the same change. Production code carries no switch for any of these.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutant:
    """One named fault."""

    name: str  # the words
    file: str  # relative to the repository root
    anchor: str  # exact source text, occurring exactly once in ``file``
    replacement: str
    loss: str  # what a user would lose if this fault shipped


class AnchorError(Exception):
    """A mutant's anchor does not occur exactly once in its file (the code moved on)."""


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        name="retention ignores the HW",
        file="impl/logwright/storage/log.py",
        anchor="if seg.next_offset > self._high_watermark or not should_delete(seg, nxt):",
        replacement="if not should_delete(seg, nxt):",
        loss="Retention could delete records not yet replicated to the ISR (above the high "
             "watermark); a leader change would then lose acknowledged writes.",
    ),
    Mutant(
        name="a stale controller epoch accepted",
        file="impl/logwright/broker/fencing.py",
        anchor="if request.controller_epoch < controller_epoch:",
        replacement="if False:",
        loss="A deposed controller's late LeaderAndIsr/StopReplica would be obeyed, so a "
             "zombie controller could move leadership or delete replicas.",
    ),
    Mutant(
        name="an older broker epoch accepted",
        file="impl/logwright/broker/fencing.py",
        anchor="request.broker_epoch != NO_EPOCH and request.broker_epoch < broker_epoch",
        replacement="False",
        loss="A request meant for this broker's previous incarnation (before a restart) would "
             "be applied to the new one, undoing what the controller told it since.",
    ),
    Mutant(
        name="a newer broker epoch rejected",
        file="impl/logwright/broker/fencing.py",
        anchor="request.broker_epoch != NO_EPOCH and request.broker_epoch < broker_epoch",
        replacement=("request.broker_epoch != NO_EPOCH"
                     " and request.broker_epoch != broker_epoch"),
        loss="A controller that learnt the broker's new epoch before the broker did would be "
             "refused (STALE_BROKER_EPOCH), leaving partitions without leaders after a restart.",
    ),
    Mutant(
        name="a fetcher dies on one partition's storage error",
        file="impl/logwright/broker/fetcher.py",
        anchor='except KafkaStorageError as exc:\n            self._mark_failed(tp, '
               'f"storage error: {exc}", "StorageError")',
        replacement="except KafkaStorageError:\n            raise",
        loss="One partition's disk error would stop replication of every partition sharing "
             "its fetcher (KIP-461's containment gone).",
    ),
    Mutant(
        name="a fence with an older epoch fails the partition",
        file="impl/logwright/broker/fetcher.py",
        anchor="if st is not None and st is sent and st.current_leader_epoch == request_epoch:",
        replacement="if st is not None:",
        loss="A FENCED_LEADER_EPOCH answering a request sent before a newer epoch was learnt "
             "would fail a healthy partition: it stops replicating until the next leader change.",
    ),
    Mutant(
        name="a failed partition un-failed by any LeaderAndIsr",
        file="impl/logwright/broker/replica_manager.py",
        anchor=("                self._maybe_increment_hw(partition)\n"
                "            return Errors.NONE\n        return partition"),
        replacement=(
            "                self._maybe_increment_hw(partition)\n"
            "            tp = state.tp\n"
            "            if (partition.leader_id not in (NO_LEADER, self.broker_id)\n"
            "                    and tp in self.replica_fetcher_manager.failed_partitions):\n"
            "                self.replica_fetcher_manager.add_fetcher_for_partitions(\n"
            "                    {tp: InitialFetchState(partition.leader_id,\n"
            "                                           partition.leader_epoch,\n"
            "                                           partition.log_end_offset)})\n"
            "            return Errors.NONE\n"
            "        return partition"),
        loss="A partition failed for a reason that still holds would be fetched again on a "
             "LeaderAndIsr that brings no new leader epoch, and fail again, churning instead "
             "of waiting for the controller to move it.",
    ),
    Mutant(
        name="a fetch served below the start offset",
        file="impl/logwright/storage/log.py",
        anchor="if start_offset < self._log_start_offset or start_offset > leo:",
        replacement="if start_offset > leo:",
        loss="Records deleted by DeleteRecords or retention (below the log start offset) "
             "could still be read by consumers and followers.",
    ),
    Mutant(
        name="the start offset loaded from its checkpoint alone",
        file="impl/logwright/storage/loader.py",
        anchor="log_start_offset = max(lso_ckpt, segments[0].base_offset)",
        replacement="log_start_offset = lso_ckpt",
        loss="After a restart with a missing or older checkpoint the log would claim offsets "
             "below its first segment: reads there would fail or return the wrong records.",
    ),
    Mutant(
        name="`-delete` dirs removed at once",
        file="impl/logwright/logmanager/manager.py",
        anchor="if due > now:\n                    continue",
        replacement="if False:\n                    continue",
        loss="A deleted partition's files would vanish while readers may still hold them, "
             "ignoring file.delete.delay.ms.",
    ),
    Mutant(
        name="the clean-shutdown marker written after an I/O error",
        file="impl/logwright/logmanager/manager.py",
        anchor="                if state.online:\n"
               "                    write_file_atomic(self.fs, posixpath.join(state.path, "
               "CLEAN_SHUTDOWN_FILE), b\"\")",
        replacement="                if True:\n"
                    "                    write_file_atomic(self.fs, posixpath.join(state.path, "
                    "CLEAN_SHUTDOWN_FILE), b\"\")",
        loss="A dir whose checkpoints failed to write during shutdown would look clean at the "
             "next start, so its logs would be trusted without recovery.",
    ),
    Mutant(
        name="the HW ignores the ISR",
        file="impl/logwright/broker/partition.py",
        anchor="            candidate = min(candidate, follower.log_end_offset)",
        replacement="            candidate = max(candidate, self.log_end_offset)",
        loss="The leader would commit (and acknowledge with acks=all) records its in-sync "
             "followers do not have; electing one of them would lose those records.",
    ),
    Mutant(
        name="the recovery point raised past what was fsynced",
        file="impl/logwright/storage/log.py",
        anchor="                if seg.next_offset > self.recovery_point or seg is "
               "self._segments[-1]:",
        replacement="                if False:",
        loss="A flush would claim records durable that are only in the page cache; a power "
             "loss would lose records a restart trusts without recovery.",
    ),
    Mutant(
        name="a raised start offset not made durable",
        file="impl/logwright/storage/log.py",
        anchor="        if self.start_offset_checkpoint is not None:\n"
               "            try:\n"
               "                self.start_offset_checkpoint.persist(self.tp)",
        replacement="        if False:\n"
                    "            try:\n"
                    "                self.start_offset_checkpoint.persist(self.tp)",
        loss="A DeleteRecords would be acknowledged before its start offset is on disk; a crash "
             "would bring the deleted records back (hazard 12).",
    ),
    Mutant(
        name="start offset acknowledged before durable",
        file="impl/logwright/broker/replica_manager.py",
        anchor="        for r in counted:\n            if r == self.broker_id:",
        replacement="        for r in ():\n            if r == self.broker_id:",
        loss="A DeleteRecords would be acknowledged once the leader's start offset is durable, "
             "before the followers hold it; the leader's crash and a follower's election would "
             "bring the deleted records back (hazard 12).",
    ),
    Mutant(
        name="ISR expansion ignores the ISR floor",
        file="impl/logwright/broker/partition.py",
        anchor="                    and follower.log_start_offset >= self.isr_floor\n",
        replacement="                    and True\n",
        loss="A follower that was down while a DeleteRecords was acknowledged without it would "
             "rejoin the ISR with its old start offset, and its election would serve the deleted "
             "records again (hazard 12).",
    ),
    Mutant(
        name="follower raises its start offset before its HW",
        file="impl/logwright/broker/fetch_adapters.py",
        anchor=("            if data.high_watermark >= 0:\n"
                "                log.update_high_watermark(max(log.log_start_offset,\n"
                "                                              min(data.high_watermark, "
                "log.log_end_offset)))\n"
                "            # Durable, and the epoch cache trimmed, before it returns.\n"
                "            if data.log_start_offset > log.log_start_offset:\n"
                "                raised = min(data.log_start_offset, log.high_watermark)\n"),
        replacement=("            if data.log_start_offset > log.log_start_offset:\n"
                     "                log.increment_log_start_offset(min(data.log_start_offset, "
                     "log.log_end_offset))\n"
                     "            if data.high_watermark >= 0:\n"
                     "                log.update_high_watermark(max(log.log_start_offset,\n"
                     "                                              min(data.high_watermark, "
                     "log.log_end_offset)))\n"
                     "            if data.log_start_offset > log.log_start_offset:\n"
                     "                raised = min(data.log_start_offset, log.high_watermark)\n"),
        loss="A follower would take the leader's start offset before the HW of the same "
             "response, above its own HW: refused (the fetch of the partition fails), or, "
             "without the log's guard, a replica with HW below its start offset that serves "
             "OFFSET_OUT_OF_RANGE at its HW once elected (hazard 8).",
    ),
    Mutant(
        name="topic id ignored on StopReplica",
        file="impl/logwright/broker/replica_manager.py",
        anchor="if sp.topic_id != Uuid.ZERO and held is not None and held != sp.topic_id:",
        replacement="if False:",
        loss="A late StopReplica of a deleted topic would stop or delete the log of the topic "
             "re-created under its name: acknowledged records of the new topic gone.",
    ),
    Mutant(
        name="non-new replica created with a dir offline",
        file="impl/logwright/broker/replica_manager.py",
        anchor="if log is None and not state.is_new and self.log_manager.offline_dirs:",
        replacement="if False:",
        loss="A broker restarting with an unreadable dir would create an empty replica on a "
             "healthy one; elected, its followers truncate to it and acks=all records are gone "
             "from every replica (hazard 13).",
    ),
    Mutant(
        name="stray set inverted",
        file="impl/logwright/broker/replica_manager.py",
        anchor="strays = full_request_strays(on_disk, requested, self.applied_versions, version)",
        replacement="strays = {tp: 'inverted' for tp in on_disk if tp in requested}",
        loss="A FULL LeaderAndIsr would set aside the partitions the controller assigns (they "
             "stop being served and are re-fetched) and keep serving the ones it no longer "
             "assigns.",
    ),
    Mutant(
        name="no age guard",
        file="impl/logwright/logmanager/orphans.py",
        anchor="if young:  # the age guard",
        replacement="if False:  # the age guard",
        loss="Orphan removal would delete a stray once its delay is over however new its "
             "records are: data written within the retention period, which a reassignment "
             "moving the partition back would have revived, is gone.",
    ),
    Mutant(
        name="low watermark ignores a future log",
        file="impl/logwright/broker/replica_manager.py",
        anchor="future = self.log_manager.get_future_log(partition.tp)",
        replacement="future = None",
        loss="A DeleteRecords would be acknowledged while a JBOD move's future log still holds "
             "the deleted records; the swap would then bring them back.",
    ),
    Mutant(
        name="rename before the future is flushed",
        file="impl/logwright/logmanager/manager.py",
        anchor="fut.flush()  # S2",
        replacement="pass  # S2",
        loss="The swap would publish (S3, S4) a future log whose copied records are still in "
             "the page cache: a crash then recovers to the moved log without them, and the "
             "source, renamed -delete, is the only copy left.",
    ),
    Mutant(
        name="append on the source after the swap began",
        file="impl/logwright/broker/replica_manager.py",
        anchor="            partition.log = log\n",
        replacement="            pass\n",
        loss="Appends acknowledged after a JBOD swap would land in the source log, renamed "
             "-delete and deleted: every record written since the move is lost at the next "
             "restart.",
    ),
    Mutant(
        name="copier resumes from the current log's HW",
        file="impl/logwright/broker/dir_move.py",
        anchor="        start = fut.log_end_offset\n",
        replacement="        start = max(src.high_watermark, src.log_start_offset)\n",
        loss="KAFKA-9087: a future log ahead of (or behind) the current log's high watermark "
             "gets records twice or with a gap; the move fails or swaps in a log missing "
             "records.",
    ),
    Mutant(
        name="no re-stamp when a dir is offline at start-up",
        file="impl/logwright/logmanager/manager.py",
        anchor="        moved. An I/O error takes that log's dir offline, as anywhere "
               "else.\"\"\"\n",
        replacement="        moved. An I/O error takes that log's dir offline, as anywhere "
                    "else.\"\"\"\n        return\n",
        loss="A move's commit (S4) that reached a dir which then failed leaves a copy of a "
             "higher generation there; the source served meanwhile keeps its generation, so "
             "when the dir is back start-up picks the stale copy and every record taken since "
             "is lost (R6).",
    ),
    Mutant(
        name="un-fail of the dir-move fetcher on any epoch",
        file="impl/logwright/broker/dir_move.py",
        anchor="if leader_epoch <= failure.leader_epoch:",
        replacement="if False:",
        loss="A JBOD move failed by an error (KIP-461) would be retried by any LeaderAndIsr, "
             "even one of the epoch it failed under, and fail again and again.",
    ),
    Mutant(
        name="damaged replica kept in the ISR",
        file="impl/logwright/controller/liveness.py",
        anchor="if report is not None and report.clean:",
        replacement="if True:",
        loss="Kafka before KIP-966: a replica that lost unflushed records at a crash would stay "
             "in the ISR or the ELR when its broker registers again, and be elected with its "
             "log cut short: acknowledged acks=all records lost while another replica held "
             "them.",
    ),
    Mutant(
        name="min.insync.replicas ignored",
        file="impl/logwright/broker/partition.py",
        anchor="or log.offline or len(self.isr) < min_insync_replicas\n",
        replacement="or log.offline\n",
        loss="The high watermark would advance while the ISR is smaller than "
             "min.insync.replicas, so an eligible leader replica (ELR) could lack committed "
             "records and be elected: acknowledged records lost.",
    ),
    Mutant(
        name="an ISR member added on a stale broker epoch",
        file="impl/logwright/controller/election.py",
        anchor="if self._stale_new_members(request, state):",
        replacement="if False:",
        loss="A follower that lost unflushed records in a power loss and registered again could "
             "be put back into the ISR on what its earlier incarnation had fetched, without the "
             "committed records; a later election of it loses acknowledged records (KIP-903).",
    ),
    Mutant(
        name="election outside the eligible set",
        file="impl/logwright/controller/election.py",
        anchor="if live and self._unclean_allowed(topic):",
        replacement="if live:",
        loss="With no ISR or ELR member alive, any live replica would lead, as if "
             "unclean.leader.election.enable were on: a replica that fell behind, or lost "
             "unflushed records, truncates the others and acknowledged records are lost.",
    ),
)


def by_name(name: str) -> Mutant:
    """The mutant called ``name`` (exact), else KeyError naming the choices."""
    for m in MUTANTS:
        if m.name == name:
            return m
    raise KeyError(f"no mutant named {name!r}; known: {[m.name for m in MUTANTS]}")


def check_anchor(mutant: Mutant, root: Path = ROOT) -> str:
    """The text of ``mutant.file`` under ``root``; AnchorError unless the anchor occurs exactly
    once."""
    path = root / mutant.file
    if not path.is_file():
        raise AnchorError(f"mutant {mutant.name!r}: file {mutant.file} does not exist")
    text = path.read_text(encoding="utf-8")
    count = text.count(mutant.anchor)
    if count != 1:
        raise AnchorError(
            f"mutant {mutant.name!r}: its anchor occurs {count} times in {mutant.file} "
            f"(must be exactly once); update mutation/catalogue.py:\n{mutant.anchor}")
    return text


def check_all(root: Path = ROOT) -> list[str]:
    """Every anchor problem in the catalogue, one message each (empty: all anchors hold)."""
    problems = []
    names = [m.name for m in MUTANTS]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"mutant name {name!r} is used twice")
    for m in MUTANTS:
        try:
            check_anchor(m, root)
        except AnchorError as exc:
            problems.append(str(exc))
    return problems


def apply(mutant: Mutant, root: Path) -> None:
    """Plant ``mutant`` in the tree at ``root`` (a copy: never the repository itself)."""
    assert root.resolve() != ROOT, "mutants are applied to a copy, never to the repository"
    text = check_anchor(mutant, root)
    (root / mutant.file).write_text(text.replace(mutant.anchor, mutant.replacement),
                                    encoding="utf-8")


def refinement_driver(imports: str, runs: str = "run_steps(seed)") -> str:
    """The Python a planted-fault refinement test runs in a copy (:func:`caught_in_copy`):
    after ``imports``, the call ``runs`` (over ``seed``) for each seed of the template field
    ``{seeds}``; the last line printed is ``CAUGHT <module> <reason>`` for the first
    RefinementViolation, ``RAISED <type>`` when a run stopped another way, or ``MISSED``."""
    return "\n".join([
        "from logwright.conformance import RefinementViolation",
        imports,
        "for seed in {seeds}:",
        "    try:",
        f"        {runs}",
        "    except RefinementViolation as exc:",
        '        print("CAUGHT", exc.module, exc.reason)',
        "        break",
        "    except Exception as exc:  # the fault stopped the run another way: not a catch",
        '        print("RAISED", type(exc).__name__)',
        "else:",
        '    print("MISSED")',
        ""])


def caught_in_copy(driver: str, dest: Path, mutant: str | None) -> str:
    """Run ``driver`` with :func:`run_in_copy` (``mutant`` planted; None: none) and return the
    last line it printed; the interpreter must exit cleanly."""
    out = run_in_copy(driver, dest, mutant)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


def run_in_copy(code: str, dest: Path, mutant: str | None, argv: tuple[str, ...] = (),
                timeout: float = 300, *, plant: Callable[[Path], None] | None = None,
                cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Copy the package to ``dest``, plant the mutant named ``mutant`` there (None: none), and
    run the Python ``code`` in a fresh interpreter importing ``logwright`` from that copy (it
    checks that it does), with the repository on the path for ``tests``; returns the finished
    process (text output). ``plant``, if given, is called with ``dest`` after the copy to plant
    a fault the catalogue does not name (``mutation/mutmut_run.py verify``); the interpreter
    runs in ``cwd`` (default ``dest``). The copy leaves out compiled modules (``*.so``, the
    mypyc build): the planted source is what runs, never a compiled module shadowing it."""
    shutil.copytree(ROOT / "impl", dest / "impl",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.so"))
    if mutant is not None:
        apply(by_name(mutant), dest)
    if plant is not None:
        plant(dest)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(dest / "impl"), str(ROOT)])}
    check = f"import logwright; assert logwright.__file__.startswith({str(dest)!r})\n"
    return subprocess.run([sys.executable, "-c", check + textwrap.dedent(code), *argv],
                          env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=dest if cwd is None else cwd)
