"""The spec mutation suite: plausible mistakes in the TLA+ modules, each of which TLC must catch.

What it upholds: the models can see the bugs they are for. Each :class:`SpecMutant` is one
plausible slip in the text of one module of spec/ (a guard conjunct dropped, a bound weakened, an
update skipped, the fairness left out), written as ``(find, replace)`` on the module's text: the
``find`` text occurs exactly once (a test checks it, without TLC). The runner copies the module
and its correct .cfg into a temporary directory, applies one mutation, and runs TLC there: the
mutant is *caught* when TLC reports an invariant or a temporal property violated. A mutant TLC
does not catch is *survived*; spec/README.md argues each survivor equivalent (it changes nothing
an invariant should see) or names the change that kills it.

``python -m logwright.verify.spec_mutants [MODULE...]`` runs the suite (about a minute per
module on one core) and prints one line per mutant; without ``TLA2TOOLS_JAR`` it says so and exits
0. ``--coverage`` instead runs each correct .cfg with TLC's ``-coverage`` and prints, per action,
the distinct states it found and the states it generated (:func:`coverage`).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from logwright.verify.tlc import TlaTools, find_tools, run_tlc, tlc_missing


@dataclass(frozen=True)
class SpecMutant:
    """One mutation of one TLA+ module: replace the one occurrence of ``find`` by ``replace``."""

    module: str
    name: str
    find: str
    replace: str
    why: str
    """The mistake it stands for, in a line."""
    cfg: str = ""
    """The .cfg TLC runs it on, in spec/: empty for the module's correct one (``<Module>.cfg``);
    a mutation of the fairness names the module's liveness .cfg, one that needs more leader
    epochs a .cfg with a deeper bound."""

    @property
    def cfg_name(self) -> str:
        """The .cfg file TLC checks the mutant with."""
        return self.cfg or f"{self.module}.cfg"

    def apply(self, text: str) -> str:
        """``text`` with the mutation applied; ValueError unless ``find`` occurs exactly once."""
        count = text.count(self.find)
        if count != 1:
            raise ValueError(f"{self.module}/{self.name}: the text to mutate occurs {count} "
                             "times, not once")
        return text.replace(self.find, self.replace)


def _m(module: str, name: str, find: str, replace: str, why: str, cfg: str = "") -> SpecMutant:
    return SpecMutant(module, name, find, replace, why, cfg)


MUTANTS: tuple[SpecMutant, ...] = (
    # -- ControllerFencing -------------------------------------------------------------------
    _m("ControllerFencing", "StoreWriteUnconditional",
       '    /\\ Bug # "UnconditionalStoreWrite" => c = controllerEpoch\n', "",
       "drop the store's conditional-write guard"),
    _m("ControllerFencing", "ControllerEpochOffByOne",
       "StaleControllerEpoch(b, m) == m.controllerEpoch < brokerControllerEpoch[b]",
       "StaleControllerEpoch(b, m) == m.controllerEpoch + 1 < brokerControllerEpoch[b]",
       "accept a request one controller epoch behind"),
    _m("ControllerFencing", "BrokerEpochOffByOne",
       "m.brokerEpoch # NoBrokerEpoch /\\ m.brokerEpoch < brokerEpoch[b]",
       "m.brokerEpoch # NoBrokerEpoch /\\ m.brokerEpoch + 1 < brokerEpoch[b]",
       "accept a request for the previous incarnation"),
    _m("ControllerFencing", "EpochNotRecorded",
       "    /\\ brokerControllerEpoch' = [brokerControllerEpoch EXCEPT ![b] = RecordedEpoch(b, m)]",
       "    /\\ brokerControllerEpoch' = brokerControllerEpoch",
       "skip the update of the accepted controller epoch"),
    _m("ControllerFencing", "RestartKeepsEpoch",
       "    /\\ brokerControllerEpoch' = [brokerControllerEpoch EXCEPT ![b] = 0]",
       "    /\\ brokerControllerEpoch' = brokerControllerEpoch",
       "a restart keeps the accepted controller epoch (skip the reset)"),
    _m("ControllerFencing", "LeaderAndIsrTakesOlderEpoch",
       "    THEN IF m.leaderEpoch > replicaEpoch[b] THEN m.leaderEpoch ELSE replicaEpoch[b]",
       "    THEN m.leaderEpoch",
       "LeaderAndIsr takes an older leader epoch (drop the leader-epoch comparison)"),
    # -- FetcherFailure ----------------------------------------------------------------------
    _m("FetcherFailure", "AddWithoutStartingFetcher",
       "            /\\ alive' = [alive EXCEPT ![FetcherOf(p)] = TRUE]",
       "            /\\ alive' = alive",
       "LeaderAndIsr adds the partition but does not start its fetcher"),
    _m("FetcherFailure", "AnyFenceFails",
       "    /\\ IF fetching[p] /\\ (inflight[p] = knownEpoch[p] \\/ "
       'Bug = "FenceWithStaleEpochFails")',
       "    /\\ IF fetching[p]",
       "drop the stale-fence conjunct: every fence fails the partition"),
    _m("FetcherFailure", "StorageErrorStopsFetcher",
       "       ELSE UNCHANGED alive",
       "       ELSE alive' = [alive EXCEPT ![FetcherOf(p)] = FALSE]",
       "a storage error stops the whole fetcher"),
    _m("FetcherFailure", "ShutdownBusyFetcher",
       "    /\\ \\A p \\in Partitions : FetcherOf(p) = f => ~fetching[p]\n", "",
       "drop the idle guard of ShutdownIdle"),
    _m("FetcherFailure", "FetchOnlyWhenCurrent",
       "    /\\ inflight[p] = NoFetch\n    /\\ inflight' = [inflight EXCEPT ![p] = knownEpoch[p]]",
       "    /\\ inflight[p] = NoFetch /\\ knownEpoch[p] = leaderEpoch[p]\n"
       "    /\\ inflight' = [inflight EXCEPT ![p] = knownEpoch[p]]",
       "fetch only when the epoch is current: a partition behind waits (lost progress)"),
    _m("FetcherFailure", "NoFairness",
       "Fairness == \\A p \\in Partitions : WF_vars(FetcherStep(p))",
       "Fairness == TRUE",
       "leave the fairness out: nothing makes a fetcher serve its partitions"),
    # -- LeaderElection ----------------------------------------------------------------------
    _m("LeaderElection", "UncleanRegisterKeepsElr",
       "           elr0 == IF damaged THEN elr \\ {r} ELSE elr",
       "           elr0 == elr",
       "unclean-shutdown detection takes the replica out of the ISR but leaves it in the ELR"),
    _m("LeaderElection", "RegistrationKeepsOldReport",
       "           ends0 == IF isr0 = {} /\\ elr0 = {}\n"
       "                    THEN [recoveryLogEnds EXCEPT ![r] = LogEnd(r)] "
       "ELSE recoveryLogEnds",
       "           ends0 == recoveryLogEnds",
       "a registration does not report the log end: the one reported before the crash counts"),
    _m("LeaderElection", "RecoveryPicksLowest",
       "\\A q \\in Replicas : EndAtLeast(ends0[r], ends0[q])",
       "\\A q \\in Replicas : EndAtLeast(ends0[q], ends0[r])",
       "the recovery election picks the log that ends lowest"),
    _m("LeaderElection", "RecoveryComparesOffsetsOnly",
       "    \\/ a[1] > b[1]\n"
       "    \\/ a[1] = b[1] /\\ (a[2] > b[2] \\/ (a[2] = b[2] /\\ a[3] >= b[3]))",
       "    a[3] >= b[3]",
       "the recovery election compares end offsets only, not the lineage nor the last leader "
       "epochs first"),
    _m("LeaderElection", "NoLineageGate",
       "    /\\ lineage[1] = leaderEpoch\n", "",
       "the HW advances before the controller recorded the epoch's lineage"),
    _m("LeaderElection", "RecoveryIgnoresLineage",
       "ReportOf(r, c) == <<LineagePrefix(log[r]),",
       "ReportOf(r, c) == <<0,",
       "the recovery election ranks by last epoch and end offset only, as before the lineage "
       "(a loss that takes two records: beyond the .cfgs, found by Z3's replay and the twin)"),
    _m("LeaderElection", "HWOverLeaderOnly",
       "    /\\ LET h == Min({CommonPrefix(r, leader) : r \\in isr})",
       "    /\\ LET h == Len(log[leader])",
       "the HW advances to the leader's end, not the least end over the ISR"),
    _m("LeaderElection", "ShrunkAlwaysEligible",
       "    /\\ elr' = IF Bug = \"LastIsrMemberKept\" \\/ Cardinality(isr') >= MinIsr THEN {}\n"
       "              ELSE elr \\cup {r}",
       "    /\\ elr' = elr \\cup {r}",
       "a follower the leader drops joins the ELR whatever the ISR left"),
    _m("LeaderElection", "ExpandKeepsElr",
       "    /\\ elr' = IF Cardinality(isr') >= MinIsr THEN {} ELSE elr \\ {r}",
       "    /\\ elr' = elr",
       "a follower taken back into the ISR stays in the ELR"),
    _m("LeaderElection", "ExpandBeforeFollowLeaderEpoch",
       "    /\\ cacheEpoch[r] >= leaderEpoch\n", "",
       "a follower rejoins the ISR before its epoch cache holds the leader's epoch",
       cfg="LeaderElection_MaxEpoch4.cfg"),
    _m("LeaderElection", "FollowerIgnoresLeaderEpoch",
       "    IF Len(new) >= epochStartOffset /\\ c < leaderEpoch THEN leaderEpoch ELSE c",
       "    c",
       "a follower learns epochs from the records it copies only, never its leader's epoch"),
    # -- LogStartOffset ----------------------------------------------------------------------
    _m("LogStartOffset", "HWIgnoresIsr",
       "    /\\ hw[leader] < h /\\ h <= HWLimit\n",
       "    /\\ hw[leader] < h /\\ h <= leo[leader]\n",
       "AdvanceHW bounded by the leader's LEO, not the least LEO of the ISR"),
    _m("LogStartOffset", "ElectOutsideIsr",
       "    /\\ r \\in isr /\\ r # leader\n    /\\ leader' = r\n    /\\ epochStart' = leo[r]\n"
       "    /\\ resp' = [resp EXCEPT ![r] = {}]\n    /\\ pending' = 0\n"
       "    /\\ isrFloor' = DurableStart(r)\n"
       "    /\\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, flushed, isr, committed, "
       "acked,\n                   down>>",
       "    /\\ r # leader /\\ r \\notin down\n    /\\ leader' = r\n"
       "    /\\ epochStart' = leo[r]\n    /\\ resp' = [resp EXCEPT ![r] = {}]\n"
       "    /\\ pending' = 0\n    /\\ isrFloor' = DurableStart(r)\n    /\\ isr' = {r}\n"
       "    /\\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, flushed, committed, acked,"
       "\n                   down>>",
       "elect any replica, as an unclean election does (its ISR is then the new leader alone)"),
    _m("LogStartOffset", "ExpandIgnoresEpochStart",
       "    /\\ leo[r] >= hw[leader] /\\ leo[r] >= epochStart\n",
       "    /\\ leo[r] >= hw[leader]\n",
       "a follower rejoins the ISR once it reaches the leader's HW, not its epoch's start offset"),
    _m("LogStartOffset", "RestartKeepsEpochStart",
       "           /\\ epochStart' = IF r = leader THEN newLeo ELSE epochStart\n",
       "           /\\ epochStart' = epochStart\n",
       "a restarted leader goes on in its old epoch (its epoch start offset not reset)"),
    _m("LogStartOffset", "CrashLosesFlushed",
       "        /\\ flushed[r] <= e /\\ e <= leo[r]\n",
       "        /\\ e <= leo[r]\n",
       "a crash may lose flushed records too"),
    _m("LogStartOffset", "CrashLosesCommitted",
       "        /\\ r \\in isr => e >= committed\n", "",
       "a crash of an in-sync replica may lose committed records (no fault model)"),
    _m("LogStartOffset", "RestartHWAboveLEO",
       "/\\ start <= h /\\ h <= hw[r] /\\ h <= newLeo",
       "/\\ start <= h /\\ h <= hw[r]",
       "a restart takes the checkpointed HW without clamping it to the LEO that remains"),
    _m("LogStartOffset", "DeleteRecordsBeyondHW",
       "    /\\ logStart[leader] < o /\\ o <= hw[leader]",
       "    /\\ logStart[leader] < o /\\ o <= leo[leader]",
       "DeleteRecords raises the start offset above the HW (bounded by the LEO)"),
    _m("LogStartOffset", "RetentionBoundByLEO",
       '        limit == IF Bug = "RetentionIgnoresHW" THEN leo[r] ELSE hw[r]',
       "        limit == leo[r]",
       "retention bounded by the LEO instead of the HW"),
    _m("LogStartOffset", "FollowerStartAboveHW",
       "                    newStart == Max(logStart[r], Min({m.start, newHW}))",
       "                    newStart == Max(logStart[r], m.start)",
       "a follower raises its start offset without bounding it by its HW"),
    _m("LogStartOffset", "FollowerHWFromServedLEO",
       "                LET newHW == Max(logStart[r], Min({m.hw, o}))",
       "                LET newHW == Max(logStart[r], Min({m.hw, m.leo}))",
       "a follower that fetched only part of the response takes the served HW unclamped to "
       "its own LEO"),
    _m("LogStartOffset", "TruncateBelowHW",
       "        /\\ hw[r] <= o /\\ o < leo[r] /\\ o <= leo[leader]\n",
       "        /\\ o < leo[r] /\\ o <= leo[leader]\n",
       "a follower truncates below its HW (to a divergence point it should never find there)"),
    _m("LogStartOffset", "InSyncTruncatesCommitted",
       "        /\\ r \\in isr => o >= committed\n", "",
       "an in-sync follower truncates committed records (its log diverging below the HW of "
       "the partition)"),
    _m("LogStartOffset", "SkipCheckpoint",
       '    IF Bug = "StartOffsetCheckpointLazy" THEN ckptStart ELSE [ckptStart EXCEPT ![r] = new]',
       "    ckptStart",
       "a raise of the start offset skips its checkpoint"),
    _m("LogStartOffset", "RestartIgnoresCheckpoint",
       "    LET start == DurableStart(r) IN",
       "    LET start == segStart[r] IN",
       "a restart loads the start offset from the first segment alone"),
    _m("LogStartOffset", "AckOnInMemoryLowWatermark",
       "    ELSE Min({DurableStart(r) : r \\in Counted})",
       "    ELSE LowWatermark",
       "acknowledge a DeleteRecords on Kafka's in-memory low watermark"),
    _m("LogStartOffset", "AckCountsLeaderOnly",
       "Counted == Replicas \\ down",
       "Counted == {leader}",
       "the low watermark counts the leader alone, not the followers that are up"),
    _m("LogStartOffset", "ExpandIgnoresIsrFloor",
       "    /\\ DurableStart(r) >= isrFloor\n", "",
       "a follower rejoins the ISR whatever its durable start offset (Kafka's rule)"),
    _m("LogStartOffset", "ElectedWithoutFloor",
       "    /\\ isrFloor' = DurableStart(r)\n",
       "    /\\ isrFloor' = 0\n",
       "a new leader starts its ISR floor at 0, not at its durable start offset"),
    _m("LogStartOffset", "RestartedLeaderWithoutFloor",
       "    /\\ isrFloor' = IF r = leader THEN DurableStart(r) ELSE isrFloor",
       "    /\\ isrFloor' = IF r = leader THEN 0 ELSE isrFloor",
       "a restarted leader's ISR floor starts at 0 (it was in memory)"),
    _m("LogStartOffset", "FollowerRaiseCheckpointed",
       "                /\\ UNCHANGED <<segStart, ckptStart, flushed>>",
       "                /\\ ckptStart' = [ckptStart EXCEPT ![r] = newStart]\n"
       "                /\\ UNCHANGED <<segStart, flushed>>",
       "a follower checkpoints its raised start offset with the raise (stronger: an equivalent "
       "change the invariants must not see)"),
    _m("LogStartOffset", "CountsDownReplicas",
       "Counted == Replicas \\ down",
       "Counted == Replicas",
       "the low watermark counts the replicas that are down too: a DeleteRecords waits for a "
       "broker that may never come back", cfg="LogStartOffset_liveness.cfg"),
    _m("LogStartOffset", "NoAckFairness",
       "    /\\ WF_vars(AcknowledgeDeleteRecords)",
       "    /\\ TRUE",
       "leave the acknowledgement's fairness out: a DeleteRecords may wait forever",
       cfg="LogStartOffset_liveness.cfg"),
    _m("LogStartOffset", "NoCheckpointFairness",
       "/\\ WF_vars(CheckpointStartOffset(r))",
       "/\\ TRUE",
       "leave the follower's checkpoint write unfair: its start offset may never be durable",
       cfg="LogStartOffset_liveness.cfg"),
    # -- StrayCleanup ------------------------------------------------------------------------
    _m("StrayCleanup", "NoRetentionGuard",
       '    /\\ Bug # "NoAgeGuard" => now - l.lastWrite >= RetentionPeriod\n', "",
       "drop the age guard of DeleteStray"),
    _m("StrayCleanup", "AgeGuardStrict",
       '    /\\ Bug # "NoAgeGuard" => now - l.lastWrite >= RetentionPeriod\n',
       '    /\\ Bug # "NoAgeGuard" => now - l.lastWrite > RetentionPeriod\n',
       "the age guard with > instead of >="),
    _m("StrayCleanup", "VersionEpochOnly",
       "        fresh(p) == ~VLt(v, appliedVersion[b][p])",
       "        fresh(p) == m.epoch >= appliedVersion[b][p][1]",
       "the version rule compares controller epochs only, not the sequence numbers"),
    _m("StrayCleanup", "FullDecidesEveryName",
       "              LET decided == {p \\in Partitions : fresh(p)} IN",
       "              LET decided == Partitions IN",
       "a FULL request decides every partition name, newer applied versions too"),
    _m("StrayCleanup", "IncrementalKeepsOtherIdLive",
       '        IF u = t THEN HostedLog(l) ELSE IF l.state = "live" THEN Strayed(l) ELSE l]',
       "        IF u = t THEN HostedLog(l) ELSE l]",
       "an INCREMENTAL LeaderAndIsr hosts the new topic id without setting the old one aside"),
    _m("StrayCleanup", "FullIgnoresOfflineDir",
       "              IF dirOnline[b]\n"
       "              THEN /\\ disk' = [disk EXCEPT ![b] = [p \\in Partitions |->",
       "              IF TRUE\n"
       "              THEN /\\ disk' = [disk EXCEPT ![b] = [p \\in Partitions |->",
       "a FULL request is applied while the broker's log dir is offline"),
    _m("StrayCleanup", "DeleteBeforeFullRequest",
       "    /\\ online[b] /\\ dirOnline[b] /\\ sawFull[b]\n    /\\ l.state = \"stray\"",
       "    /\\ online[b] /\\ dirOnline[b]\n    /\\ l.state = \"stray\"",
       "delete strays before this incarnation applied a FULL request"),
    _m("StrayCleanup", "RestartKeepsVersions",
       "    /\\ appliedVersion' = [appliedVersion EXCEPT ![b] = "
       "[p \\in Partitions |-> NoVersion]]\n",
       "    /\\ UNCHANGED appliedVersion\n",
       "a restarted broker still remembers the versions it applied"),
    # -- ReplicaMove -------------------------------------------------------------------------
    _m("ReplicaMove", "SwapBeforeFutureFlushed",
       '    /\\ Bug # "SwapBeforeFlush" /\\ Bug # "SeedRenameOrder" => dur["fut"] = vol["fut"]\n',
       "",
       "rename the future log live before it is flushed"),
    _m("ReplicaMove", "BeginSwapBeforeCaughtUp",
       '    /\\ vol["fut"] = dur["src"]\n    /\\ locked\' = TRUE',
       "    /\\ locked' = TRUE",
       "take the append lock before the copy caught up"),
    _m("ReplicaMove", "SwapBeforeFutureCaughtUp",
       '    /\\ Bug # "SwapBeforeCopyDone" => vol["fut"] = vol["src"]\n', "",
       "rename the future log live before it holds every source record"),
    _m("ReplicaMove", "CopyUnflushed",
       '    /\\ vol["fut"] + skew \\in 0..(dur["src"] - 1)',
       '    /\\ vol["fut"] + skew \\in 0..(vol["src"] - 1)',
       "the copier copies source records that are not fsynced yet"),
    _m("ReplicaMove", "RenameSourceBeforeCommit",
       '       ELSE durName["fut"] = "live"', '       ELSE name["fut"] = "live"',
       "rename the source -delete before the future's live name is durable (S4)"),
    _m("ReplicaMove", "RecoverKeepsOldLive",
       "                              ELSE IF durName[l] = \"live\" THEN \"delete\"\n", "",
       "recovery leaves the lower generation's live dir live (R2 skipped)",
       cfg="ReplicaMove_liveness.cfg"),
    _m("ReplicaMove", "EndSwapKeepsLock",
       "    /\\ current' = \"fut\"\n    /\\ locked' = FALSE",
       "    /\\ current' = \"fut\"\n    /\\ locked' = TRUE",
       "the swap never releases the append lock", cfg="ReplicaMove_liveness.cfg"),
    _m("ReplicaMove", "NoRecoverFairness",
       "    /\\ WF_vars(Recover)", "    /\\ TRUE",
       "leave the restart unfair: a crashed broker may never recover",
       cfg="ReplicaMove_liveness.cfg"),
    _m("ReplicaMove", "NoCopyFairness",
       "    /\\ WF_vars(Copy)", "    /\\ TRUE",
       "leave the copier unfair: a move may never catch up",
       cfg="ReplicaMove_liveness.cfg"),
    _m("ReplicaMove", "FutureIgnoresTruncation",
       "    /\\ vol' = [l \\in Logs |-> IF vol[l] >= vol[\"src\"] THEN vol[\"src\"] - 1 "
       "ELSE vol[l]]\n"
       "    /\\ dur' = [l \\in Logs |-> IF dur[l] >= vol[\"src\"] THEN vol[\"src\"] - 1 "
       "ELSE dur[l]]",
       "    /\\ vol' = [vol EXCEPT ![\"src\"] = @ - 1]\n"
       "    /\\ dur' = [dur EXCEPT ![\"src\"] = Min(@, vol[\"src\"] - 1)]",
       "the future log keeps records above the source's truncation point"),
    _m("ReplicaMove", "SwapIgnoresStart",
       '    /\\ start["fut"] = start["src"]\n', "",
       "rename the future log live with a start offset below the source's"),
    _m("ReplicaMove", "DeleteRecordsDuringSwap",
       "RaiseStart ==\n    /\\ up /\\ ~locked", "RaiseStart ==\n    /\\ up",
       "raise the source's start offset while the swap holds the lock"),
    _m("ReplicaMove", "NoFollowStartFairness",
       "    /\\ WF_vars(FollowStart)", "    /\\ TRUE",
       "the copier may never carry a raised start offset over",
       cfg="ReplicaMove_liveness.cfg"),
    _m("ReplicaMove", "AppendWhileLocked",
       '    /\\ locked => Bug = "AppendDuringSwap"\n', "",
       "append during the swap"),
    _m("ReplicaMove", "EndSwapBeforeDirFsync",
       '    /\\ durName["fut"] = "live" /\\ durName["src"] = "delete"',
       '    /\\ name["fut"] = "live" /\\ name["src"] = "delete"',
       "end the swap before the renames are made durable"),
    _m("ReplicaMove", "ServeBeforeRecoveryDurable",
       "    /\\ \\A l \\in Online : durName[l] = name[l]\n", "",
       "serve the recovered log before recovery's renames are durable"),
    _m("ReplicaMove", "DirFailureKeepsSwapSource",
       "    /\\ current' \\in IF current = l \\/ (locked /\\ (name[\"fut\"] = \"live\" "
       "\\/ name[\"src\"] # \"live\"))",
       "    /\\ current' \\in IF current = l",
       "a dir failure during the swap leaves the source serving though the future may be live"),
    _m("ReplicaMove", "RecoverResumesStaleFuture",
       "                              ELSE IF durName[l] = \"future\" /\\ a # \"none\" "
       "/\\ newer # l\n                                   THEN \"delete\"\n", "",
       "start-up resumes a future dir below the live log's generation (R3 unguarded)",
       cfg="ReplicaMove_liveness.cfg"),
    _m("ReplicaMove", "SwapOlderFuture",
       "    /\\ current = \"src\" /\\ name[\"fut\"] = \"future\" /\\ ~offline[\"fut\"] "
       "/\\ newer = \"fut\"",
       "    /\\ current = \"src\" /\\ name[\"fut\"] = \"future\" /\\ ~offline[\"fut\"]",
       "swap in a future log of a lower generation than the source"),
    _m("ReplicaMove", "NoRestartMoveFairness",
       "    /\\ WF_vars(RestartMove)", "    /\\ TRUE",
       "a move whose stale future log was dropped may never start again",
       cfg="ReplicaMove_liveness.cfg"),
)
"""Every mutant of every module, in module order."""

NO_NEW_STATES: dict[tuple[str, str], str] = {
    ("ReplicaMove", "TruncateSource"):
        "the future log follows the source's truncation in the same step, so the step lands "
        "where the truncated records were never written; it is in the model for the mutant "
        "FutureIgnoresTruncation, which is caught",
    ("ReplicaMove", "RestartMove"):
        "a move started again with a fresh, empty future log lands where a move stands before "
        "it copied anything, which the search reaches first that way; the mutant "
        "NoRestartMoveFairness shows the step is needed",
}
"""(module, action) pairs argued in spec/README.md to find no state first in the correct
model's TLC coverage, and why; any other action that finds none is a finding."""


