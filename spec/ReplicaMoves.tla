---------------------------- MODULE ReplicaMoves ----------------------------
(***************************************************************************)
(* Two partitions, p1 and p2, moving at once from log dir D1 to log dir D2 *)
(* of one broker: two instances of ReplicaMove sharing what a broker's     *)
(* partitions share. Each keeps its own logs, names, lock, HW and ghosts;  *)
(* the broker's life (up, starting: one crash and one start-up for both)   *)
(* and the dirs (offline: a dir fails under both) are shared, and so is a  *)
(* dir's fsync: FsyncDir(l) makes every rename in that dir durable, both   *)
(* partitions' at once. The copier is one thread that moves the partitions *)
(* one at a time in alphabetical order: p2's copy waits until p1's future  *)
(* log is live on disk (or p1's move has nothing left to copy).            *)
(*                                                                         *)
(* Each partition's actions are ReplicaMove's, the other partition's       *)
(* variables unchanged; the shared ones (Crash, Recover, Serve, FailDir,   *)
(* Repair) are both instances' actions at once; FsyncDir is written here,  *)
(* since one fsync serves the renames of both. AtomicMoveSwap must hold    *)
(* for each partition.                                                     *)
(***************************************************************************)
EXTENDS Integers

CONSTANTS MaxRecords, FailDirs, Bug

Logs == {"src", "fut"}

VARIABLES
    up, offline, starting,                      \* shared: the broker and its dirs
    current1, locked1, vol1, dur1, name1, durName1, acked1, lateAppend1, agree1, skew1,
    misplaced1, start1, newer1,                 \* p1
    current2, locked2, vol2, dur2, name2, durName2, acked2, lateAppend2, agree2, skew2,
    misplaced2, start2, newer2                  \* p2

p1 == <<current1, locked1, vol1, dur1, name1, durName1, acked1, lateAppend1, agree1, skew1,
        misplaced1, start1, newer1>>
p2 == <<current2, locked2, vol2, dur2, name2, durName2, acked2, lateAppend2, agree2, skew2,
        misplaced2, start2, newer2>>
vars == <<up, offline, starting, p1, p2>>

P1 == INSTANCE ReplicaMove WITH
        current <- current1, locked <- locked1, vol <- vol1, dur <- dur1, name <- name1,
        durName <- durName1, acked <- acked1, lateAppend <- lateAppend1, agree <- agree1,
        skew <- skew1, misplaced <- misplaced1, start <- start1, newer <- newer1
P2 == INSTANCE ReplicaMove WITH
        current <- current2, locked <- locked2, vol <- vol2, dur <- dur2, name <- name2,
        durName <- durName2, acked <- acked2, lateAppend <- lateAppend2, agree <- agree2,
        skew <- skew2, misplaced <- misplaced2, start <- start2, newer <- newer2

Init == P1!Init /\ P2!Init

(* p1's copy is done once its future log's live name is durable, or it has nothing to copy. *)
P1CopyDone == ~(durName1["fut"] # "live" /\ durName1["src"] = "live")

(* One partition's own step, the other's variables unchanged. *)
Own1 ==
    /\ \/ P1!Append \/ P1!Copy \/ (\E l \in Logs : P1!Flush(l)) \/ P1!BeginSwap
       \/ P1!RenameFutureLive \/ P1!RenameSourceDelete \/ P1!EndSwap \/ P1!DeleteSource
       \/ P1!AdvanceHW \/ P1!TruncateSource \/ P1!RaiseStart \/ P1!FollowStart
       \/ P1!RestartMove
    /\ UNCHANGED p2
Own2 ==
    /\ \/ P2!Append \/ (P2!Copy /\ P1CopyDone) \/ (\E l \in Logs : P2!Flush(l))
       \/ P2!BeginSwap
       \/ P2!RenameFutureLive \/ P2!RenameSourceDelete \/ P2!EndSwap \/ P2!DeleteSource
       \/ P2!AdvanceHW \/ P2!TruncateSource \/ P2!RaiseStart \/ P2!FollowStart
       \/ P2!RestartMove
    /\ UNCHANGED p1

(* One fsync of the dir holding log l: both partitions' names there become durable. *)
FsyncDir(l) ==
    /\ up /\ ~offline[l]
    /\ ~(durName1[l] = name1[l] /\ durName2[l] = name2[l])
    /\ durName1' = [durName1 EXCEPT ![l] = name1[l]]
    /\ durName2' = [durName2 EXCEPT ![l] = name2[l]]
    /\ UNCHANGED <<up, offline, starting, current1, locked1, vol1, dur1, name1, acked1,
                   lateAppend1, agree1, skew1, misplaced1, start1, newer1, current2, locked2,
                   vol2, dur2, name2, acked2, lateAppend2, agree2, skew2, misplaced2, start2,
                   newer2>>

(* The broker's life and its dirs: both partitions at once. *)
Shared ==
    \/ P1!Crash /\ P2!Crash
    \/ P1!Recover /\ P2!Recover
    \/ P1!Serve /\ P2!Serve
    \/ \E l \in Logs : P1!FailDir(l) /\ P2!FailDir(l)
    \/ \E l \in Logs : P1!Repair(l) /\ P2!Repair(l)

Next == Own1 \/ Own2 \/ (\E l \in Logs : FsyncDir(l)) \/ Shared

Spec == Init /\ [][Next]_vars

TypeOK == P1!TypeOK /\ P2!TypeOK

AtomicMoveSwap == P1!AtomicMoveSwap /\ P2!AtomicMoveSwap

=============================================================================
