---------------------------- MODULE LogStartOffset ----------------------------
(***************************************************************************)
(* The log start offset and the committed records of one partition's      *)
(* replicas (KIP-107 DeleteRecords, segment retention), across crashes,   *)
(* loss of unflushed records and leader changes.                          *)
(*                                                                         *)
(* A leader takes appends one record at a time; followers fetch from it,  *)
(* a fetch being a request and a response: the leader serves it with its *)
(* LEO, HW and start offset as they are then, and the follower applies    *)
(* the response later, when the leader may have moved on (appended,       *)
(* advanced its HW, raised its start offset, or lost its leadership). The *)
(* leader raises its HW to any value up to the least LEO of the in-sync   *)
(* replicas (ISR): its knowledge of the followers' LEOs lags, so it may   *)
(* stop short. A follower appends records up to at most the served LEO,  *)
(* takes the served HW (clamped to its log), THEN raises its start offset *)
(* to the served one (never above its own HW). A follower below the       *)
(* served start offset truncates fully and restarts its log there (hazard *)
(* 8). A follower never truncates from a fetch response: one whose log    *)
(* diverges from the leader's truncates to the divergence point (the      *)
(* leader epoch protocol), at or above its HW.                           *)
(* The controller may elect any other in-sync replica leader (a clean     *)
(* election: the new leader truncates nothing of its own).                *)
(*                                                                         *)
(* Durability: records are durable once flushed; a crash may lose any     *)
(* suffix above the flushed offset, but an in-sync replica never loses a  *)
(* committed record (the fault model: a fault that destroys data strikes  *)
(* a replica that holds committed data only while another in-sync replica *)
(* keeps it, and the controller drops the damaged one from the ISR first; *)
(* Kafka makes the same assumption, see spec/README.md). The log start    *)
(* offset survives a crash only through its checkpoint and the segments   *)
(* that were physically deleted; the HW survives through a periodic       *)
(* checkpoint, so after a restart it is any value between the start offset *)
(* and the HW before the crash, at most the LEO that remains. A crash     *)
(* restarts the replica at once, in the role it had.                      *)
(*                                                                         *)
(* Invariants: NoNewDataDeleted (hazard 1), NeverServeBelowLogStart       *)
(* (hazards 8 and 12) and CommittedDataOnIsr (an HW that ignores the ISR). *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets

CONSTANTS
    Replicas,       \* replica (broker) ids, e.g. {1, 2}
    Leader,         \* the replica that leads the partition at first, e.g. 1
    MaxOffset,      \* appends stop when the leader's LEO reaches this offset
    SegmentSize,    \* offsets per segment; retention deletes whole segments
    Bug             \* "none", or the injected bug:
                    \*   "RetentionIgnoresHW"          retention deletes segments that reach
                    \*                                 above the HW (hazard 1)
                    \*   "FollowerRaisesStartBeforeHW" a follower that truncates fully raises
                    \*                                 its start offset but not its HW (hazard 8)
                    \*   "StartOffsetCheckpointLazy"   the start offset is checkpointed later,
                    \*                                 not when it is raised (hazard 12)
                    \*   "HWIgnoresIsr"                the leader advances its HW to its own
                    \*                                 LEO, not the least LEO of the ISR

VARIABLES
    leo,            \* replica -> log end offset: the offset the next record will get
    hw,             \* replica -> high watermark: offsets below it are committed
    logStart,       \* replica -> log start offset: offsets below it are deleted, never served
    segStart,       \* replica -> base offset of its first segment (offsets below it are gone
                    \*   from disk)
    ckptStart,      \* replica -> log start offset in its durable checkpoint file
    flushed,        \* replica -> offsets below it are on disk (Kafka's recovery point)
    isr,            \* the in-sync replicas, the leader always among them
    leader,         \* the replica that leads the partition now
    epochStart,     \* the leader's LEO when it became leader (its leader epoch's start offset)
    committed,      \* ghost: the highest HW a leader ever had (the partition's HW; a restart
                    \*   or an election can lower the leader's own HW, but offsets below this
                    \*   were committed)
    acked,          \* ghost: the highest low watermark a DeleteRecords response reported (the
                    \*   response reports it once it reaches the requested offset, and a
                    \*   request may be waiting for any offset, so every value may be reported)
    resp            \* replica -> the fetch response in flight to it: {} (none), or one record
                    \*   [leo, hw, start] of the leader's values when it served the fetch

vars == <<leo, hw, logStart, segStart, ckptStart, flushed, isr, leader, epochStart, committed,
          acked, resp>>

Offsets == 0..MaxOffset
Responses == [leo : Offsets, hw : Offsets, start : Offsets]
Min(S) == CHOOSE x \in S : \A y \in S : x <= y
Max(a, b) == IF a >= b THEN a ELSE b

\* The least log start offset over all replicas: a DeleteRecords is answered once it reaches the
\* requested offset. Every replica counts (a crash restarts the replica at once, so none is dead).
LowWatermark == Min({logStart[r] : r \in Replicas})

\* The log start offset's checkpoint after it was raised to `new`: written at once, before anything
\* is acknowledged; with the bug, left for CheckpointStartOffset to write some time later.
CkptAfterRaise(r, new) ==
    IF Bug = "StartOffsetCheckpointLazy" THEN ckptStart ELSE [ckptStart EXCEPT ![r] = new]

\* How far the leader may raise its HW: the least LEO in the ISR (the bug: its own LEO).
HWLimit ==
    IF Bug = "HWIgnoresIsr" THEN leo[leader] ELSE Min({leo[r] : r \in isr})

TypeOK ==
    /\ leo \in [Replicas -> Offsets]
    /\ hw \in [Replicas -> Offsets]
    /\ logStart \in [Replicas -> Offsets]
    /\ segStart \in [Replicas -> Offsets]
    /\ ckptStart \in [Replicas -> Offsets]
    /\ flushed \in [Replicas -> Offsets]
    /\ isr \subseteq Replicas /\ leader \in Replicas /\ leader \in isr
    /\ epochStart \in Offsets
    /\ committed \in Offsets
    /\ acked \in Offsets
    /\ resp \in [Replicas -> SUBSET Responses]
    /\ \A r \in Replicas : Cardinality(resp[r]) <= 1

Init ==
    /\ leo = [r \in Replicas |-> 0]
    /\ hw = [r \in Replicas |-> 0]
    /\ logStart = [r \in Replicas |-> 0]
    /\ segStart = [r \in Replicas |-> 0]
    /\ ckptStart = [r \in Replicas |-> 0]
    /\ flushed = [r \in Replicas |-> 0]
    /\ isr = Replicas
    /\ leader = Leader
    /\ epochStart = 0
    /\ committed = 0
    /\ acked = 0
    /\ resp = [r \in Replicas |-> {}]

\* A producer appends one record to the leader.
Append ==
    /\ leo[leader] < MaxOffset
    /\ leo' = [leo EXCEPT ![leader] = @ + 1]
    /\ UNCHANGED <<hw, logStart, segStart, ckptStart, flushed, isr, leader, epochStart,
                   committed, acked, resp>>

\* The leader serves follower r's fetch (one in flight per follower): the response carries its
\* LEO, HW and start offset as they are now. It is applied later (ApplyFetch), or lost
\* (DropResponse).
ServeFetch(r) ==
    /\ r # leader /\ resp[r] = {}
    /\ resp' = [resp EXCEPT ![r] = {[leo |-> leo[leader], hw |-> hw[leader],
                                      start |-> logStart[leader]]}]
    /\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, flushed, isr, leader, epochStart,
                   committed, acked>>