@dataclass
class MutantResult:
    """What TLC said about one mutant."""

    mutant: SpecMutant
    verdict: str
    """``caught`` (a violation), ``survived`` (none) or ``error`` (TLC could not check it)."""
    violation: str | None
    seconds: float
    detail: str = ""


def spec_root() -> Path:
    """spec/ of this source tree (or $LOGWRIGHT_SPEC_DIR, as verify reads it)."""
    from logwright.verify.formal import spec_dir

    return spec_dir()


def run_mutant(mutant: SpecMutant, root: Path | None = None,
               tools: TlaTools | None = None, timeout_s: float = 900) -> MutantResult:
    """Apply ``mutant`` to a temporary copy of its module and run TLC on its .cfg (the correct
    one unless the mutant names another)."""
    base = root or spec_root()
    with tempfile.TemporaryDirectory(prefix="logwright-spec-mutant-") as tmp:
        work = Path(tmp)
        tla = work / f"{mutant.module}.tla"
        tla.write_text(mutant.apply((base / f"{mutant.module}.tla").read_text(encoding="utf-8")),
                       encoding="utf-8")
        cfg = work / mutant.cfg_name
        shutil.copyfile(base / mutant.cfg_name, cfg)
        r = run_tlc(tla, cfg, tools=tools, timeout_s=timeout_s)
    if not r.ok:
        return MutantResult(mutant, "error", None, r.seconds, r.error or "")
    if r.violation is not None:
        return MutantResult(mutant, "caught", r.violation, r.seconds,
                            f"{r.violation} violated after {len(r.trace)} states")
    return MutantResult(mutant, "survived", None, r.seconds,
                        f"no violation in {r.distinct or 0:,} distinct states")


