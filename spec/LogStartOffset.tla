---------------------------- MODULE LogStartOffset ----------------------------
(***************************************************************************)
(* The log start offset of one partition's replicas (KIP-107 DeleteRecords *)
(* and segment retention), across crashes.                                 *)
(*                                                                         *)
(* One fixed leader takes appends one record at a time; followers fetch     *)
(* from it. Each replica has a log end offset (LEO), a high watermark (HW), *)
(* a log start offset and a first segment; records are kept in segments of *)
(* SegmentSize offsets. The leader's HW is the least LEO of the in-sync     *)
(* replicas (ISR); a follower takes min(leader's HW, own LEO) from each     *)
(* fetch, THEN raises its start offset to the leader's (never above its     *)
(* own HW). A follower below the leader's start offset truncates fully and *)
(* restarts its log at the leader's start offset (hazard 8).              *)
(*                                                                         *)
(* Durability: records are durable once appended (this module is about    *)
(* offsets, not about losing unflushed records); the log start offset     *)
(* survives a crash only through its checkpoint and through the segments *)
(* that were physically deleted; the HW survives through a periodic       *)
(* checkpoint, so after a restart it is any value between the start offset *)
(* and the HW before the crash. A crash restarts the replica at once.      *)
(*                                                                         *)
(* Invariants: NoNewDataDeleted (hazard 1) and NeverServeBelowLogStart    *)
(* (hazards 8 and 12).                                                     *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets

CONSTANTS
    Replicas,       \* replica (broker) ids, e.g. {1, 2}
    Leader,         \* the replica that leads the partition throughout, e.g. 1
    MaxOffset,      \* appends stop when the leader's LEO reaches this offset
    SegmentSize,    \* offsets per segment; retention deletes whole segments
    Bug             \* "none", or the injected bug:
                    \*   "RetentionIgnoresHW"          retention deletes segments that reach
                    \*                                 above the HW (hazard 1)
                    \*   "FollowerRaisesStartBeforeHW" a follower that truncates fully raises
                    \*                                 its start offset but not its HW (hazard 8)
                    \*   "StartOffsetCheckpointLazy"   the start offset is checkpointed later,
                    \*                                 not when it is raised (hazard 12)

VARIABLES
    leo,            \* replica -> log end offset: the offset the next record will get
    hw,             \* replica -> high watermark: offsets below it are committed
    logStart,       \* replica -> log start offset: offsets below it are deleted, never served
    segStart,       \* replica -> base offset of its first segment (offsets below it are gone
                    \*   from disk)
    ckptStart,      \* replica -> log start offset in its durable checkpoint file
    isr,            \* the in-sync replicas, the leader always among them
    committed,      \* ghost: the highest HW the leader ever had (the partition's HW; a restart
                    \*   can lower the leader's own HW, but offsets below this were committed)
    acked           \* ghost: the highest low watermark a DeleteRecords response reported (the
                    \*   response reports it once it reaches the requested offset, and a
                    \*   request may be waiting for any offset, so every value may be reported)

vars == <<leo, hw, logStart, segStart, ckptStart, isr, committed, acked>>

Followers == Replicas \ {Leader}
Offsets == 0..MaxOffset
Min(S) == CHOOSE x \in S : \A y \in S : x <= y
Max(a, b) == IF a >= b THEN a ELSE b

\* The least log start offset over all replicas: a DeleteRecords is answered once it reaches the
\* requested offset. Every replica counts (a crash restarts the replica at once, so none is dead).
LowWatermark == Min({logStart[r] : r \in Replicas})

\* The log start offset's checkpoint after it was raised to `new`: written at once, before anything
\* is acknowledged; with the bug, left for CheckpointStartOffset to write some time later.
CkptAfterRaise(r, new) ==
    IF Bug = "StartOffsetCheckpointLazy" THEN ckptStart ELSE [ckptStart EXCEPT ![r] = new]

TypeOK ==
    /\ leo \in [Replicas -> Offsets]
    /\ hw \in [Replicas -> Offsets]
    /\ logStart \in [Replicas -> Offsets]
    /\ segStart \in [Replicas -> Offsets]
    /\ ckptStart \in [Replicas -> Offsets]
    /\ isr \subseteq Replicas /\ Leader \in isr
    /\ committed \in Offsets
    /\ acked \in Offsets

Init ==
    /\ leo = [r \in Replicas |-> 0]
    /\ hw = [r \in Replicas |-> 0]
    /\ logStart = [r \in Replicas |-> 0]
    /\ segStart = [r \in Replicas |-> 0]
    /\ ckptStart = [r \in Replicas |-> 0]
    /\ isr = Replicas
    /\ committed = 0
    /\ acked = 0

\* A producer appends one record to the leader.
Append ==
    /\ leo[Leader] < MaxOffset
    /\ leo' = [leo EXCEPT ![Leader] = @ + 1]
    /\ UNCHANGED <<hw, logStart, segStart, ckptStart, isr, committed, acked>>

\* Follower r fetches from the leader. From within the leader's log it copies every record up to
\* the leader's LEO, takes min(leader's HW, its LEO) as its HW (never lowering it), and only then
\* raises its start offset to the leader's, bounded by that HW. Below the leader's start offset
\* (OFFSET_OUT_OF_RANGE), it deletes its whole log and restarts it at the leader's start offset,
\* with its HW there too (the bug leaves the HW behind).
FollowerFetch(r) ==
    /\ r \in Followers
    /\ IF leo[r] < logStart[Leader]
       THEN LET new == logStart[Leader] IN
            /\ leo' = [leo EXCEPT ![r] = new]
            /\ hw' = IF Bug = "FollowerRaisesStartBeforeHW" THEN hw ELSE [hw EXCEPT ![r] = new]
            /\ logStart' = [logStart EXCEPT ![r] = new]
            /\ segStart' = [segStart EXCEPT ![r] = new]
            /\ ckptStart' = CkptAfterRaise(r, new)
       ELSE LET newHW == Max(hw[r], Min({hw[Leader], leo[Leader]}))
                newStart == Max(logStart[r], Min({logStart[Leader], newHW}))
            IN
            /\ leo' = [leo EXCEPT ![r] = leo[Leader]]
            /\ hw' = [hw EXCEPT ![r] = newHW]
            /\ logStart' = [logStart EXCEPT ![r] = newStart]
            /\ ckptStart' = IF newStart = logStart[r] THEN ckptStart
                            ELSE CkptAfterRaise(r, newStart)
            /\ UNCHANGED segStart
    /\ UNCHANGED <<isr, committed, acked>>

\* The leader advances its HW to the least LEO in the ISR.
AdvanceHW ==
    LET newHW == Min({leo[r] : r \in isr}) IN
    /\ newHW > hw[Leader]
    /\ hw' = [hw EXCEPT ![Leader] = newHW]
    /\ committed' = Max(committed, newHW)
    /\ UNCHANGED <<leo, logStart, segStart, ckptStart, isr, acked>>

\* The leader drops a follower that lags behind its LEO from the ISR.
ShrinkIsr(r) ==
    /\ r \in isr \ {Leader}
    /\ leo[r] < leo[Leader]
    /\ isr' = isr \ {r}
    /\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, committed, acked>>

\* The leader adds back a follower that has caught up to its HW.
ExpandIsr(r) ==
    /\ r \in Followers \ isr
    /\ leo[r] >= hw[Leader]
    /\ isr' = isr \cup {r}
    /\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, committed, acked>>

\* DeleteRecords(o) on the leader: its start offset rises to o, at most its HW.
DeleteRecords(o) ==
    /\ logStart[Leader] < o /\ o <= hw[Leader]
    /\ logStart' = [logStart EXCEPT ![Leader] = o]
    /\ ckptStart' = CkptAfterRaise(Leader, o)
    /\ UNCHANGED <<leo, hw, segStart, isr, committed, acked>>

\* A DeleteRecords response reports the low watermark, now higher than any reported before.
AcknowledgeDeleteRecords ==
    /\ LowWatermark > acked
    /\ acked' = LowWatermark
    /\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, isr, committed>>

\* Retention on replica r deletes its first segment, which must be full (not the active one) and
\* lie wholly below the HW (the bug: below the LEO). Whatever the reason (time, size, or a start
\* offset already beyond it), the start offset then rises to the next segment's base if below it.
DeleteOldestSegment(r) ==
    LET next == segStart[r] + SegmentSize
        limit == IF Bug = "RetentionIgnoresHW" THEN leo[r] ELSE hw[r]
        newStart == Max(logStart[r], next)
    IN
    /\ next <= limit
    /\ segStart' = [segStart EXCEPT ![r] = next]
    /\ logStart' = [logStart EXCEPT ![r] = newStart]
    /\ ckptStart' = IF newStart = logStart[r] THEN ckptStart ELSE CkptAfterRaise(r, newStart)
    /\ UNCHANGED <<leo, hw, isr, committed, acked>>

\* The periodic checkpoint of the start offset (only ever behind with the lazy bug).
CheckpointStartOffset(r) ==
    /\ ckptStart[r] # logStart[r]
    /\ ckptStart' = [ckptStart EXCEPT ![r] = logStart[r]]
    /\ UNCHANGED <<leo, hw, logStart, segStart, isr, committed, acked>>

\* Replica r crashes and restarts with its durable state: its records and segments, the start
\* offset max(checkpoint, first segment's base), and an HW from a checkpoint of some earlier
\* moment (at least the start offset, which is how it is loaded).
CrashRestart(r) ==
    LET start == Max(ckptStart[r], segStart[r]) IN
    /\ logStart' = [logStart EXCEPT ![r] = start]
    /\ \E h \in start..hw[r] : hw' = [hw EXCEPT ![r] = h]
    /\ UNCHANGED <<leo, segStart, ckptStart, isr, committed, acked>>

Next ==
    \/ Append
    \/ \E r \in Replicas : FollowerFetch(r)
    \/ AdvanceHW
    \/ \E r \in Replicas : ShrinkIsr(r)
    \/ \E r \in Replicas : ExpandIsr(r)
    \/ \E o \in Offsets : DeleteRecords(o)
    \/ AcknowledgeDeleteRecords
    \/ \E r \in Replicas : DeleteOldestSegment(r)
    \/ \E r \in Replicas : CheckpointStartOffset(r)
    \/ \E r \in Replicas : CrashRestart(r)

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
\* Nothing at or above the partition's HW is deleted, logically (start offset) or physically
\* (segments), on any replica.
NoNewDataDeleted ==
    \A r \in Replicas : segStart[r] <= committed /\ logStart[r] <= committed

\* Every replica serves only offsets in [logStart, HW) to consumers and [logStart, LEO) to
\* followers: 0 <= logStart <= HW <= LEO, and no start offset is below one already acknowledged
\* (an acknowledged deletion stays deleted across crashes).
NeverServeBelowLogStart ==
    \A r \in Replicas :
        /\ 0 <= logStart[r] /\ logStart[r] <= hw[r] /\ hw[r] <= leo[r]
        /\ acked <= logStart[r]
=============================================================================