\* Follower r applies the response m in flight to it, whatever the leader did since it was
\* served. Below m's start offset (OFFSET_OUT_OF_RANGE), it deletes its whole log and restarts
\* it at that offset, with its HW there too (the bug leaves the HW behind). Otherwise it appends
\* the records from its LEO up to some o at most m's LEO (a fetch may stop short of it; it never
\* truncates: a response below its LEO is not applied), takes m's HW clamped to its log (so it
\* may go down, after a leader change, as in Kafka), and only then raises its start offset to
\* m's, bounded by that HW.
ApplyFetch(r) ==
    /\ r # leader
    /\ \E m \in resp[r] :
        /\ resp' = [resp EXCEPT ![r] = {}]
        /\ IF leo[r] < m.start
           THEN LET new == m.start IN
                /\ leo' = [leo EXCEPT ![r] = new]
                /\ hw' = IF Bug = "FollowerRaisesStartBeforeHW" THEN hw
                         ELSE [hw EXCEPT ![r] = new]
                /\ logStart' = [logStart EXCEPT ![r] = new]
                /\ segStart' = [segStart EXCEPT ![r] = new]
                /\ ckptStart' = CkptAfterRaise(r, new)
                /\ flushed' = [flushed EXCEPT ![r] = new]
           ELSE \E o \in leo[r]..m.leo :
                LET newHW == Max(logStart[r], Min({m.hw, o}))
                    newStart == Max(logStart[r], Min({m.start, newHW}))
                IN
                /\ leo' = [leo EXCEPT ![r] = o]
                /\ hw' = [hw EXCEPT ![r] = newHW]
                /\ logStart' = [logStart EXCEPT ![r] = newStart]
                /\ ckptStart' = IF newStart = logStart[r] THEN ckptStart
                                ELSE CkptAfterRaise(r, newStart)
                /\ UNCHANGED <<segStart, flushed>>
    /\ UNCHANGED <<isr, leader, epochStart, committed, acked>>