_ACTION = re.compile(r"^<(\w+) line (\d+), col \d+ to line \d+, col \d+ of module (\w+)"
                     r"(?: \((\d+) (\d+) (\d+) (\d+)\))?>: (\d+):(\d+)$")


def parse_coverage(output: str, tla_text: str) -> dict[str, tuple[int, int]]:
    """Per action, (distinct states it found, states it generated), from TLC's ``-coverage``
    report. An action TLC reports as a disjunct of ``Next`` (``<Next ... (L C L C)>``) is named
    by the operator its text (from line L col C to line L' col C') calls last."""
    lines = tla_text.splitlines()
    found: dict[str, tuple[int, int]] = {}
    for line in output.splitlines():
        m = _ACTION.match(line.strip())
        if m is None:
            continue
        name, _, _, l1, c1, l2, c2, distinct, generated = m.groups()
        if name == "Init":
            continue
        if l1 is not None and name == "Next":  # (elsewhere: a part of the action's own body)
            first, last = int(l1) - 1, int(l2) - 1
            text = "\n".join(lines[first:last + 1])
            text = text[int(c1) - 1:len(text) - len(lines[last]) + int(c2)]
            body = text.rsplit(":", 1)[-1] if "\\E" in text else text
            called = re.findall(r"\b([A-Z]\w*)\(", body)
            plain = re.findall(r"\b([A-Z]\w*)\b", body.replace("\\/", " "))
            name = (called or plain or [name])[0]
        d, g = found.get(name, (0, 0))
        found[name] = (d + int(distinct), g + int(generated))
    return found


