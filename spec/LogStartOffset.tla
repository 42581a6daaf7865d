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
(* restarts the replica at once, in the role it had; a follower may also  *)
(* go down (its broker dies: the controller drops it from the ISR) and    *)
(* come back later (Restart), with the same durable state.               *)
(*                                                                         *)
(* DeleteRecords (KIP-107): one request at a time waits in the leader's   *)
(* purgatory (pending). It is accepted for an offset o above the leader's *)
(* start offset and at most its HW, raising the start offset to o (and    *)
(* checkpointing it) at once. It is acknowledged once the low watermark   *)
(* reaches o, with the low watermark: Kafka's low watermark is the least  *)
(* start offset over the leader and the replicas that are up; beyond      *)
(* Kafka, the one acknowledged here is the least DURABLE start offset     *)
(* (checkpointed, or its segments below deleted) over the same replicas.  *)
(* It may time out (REQUEST_TIMED_OUT) or end when leadership moves or    *)
(* the leader restarts (NOT_LEADER_OR_FOLLOWER): nothing is acknowledged. *)
(* A follower raises its start offset in memory from a fetch response and *)
(* checkpoints it in a step of its own (CheckpointStartOffset). Beyond    *)
(* Kafka, a follower joins the ISR only once its durable start offset     *)
(* reaches the leader's isrFloor: the leader's durable start offset when  *)
(* its leadership began, raised to every low watermark it acknowledged.   *)
(* That keeps an acknowledged deletion on every replica that may be       *)
(* elected, including one that was down when it was acknowledged.        *)
(*                                                                         *)
(* Invariants: NoNewDataDeleted (hazard 1), NeverServeBelowLogStart       *)
(* (hazards 8 and 12: on every replica that can serve, the leader and the *)
(* in-sync replicas it may be replaced by, nothing below an acknowledged  *)
(* start offset, after any crash) and CommittedDataOnIsr (an HW that      *)
(* ignores the ISR). Properties: DurableStartMonotone (no durable start   *)
(* offset goes backwards), and under weak fairness of the protocol's      *)
(* steps (LiveSpec; the faults are not fair): DeleteRecordsCompletes and  *)
(* FollowerStartCatchesUp.                                                 *)
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
                    \*                                 not when it is raised, and a DeleteRecords
                    \*                                 is acknowledged on the in-memory low
                    \*                                 watermark (Kafka as shipped, hazard 12)
                    \*   "AckBeforeDurable"            a DeleteRecords is acknowledged on the
                    \*                                 in-memory low watermark, before the new
                    \*                                 start offset is durable on the followers
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
    acked,          \* ghost: the highest low watermark a DeleteRecords response reported
    resp,           \* replica -> the fetch response in flight to it: {} (none), or one record
                    \*   [leo, hw, start] of the leader's values when it served the fetch
    down,           \* the replicas whose broker is down (never the leader)
    pending,        \* the offset of the DeleteRecords waiting in the leader's purgatory, 0 when
                    \*   none (a request for offset 0 deletes nothing and is not modelled)
    isrFloor        \* the leader's floor for ISR expansion: its durable start offset when its
                    \*   leadership began (or it restarted), raised to each low watermark it
                    \*   acknowledged

vars == <<leo, hw, logStart, segStart, ckptStart, flushed, isr, leader, epochStart, committed,
          acked, resp, down, pending, isrFloor>>

Offsets == 0..MaxOffset
Responses == [leo : Offsets, hw : Offsets, start : Offsets]
Min(S) == CHOOSE x \in S : \A y \in S : x <= y
Max(a, b) == IF a >= b THEN a ELSE b

\* The replicas the low watermark counts: the leader and every replica that is up.
Counted == Replicas \ down

\* Kafka's low watermark: the least log start offset over the counted replicas.
LowWatermark == Min({logStart[r] : r \in Counted})

\* The start offset a replica restarts with: durable in its checkpoint, or because the segments
\* below it are deleted.
DurableStart(r) == Max(ckptStart[r], segStart[r])

\* The low watermark a DeleteRecords is acknowledged with: the least durable start offset over
\* the counted replicas (the bugs: Kafka's, in memory).
AckLowWatermark ==
    IF Bug = "AckBeforeDurable" \/ Bug = "StartOffsetCheckpointLazy" THEN LowWatermark
    ELSE Min({DurableStart(r) : r \in Counted})

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
    /\ down \subseteq Replicas /\ leader \notin down /\ isr \cap down = {}
    /\ pending \in Offsets
    /\ isrFloor \in Offsets

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
    /\ down = {}
    /\ pending = 0
    /\ isrFloor = 0

\* A producer appends one record to the leader.
Append ==
    /\ leo[leader] < MaxOffset
    /\ leo' = [leo EXCEPT ![leader] = @ + 1]
    /\ UNCHANGED <<hw, logStart, segStart, ckptStart, flushed, isr, leader, epochStart,
                   committed, acked, resp, down, pending, isrFloor>>

\* The leader serves follower r's fetch (one in flight per follower): the response carries its
\* LEO, HW and start offset as they are now. It is applied later (ApplyFetch), or lost
\* (DropResponse).
ServeFetch(r) ==
    /\ r # leader /\ r \notin down /\ resp[r] = {}
    /\ resp' = [resp EXCEPT ![r] = {[leo |-> leo[leader], hw |-> hw[leader],
                                      start |-> logStart[leader]]}]
    /\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, flushed, isr, leader, epochStart,
                   committed, acked, down, pending, isrFloor>>

\* Follower r applies the response m in flight to it, whatever the leader did since it was
\* served. Below m's start offset (OFFSET_OUT_OF_RANGE), it deletes its whole
\* log and restarts it at that offset, with its HW there too (the bug leaves the HW behind):
\* its segments are gone, so the new start offset is durable. Otherwise it appends the records
\* from its LEO up to some o, at most m's LEO (a fetch may stop short of it; it never truncates: a
\* response below its LEO is not applied), sets its HW to m's clamped to its log, [logStart, o]
\* (so it may go DOWN, after a leader change: Kafka's rule, spec/README.md), and only then raises
\* its start offset to m's, bounded by that HW: in memory, checkpointed by CheckpointStartOffset.
ApplyFetch(r) ==
    /\ r # leader /\ r \notin down
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
                /\ UNCHANGED <<segStart, ckptStart, flushed>>
    /\ UNCHANGED <<isr, leader, epochStart, committed, acked, down, pending, isrFloor>>

\* The whole response applied (every record served): what fairness asks of a fetch.
ApplyWholeFetch(r) ==
    /\ ApplyFetch(r)
    /\ \E m \in resp[r] : leo'[r] = IF leo[r] < m.start THEN m.start ELSE m.leo

\* The response in flight to r is lost, or dropped by r: its fetch state changed meanwhile (a
\* new leader epoch, a truncation), or the response is below its LEO (its log diverges).
DropResponse(r) ==
    /\ resp[r] # {}
    /\ resp' = [resp EXCEPT ![r] = {}]
    /\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, flushed, isr, leader, epochStart,
                   committed, acked, down, pending, isrFloor>>

\* Follower r truncates its log to o, where it diverges from the leader's (the leader epoch
\* protocol: OffsetsForLeaderEpoch, or a fetch response naming a diverging epoch). The records up
\* to its HW, and an in-sync replica's committed ones, are the leader's, so o is at least those;
\* and at most the leader's LEO.
TruncateFollower(r) ==
    \E o \in Offsets :
        /\ r # leader /\ r \notin down
        /\ hw[r] <= o /\ o < leo[r] /\ o <= leo[leader]
        /\ r \in isr => o >= committed
        /\ leo' = [leo EXCEPT ![r] = o]
        /\ flushed' = [flushed EXCEPT ![r] = Min({@, o})]
        /\ UNCHANGED <<hw, logStart, segStart, ckptStart, isr, leader, epochStart, committed,
                       acked, resp, down, pending, isrFloor>>

\* The leader raises its HW to h, at most the least LEO in the ISR: what it knows of the
\* followers' LEOs lags, so any value up to that least LEO may be the one it reaches. The
\* leader's HW never goes down while it leads (only a restart reloads it lower).
AdvanceHW(h) ==
    /\ hw[leader] < h /\ h <= HWLimit
    /\ hw' = [hw EXCEPT ![leader] = h]
    /\ committed' = Max(committed, h)
    /\ UNCHANGED <<leo, logStart, segStart, ckptStart, flushed, isr, leader, epochStart, acked,
                   resp, down, pending, isrFloor>>

\* The leader (lag) or the controller (a failure) drops follower r from the ISR.
ShrinkIsr(r) ==
    /\ r \in isr /\ r # leader
    /\ isr' = isr \ {r}
    /\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, flushed, leader, epochStart,
                   committed, acked, resp, down, pending, isrFloor>>

\* The leader adds back a follower that is up and has caught up to its HW, to its epoch's start
\* offset, and (beyond Kafka) with its durable start offset to the leader's isrFloor.
ExpandIsr(r) ==
    /\ r \notin isr /\ r \notin down
    /\ leo[r] >= hw[leader] /\ leo[r] >= epochStart
    /\ DurableStart(r) >= isrFloor
    /\ isr' = isr \cup {r}
    /\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, flushed, leader, epochStart,
                   committed, acked, resp, down, pending, isrFloor>>

\* The controller makes another in-sync replica leader; its epoch starts at its LEO. It stops
\* fetching: a response in flight to it is dropped. A DeleteRecords waiting in the old leader's
\* purgatory ends with NOT_LEADER_OR_FOLLOWER. Its isrFloor starts at its durable start offset.
ElectLeader(r) ==
    /\ r \in isr /\ r # leader
    /\ leader' = r
    /\ epochStart' = leo[r]
    /\ resp' = [resp EXCEPT ![r] = {}]
    /\ pending' = 0
    /\ isrFloor' = DurableStart(r)
    /\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, flushed, isr, committed, acked,
                   down>>

\* DeleteRecords(o) accepted by the leader (one request at a time): o is above its start offset
\* and at most its HW (else OFFSET_OUT_OF_RANGE, no step); its start offset rises to o, and the
\* request waits in the purgatory.
DeleteRecords(o) ==
    /\ pending = 0
    /\ logStart[leader] < o /\ o <= hw[leader]
    /\ logStart' = [logStart EXCEPT ![leader] = o]
    /\ ckptStart' = CkptAfterRaise(leader, o)
    /\ pending' = o
    /\ UNCHANGED <<leo, hw, segStart, flushed, isr, leader, epochStart, committed, acked,
                   resp, down, isrFloor>>

\* The waiting DeleteRecords is acknowledged, with the low watermark, once that reaches its
\* offset; the leader's isrFloor rises to it.
AcknowledgeDeleteRecords ==
    /\ pending # 0 /\ AckLowWatermark >= pending
    /\ acked' = Max(acked, AckLowWatermark)
    /\ isrFloor' = Max(isrFloor, AckLowWatermark)
    /\ pending' = 0
    /\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, flushed, isr, leader, epochStart,
                   committed, resp, down>>

\* The waiting DeleteRecords times out (REQUEST_TIMED_OUT): nothing is acknowledged.
ExpireDeleteRecords ==
    /\ pending # 0
    /\ pending' = 0
    /\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, flushed, isr, leader, epochStart,
                   committed, acked, resp, down, isrFloor>>

\* Retention on replica r deletes its first segment, which must be full (not the active one) and
\* lie wholly below the HW (the bug: below the LEO). Whatever the reason (time, size, or a start
\* offset already beyond it), the start offset then rises to the next segment's base if below it.
DeleteOldestSegment(r) ==
    LET next == segStart[r] + SegmentSize
        limit == IF Bug = "RetentionIgnoresHW" THEN leo[r] ELSE hw[r]
        newStart == Max(logStart[r], next)
    IN
    /\ r \notin down
    /\ next <= limit
    /\ segStart' = [segStart EXCEPT ![r] = next]
    /\ logStart' = [logStart EXCEPT ![r] = newStart]
    /\ ckptStart' = IF newStart = logStart[r] THEN ckptStart ELSE CkptAfterRaise(r, newStart)
    /\ UNCHANGED <<leo, hw, flushed, isr, leader, epochStart, committed, acked, resp, down,
                   pending, isrFloor>>

\* Replica r writes its start offset to its checkpoint (a follower's raise, or the periodic
\* checkpoint of the lazy bug).
CheckpointStartOffset(r) ==
    /\ r \notin down
    /\ ckptStart[r] # logStart[r]
    /\ ckptStart' = [ckptStart EXCEPT ![r] = logStart[r]]
    /\ UNCHANGED <<leo, hw, logStart, segStart, flushed, isr, leader, epochStart, committed,
                   acked, resp, down, pending, isrFloor>>

\* Replica r's records below f reach the disk (a flush, or a segment roll flushing the old one).
Flush(r) ==
    \E f \in Offsets :
        /\ r \notin down
        /\ flushed[r] < f /\ f <= leo[r]
        /\ flushed' = [flushed EXCEPT ![r] = f]
        /\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, isr, leader, epochStart,
                       committed, acked, resp, down, pending, isrFloor>>

\* Replica r's durable state after a crash: its records up to some e at least its flushed offset
\* (an in-sync replica keeps every committed one: the fault model), its segments, the start
\* offset max(checkpoint, first segment's base), and an HW from a checkpoint of some earlier
\* moment (at least the start offset, which is how it is loaded, and at most the LEO that
\* remains). A log that lost everything above its start offset restarts empty there.
Recover(r) ==
    LET start == DurableStart(r) IN
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

\* Replica r crashes and restarts at once with its durable state, in the role it had: a leader
\* restarts as leader, in a new epoch starting at its LEO, its purgatory lost (a waiting
\* DeleteRecords ends unacknowledged) and its isrFloor back at its durable start offset. A
\* response in flight to r is lost.
CrashRestart(r) ==
    /\ r \notin down
    /\ Recover(r)
    /\ resp' = [resp EXCEPT ![r] = {}]
    /\ pending' = IF r = leader THEN 0 ELSE pending
    /\ isrFloor' = IF r = leader THEN DurableStart(r) ELSE isrFloor
    /\ UNCHANGED <<ckptStart, isr, leader, committed, acked, down>>

\* Follower r's broker goes down (and stays down): the controller drops it from the ISR, and the
\* low watermark no longer counts it. A response in flight to it is lost.
GoDown(r) ==
    /\ r # leader /\ r \notin down
    /\ down' = down \cup {r}
    /\ isr' = isr \ {r}
    /\ resp' = [resp EXCEPT ![r] = {}]
    /\ UNCHANGED <<leo, hw, logStart, segStart, ckptStart, flushed, leader, epochStart,
                   committed, acked, pending, isrFloor>>

\* Replica r's broker comes back with its durable state, outside the ISR; the low watermark
\* counts it again.
Restart(r) ==
    /\ r \in down
    /\ Recover(r)
    /\ down' = down \ {r}
    /\ UNCHANGED <<ckptStart, isr, leader, committed, acked, resp, pending, isrFloor>>

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
    \/ ExpireDeleteRecords
    \/ \E r \in Replicas : DeleteOldestSegment(r)
    \/ \E r \in Replicas : CheckpointStartOffset(r)
    \/ \E r \in Replicas : Flush(r)
    \/ \E r \in Replicas : CrashRestart(r)
    \/ \E r \in Replicas : GoDown(r)
    \/ \E r \in Replicas : Restart(r)

Spec == Init /\ [][Next]_vars

\* The response in flight to r cannot be applied: below its LEO (its log diverges, or the response
\* was served before something it already has). Follower r drops it.
Stale(r) == \A m \in resp[r] : m.start <= leo[r] /\ m.leo < leo[r]

\* The protocol's steps, weakly fair (Fairness): a follower that is up fetches, applies a whole
\* response or drops a stale one, truncates where it diverges and checkpoints a raised start
\* offset; the leader advances its HW and acknowledges a DeleteRecords whose low watermark is
\* reached.
ProtocolStep(r) ==
    \/ ServeFetch(r) \/ ApplyWholeFetch(r) \/ (DropResponse(r) /\ Stale(r))
    \/ TruncateFollower(r) \/ CheckpointStartOffset(r)

Fairness ==
    /\ \A r \in Replicas : /\ WF_vars(ServeFetch(r)) /\ WF_vars(ApplyWholeFetch(r))
                           /\ WF_vars(DropResponse(r) /\ Stale(r))
                           /\ WF_vars(TruncateFollower(r)) /\ WF_vars(CheckpointStartOffset(r))
    /\ WF_vars(\E h \in Offsets : AdvanceHW(h))
    /\ WF_vars(AcknowledgeDeleteRecords)

\* The faults: crashes, a broker going down or coming back, an election, an ISR shrink, a
\* response lost. They are not fair, and the properties below hold of a behaviour where they
\* stop. A step that is also a protocol step (a crash that changes nothing a fetch would not,
\* say) is not a fault.
Fault ==
    /\ \E r \in Replicas : \/ CrashRestart(r) \/ GoDown(r) \/ Restart(r) \/ ElectLeader(r)
                           \/ ShrinkIsr(r) \/ DropResponse(r)
    /\ ~\E r \in Replicas : ProtocolStep(r)
    /\ ~\E h \in Offsets : AdvanceHW(h)
    /\ ~AcknowledgeDeleteRecords

LiveSpec == Spec /\ Fairness

-----------------------------------------------------------------------------
\* Nothing at or above the partition's HW is deleted, logically (start offset) or physically
\* (segments), on any replica.
NoNewDataDeleted ==
    \A r \in Replicas : segStart[r] <= committed /\ logStart[r] <= committed

\* Every replica serves only offsets in [logStart, HW) to consumers and [logStart, LEO) to
\* followers: 0 <= logStart <= HW <= LEO; and no replica that can serve (the leader, or an
\* in-sync replica, which may be elected) has a start offset below one acknowledged, whatever
\* crashed since (an acknowledged deletion stays deleted).
NeverServeBelowLogStart ==
    /\ \A r \in Replicas : 0 <= logStart[r] /\ logStart[r] <= hw[r] /\ hw[r] <= leo[r]
    /\ \A r \in isr : acked <= logStart[r]

\* Every in-sync replica holds every committed offset: its log reaches the partition's HW (and,
\* by NoNewDataDeleted, starts at or below it). The ISR is whom the controller may elect, so this
\* is what makes an acknowledged record survive the loss of its leader.
CommittedDataOnIsr ==
    \A r \in isr : leo[r] >= committed

\* No replica's durable start offset goes backwards (an action property).
DurableStartMonotone ==
    [][\A r \in Replicas : DurableStart(r)' >= DurableStart(r)]_vars

\* A DeleteRecords completes (acknowledged, timed out or ended by a leader change), never waits
\* forever, once the faults stop (a follower may stay down: it is not counted).
DeleteRecordsCompletes ==
    []<><<Fault>>_vars \/ [](pending # 0 => <>(pending = 0))

\* Once the faults stop, every follower that is up reaches the leader's start offset for good.
FollowerStartCatchesUp ==
    []<><<Fault>>_vars \/ \A r \in Replicas :
        <>[](r \in down \/ r = leader \/ logStart[r] >= logStart[leader])
=============================================================================