\* The response in flight to r is lost, or dropped by r: its fetch state changed meanwhile (a
\* new leader epoch, a truncation), or the response is below its LEO (its log diverges).
DropResponse(r) ==
    /\ resp[r] # {}
    /\ resp' = [resp EXCEPT ![r] = {}]
    /\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, flushed, isr, leader, epochStart,
                   committed, acked>>

\* Follower r truncates its log to o, where it diverges from the leader's (the leader epoch
\* protocol: OffsetsForLeaderEpoch, or a fetch response naming a diverging epoch). The records up
\* to its HW, and an in-sync replica's committed ones, are the leader's, so o is at least those;
\* and at most the leader's LEO.
TruncateFollower(r) ==
    \E o \in Offsets :
        /\ r # leader
        /\ hw[r] <= o /\ o < leo[r] /\ o <= leo[leader]
        /\ r \in isr => o >= committed
        /\ leo' = [leo EXCEPT ![r] = o]
        /\ flushed' = [flushed EXCEPT ![r] = Min({@, o})]
        /\ UNCHANGED <<hw, logStart, segStart, ckptStart, isr, leader, epochStart, committed,
                       acked, resp>>

\* The leader raises its HW to h, at most the least LEO in the ISR: what it knows of the
\* followers' LEOs lags, so any value up to that least LEO may be the one it reaches.
AdvanceHW(h) ==
    /\ hw[leader] < h /\ h <= HWLimit
    /\ hw' = [hw EXCEPT ![leader] = h]
    /\ committed' = Max(committed, h)
    /\ UNCHANGED <<leo, logStart, segStart, ckptStart, flushed, isr, leader, epochStart, acked,
                   resp>>

\* The leader (lag) or the controller (a failure) drops follower r from the ISR.
ShrinkIsr(r) ==
    /\ r \in isr /\ r # leader
    /\ isr' = isr \ {r}
    /\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, flushed, leader, epochStart,
                   committed, acked, resp>>

\* The leader adds back a follower that has caught up to its HW and to its epoch's start offset.
ExpandIsr(r) ==
    /\ r \notin isr
    /\ leo[r] >= hw[leader] /\ leo[r] >= epochStart
    /\ isr' = isr \cup {r}
    /\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, flushed, leader, epochStart,
                   committed, acked, resp>>

\* The controller makes another in-sync replica leader; its epoch starts at its LEO. It stops
\* fetching: a response in flight to it is dropped.
ElectLeader(r) ==
    /\ r \in isr /\ r # leader
    /\ leader' = r
    /\ epochStart' = leo[r]
    /\ resp' = [resp EXCEPT ![r] = {}]
    /\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, flushed, isr, committed, acked>>