def coverage(module: str, root: Path | None = None,
             tools: TlaTools | None = None) -> dict[str, tuple[int, int]]:
    """Run TLC with ``-coverage`` on the module's correct .cfg: per action, (distinct states it
    found, states it generated). Empty when TLC cannot run."""
    tools = tools or find_tools()
    if tools is None:
        return {}
    base = root or spec_root()
    tla = base / f"{module}.tla"
    with tempfile.TemporaryDirectory(prefix="logwright-tlc-coverage-") as metadir:
        proc = subprocess.run(
            [tools.java, "-XX:+UseParallelGC", "-cp", str(tools.jar), "tlc2.TLC", "-workers", "1",
             "-deadlock", "-noGenerateSpecTE", "-lncheck", "final", "-coverage", "60",
             "-metadir", metadir, "-config", f"{module}.cfg", tla.name],
            cwd=base, capture_output=True, text=True, timeout=1800, check=False)
    return parse_coverage(proc.stdout + proc.stderr, tla.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    """Run the spec mutation suite (or ``--coverage``) on the named modules, or on all."""
    parser = argparse.ArgumentParser(prog="python -m logwright.verify.spec_mutants",
                                     description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("modules", nargs="*", help="TLA+ modules (default: all six)")
    parser.add_argument("--coverage", action="store_true",
                        help="report TLC's per-action coverage of each correct .cfg instead")
    args = parser.parse_args(argv)
    missing = tlc_missing()
    if missing is not None:
        print(f"spec mutants: skipped, {missing}")
        return 0
    modules = args.modules or sorted({m.module for m in MUTANTS})
    unknown = set(modules) - {m.module for m in MUTANTS}
    if unknown:
        parser.error(f"unknown module(s): {', '.join(sorted(unknown))}")
    if args.coverage:
        for module in modules:
            started = time.perf_counter()
            table = coverage(module)
            print(f"{module} ({time.perf_counter() - started:.0f}s):")
            for action, (distinct, generated) in table.items():
                accepted = (module, action) in NO_NEW_STATES
                print(f"  {action:<28} {distinct:>9,} distinct {generated:>11,} generated"
                      + ("" if distinct else "   never a new state (accepted, spec/README.md)"
                         if accepted else "   NEVER A NEW STATE"))
        return 0
    survived = 0
    for mutant in MUTANTS:
        if mutant.module not in modules:
            continue
        r = run_mutant(mutant)
        survived += r.verdict != "caught"
        print(f"{r.verdict:<8} {mutant.module}/{mutant.name}: {r.detail} ({r.seconds:.0f}s)"
              f" -- {mutant.why}", flush=True)
    print(f"{survived} not caught" if survived else "every mutant caught")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