\* DeleteRecords(o) on the leader: its start offset rises to o, at most its HW.
DeleteRecords(o) ==
    /\ logStart[leader] < o /\ o <= hw[leader]
    /\ logStart' = [logStart EXCEPT ![leader] = o]
    /\ ckptStart' = CkptAfterRaise(leader, o)
    /\ UNCHANGED <<leo, hw, segStart, flushed, isr, leader, epochStart, committed, acked,
                   resp>>

\* A DeleteRecords response reports the low watermark, now higher than any reported before.
AcknowledgeDeleteRecords ==
    /\ LowWatermark > acked
    /\ acked' = LowWatermark
    /\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, flushed, isr, leader, epochStart,
                   committed, resp>>

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
    /\ UNCHANGED <<leo, hw, flushed, isr, leader, epochStart, committed, acked, resp>>

\* The periodic checkpoint of the start offset (only ever behind with the lazy bug).
CheckpointStartOffset(r) ==
    /\ ckptStart[r] # logStart[r]
    /\ ckptStart' = [ckptStart EXCEPT ![r] = logStart[r]]
    /\ UNCHANGED <<leo, hw, logStart, segStart, flushed, isr, leader, epochStart, committed,
                   acked, resp>>

\* Replica r's records below f reach the disk (a flush, or a segment roll flushing the old one).
Flush(r) ==
    \E f \in Offsets :
        /\ flushed[r] < f /\ f <= leo[r]
        /\ flushed' = [flushed EXCEPT ![r] = f]
        /\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, isr, leader, epochStart,
                       committed, acked, resp>>

\* Replica r crashes and restarts with its durable state: its records up to some e at least its
\* flushed offset (an in-sync replica keeps every committed one: the fault model), its segments,
\* the start offset max(checkpoint, first segment's base), and an HW from a checkpoint of some
\* earlier moment (at least the start offset, which is how it is loaded, and at most the LEO that
\* remains). A log that lost everything above its start offset restarts empty there. A leader
\* restarts as leader, in a new epoch starting at its LEO. A response in flight to r is lost.
CrashRestart(r) ==
    LET start == Max(ckptStart[r], segStart[r]) IN
    \E e \in Offsets :
        /\ flushed[r] <= e /\ e <= leo[r]
        /\ r \in isr => e >= committed
        /\ LET newLeo == Max(e, start) IN
           /\ \E h \in Offsets : /\ start <= h /\ h <= hw[r] /\ h <= newLeo
                                 /\ hw' = [hw EXCEPT ![r] = h]
           /\ leo' = [leo EXCEPT ![r] = newLeo]
           /\ logStart' = [logStart EXCEPT ![r] = start]
           /\ segStart' = [segStart EXCEPT ![r] = IF e < start THEN start ELSE @]
           /\ flushed' = [flushed EXCEPT ![r] = newLeo]
           /\ epochStart' = IF r = leader THEN newLeo ELSE epochStart
        /\ resp' = [resp EXCEPT ![r] = {}]
        /\ UNCHANGED <<ckptStart, isr, leader, committed, acked>>

Next ==
    \/ Append
    \/ \E r \in Replicas : ServeFetch(r)
    \/ \E r \in Replicas : ApplyFetch(r)
    \/ \E r \in Replicas : DropResponse(r)
    \/ \E r \in Replicas : TruncateFollower(r)
    \/ \E h \in Offsets : AdvanceHW(h)
    \/ \E r \in Replicas : ShrinkIsr(r)
    \/ \E r \in Replicas : ExpandIsr(r)
    \/ \E r \in Replicas : ElectLeader(r)
    \/ \E o \in Offsets : DeleteRecords(o)
    \/ AcknowledgeDeleteRecords
    \/ \E r \in Replicas : DeleteOldestSegment(r)
    \/ \E r \in Replicas : CheckpointStartOffset(r)
    \/ \E r \in Replicas : Flush(r)
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

\* Every in-sync replica holds every committed offset: its log reaches the partition's HW (and,
\* by NoNewDataDeleted, starts at or below it). The ISR is whom the controller may elect, so this
\* is what makes an acknowledged record survive the loss of its leader.
CommittedDataOnIsr ==
    \A r \in isr : leo[r] >= committed
=============================================================================
