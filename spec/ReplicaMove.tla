----------------------------- MODULE ReplicaMove -----------------------------
(***************************************************************************)
(* A JBOD move of one partition from log dir D1 to log dir D2 (KIP-113,    *)
(* kafka-compatibility.md "Moving replicas between log dirs (KIP-113)"), crash-consistent without an operator.        *)
(*                                                                         *)
(* Two logs: "src", the partition's log in D1, and "fut", its future log   *)
(* in D2. Each log has records written (vol: in the page cache) and        *)
(* records fsynced (dur), and a dir name as the running broker sees it     *)
(* (name) and as a crash would leave it (durName: the name at the last     *)
(* fsync of its parent dir). A crash keeps dur and durName only. Records   *)
(* have identity: every append writes a new record, a copy copies the      *)
(* source's; the ghost agree counts the leading records both logs share.   *)
(*                                                                         *)
(* THE SWAP AND RECOVERY PROTOCOL (the implementation follows it step for  *)
(* step):                                                                  *)
(*  G. Generations. Every partition dir records, in its partition.metadata *)
(*     written when the dir is created, a log generation; a future log is  *)
(*     created with its source's generation + 1. Here fut > src.           *)
(*  C. Copy. The copier appends to the future log, at the future log's own *)
(*     end offset, records the source has already fsynced (dur), never     *)
(*     unflushed ones: a crash can then never leave the future log with a  *)
(*     record the source lost.                                             *)
(*  S1 BeginSwap: once the future log has every fsynced source record,     *)
(*     take the partition's append lock: appends wait from here to S6.     *)
(*     Then fsync the source and copy the rest (Flush, Copy), until the    *)
(*     future log holds exactly the source's records.                      *)
(*  S2 Flush(fut): fsync the future log's segments.                        *)
(*  S3 RenameFutureLive: rename <tp>.<id>-future to <tp> in D2 (only with  *)
(*     the future log caught up and fsynced).                              *)
(*  S4 FsyncDir(fut): fsync D2. THE COMMIT POINT: from here a crash        *)
(*     recovers to the future log.                                         *)
(*  S5 RenameSourceDelete: rename the source to <tp>.<id>-delete in D1     *)
(*     (only after S4 is durable), then FsyncDir(src): fsync D1.           *)
(*  S6 EndSwap: appends go to the new log; release the lock.               *)
(*  S7 DeleteSource: the -delete dir is removed later (file.delete.delay). *)
(* Recover, from the dir names on disk alone (deterministic):              *)
(*  R1 the authoritative log is the live-named dir of the highest          *)
(*     generation: with two live dirs (a crash between S4 and S5's fsync)  *)
(*     the future log, which S2/S3 made a complete fsynced copy;           *)
(*  R2 a live dir of a lower generation is renamed -delete (and D1         *)
(*     fsynced): recovery finishes S5;                                     *)
(*  R3 a -future dir beside a live dir of lower generation is a move in    *)
(*     progress: the copier resumes from the future log's own end offset;  *)
(*  R4 -delete dirs are deleted later;                                     *)
(*  R5 no live dir at all: not resolvable without an operator. A lone      *)
(*     -future dir is never promoted: it may be an unfinished copy (its    *)
(*     source on a failed dir). The protocol never durably leaves this     *)
(*     state, which AtomicMoveSwap checks at every instant.                *)
(*  R6 Start-up sees only the dirs that are online, and R2's renames are   *)
(*     durable before the recovered log is served. When a dir is offline,  *)
(*     the log served is re-stamped with a generation above any copy of it *)
(*     the offline dir can hold (its own + 2, fsynced) before it takes an  *)
(*     append: a stale copy there, even one that had durably gone live,    *)
(*     loses to it when the dir comes back, and a -future dir there is     *)
(*     dropped (R3 resumes only a future above the live log) and the move  *)
(*     starts again.                                                       *)
(* Dir failure: an I/O error takes a dir offline until a restart finds it  *)
(* back. A move with a log on it stops (a swap is abandoned; once the      *)
(* future may have been renamed live, the partition goes offline on this   *)
(* broker rather than acknowledge on the source); a partition whose log is *)
(* on it goes offline on this broker; the other dir goes on serving.       *)
(***************************************************************************)
EXTENDS Integers

CONSTANTS
    MaxRecords,          \* appends stop once the log appends go to holds this many records
    FailDirs,            \* the logs whose dirs may fail (at any time, repeatedly): a subset
                         \* of Logs. One dir: the protocol's guarantee. Both: two failures,
                         \* one after the other, can lose records (spec/README.md)
    Bug                  \* "none", or the name of the injected bug:
                         \*   "SwapBeforeFlush"          S3 renames before the future log is fsynced
                         \*   "AppendDuringSwap"         appends are not blocked during the swap
                         \*   "SeedRenameOrder"          the seed's order: S5 (source -> -delete,
                         \*                              fsynced) comes before S3 (future -> live),
                         \*                              the copy not fsynced first, and start-up
                         \*                              promotes a lone future dir to live
                         \*   "SwapBeforeCopyDone"       S3 renames the future log live before it
                         \*                              holds every source record
                         \*   "CopierResumesFromHW"      a restarted copier resumes from the
                         \*                              current log's HW, not from the future
                         \*                              log's own end (KAFKA-9087)
                         \*   "NoRestampOnOfflineDir"    R6 is skipped: a log served while a
                         \*                              dir is offline keeps its generation

Logs == {"src", "fut"}
Names == {"live", "future", "delete", "none"}
Records == 0..MaxRecords

VARIABLES
    up,            \* whether the broker is running (FALSE: crashed, not yet recovered)
    current,       \* the log appends go to ("src", "fut"; "none" while down)
    locked,        \* whether the swap holds the partition's append lock
    vol,           \* log -> records written (page cache), lost beyond dur by a crash
    dur,           \* log -> records fsynced
    name,          \* log -> its dir name as the running broker sees it
    durName,       \* log -> its dir name on disk after a crash (at its dir's last fsync)
    acked,         \* the HW: records acknowledged to producers (fsynced in the log appends go to)
    lateAppend,    \* ghost: an append landed in a log that was no longer authoritative
    agree,         \* ghost: how many leading records the two logs hold in common, by identity
                   \* (every append writes a new record; a copy copies the source's record)
    skew,          \* the copier reads source offset vol["fut"] + skew (0: its own end, R3)
    misplaced,     \* ghost: the future log holds a record at an offset the source never had it at
    start,         \* log -> its log start offset (checkpointed with each raise: durable)
    offline,       \* log -> whether the dir holding it has failed (until a restart finds it back)
    newer,         \* the log of the higher generation (G; R6 re-stamps the log it serves)
    starting       \* start-up has renamed what R2/R3 rename; the log is not served yet

vars == <<up, current, locked, vol, dur, name, durName, acked, lateAppend, agree, skew,
          misplaced, start, offline, newer, starting>>

TypeOK ==
    /\ up \in BOOLEAN
    /\ current \in Logs \cup {"none"}
    /\ locked \in BOOLEAN
    /\ vol \in [Logs -> Records]
    /\ dur \in [Logs -> Records]
    /\ \A l \in Logs : dur[l] <= vol[l]
    /\ name \in [Logs -> Names]
    /\ durName \in [Logs -> Names]
    /\ acked \in Records
    /\ lateAppend \in BOOLEAN
    /\ agree \in Records
    /\ skew \in -MaxRecords..MaxRecords
    /\ misplaced \in BOOLEAN
    /\ start \in [Logs -> Records]
    /\ offline \in [Logs -> BOOLEAN]
    /\ newer \in Logs
    /\ starting \in BOOLEAN

Min(a, b) == IF a < b THEN a ELSE b

Other(l) == IF l = "src" THEN "fut" ELSE "src"

(* The logs whose dirs are online. *)
Online == {l \in Logs : ~offline[l]}

(* R1 over the dirs `on`: the log recovery picks from dir names `n`: the live one of the       *)
(* highest generation. The seed's start-up rule (bug SeedRenameOrder) also promotes a lone     *)
(* future dir.                                                                                 *)
AuthIn(n, on) ==
    IF newer \in on /\ n[newer] = "live" THEN newer
    ELSE IF Other(newer) \in on /\ n[Other(newer)] = "live" THEN Other(newer)
    ELSE IF Bug = "SeedRenameOrder" /\ "fut" \in on /\ n["fut"] = "future" THEN "fut"
    ELSE "none"

(* R1 with every dir back: what the names on disk resolve to. *)
Authoritative(n) == AuthIn(n, Logs)

Init ==
    /\ up = TRUE
    /\ current = "src"
    /\ locked = FALSE
    /\ vol = [l \in Logs |-> 0]
    /\ dur = [l \in Logs |-> 0]
    /\ name = [l \in Logs |-> IF l = "src" THEN "live" ELSE "future"]
    /\ durName = name
    /\ acked = 0
    /\ lateAppend = FALSE
    /\ agree = 0
    /\ skew = 0
    /\ misplaced = FALSE
    /\ start = [l \in Logs |-> 0]
    /\ offline = [l \in Logs |-> FALSE]
    /\ newer = "fut"
    /\ starting = FALSE

(* A producer's append to the log appends go to; it waits while the swap holds the lock. *)
Append ==
    /\ up /\ current \in Logs
    /\ locked => Bug = "AppendDuringSwap"
    /\ vol[current] < MaxRecords
    /\ vol' = [vol EXCEPT ![current] = @ + 1]
    /\ lateAppend' = (lateAppend \/ current # Authoritative(durName))
    /\ UNCHANGED <<up, current, locked, dur, name, durName, acked, agree, skew, misplaced, start,
                   offline, newer, starting>>

(* C: the copier appends the source's fsynced record at offset vol["fut"] + skew (its own end    *)
(* offset: skew = 0) at the future log's end; a record copied from another offset is misplaced. *)
(* It runs while the source is served and both dirs are online.                                 *)
Copy ==
    /\ up /\ current = "src" /\ ~offline["fut"]
    /\ name["fut"] = "future"
    /\ vol["fut"] < MaxRecords
    /\ vol["fut"] + skew \in 0..(dur["src"] - 1)
    /\ vol' = [vol EXCEPT !["fut"] = @ + 1]
    /\ agree' = IF skew = 0 /\ agree = vol["fut"] THEN agree + 1 ELSE agree
    /\ misplaced' = (misplaced \/ skew # 0)
    /\ UNCHANGED <<up, current, locked, dur, name, durName, acked, lateAppend, skew, start,
                   offline, newer, starting>>

(* fsync of log l's segments, one after another: each makes a longer prefix of its records     *)
(* durable (a crash between two leaves a prefix). One step makes any longer prefix durable.     *)
Flush(l) ==
    /\ up /\ ~offline[l]
    /\ \E k \in (dur[l] + 1)..vol[l] : dur' = [dur EXCEPT ![l] = k]
    /\ UNCHANGED <<up, current, locked, vol, name, durName, acked, lateAppend, agree, skew,
                   misplaced, start, offline, newer, starting>>

(* The HW advances to the fsynced end of the log appends go to: those records are acknowledged. *)
AdvanceHW ==
    /\ up /\ current \in Logs
    /\ acked < dur[current]
    /\ acked' = dur[current]
    /\ UNCHANGED <<up, current, locked, vol, dur, name, durName, lateAppend, agree, skew,
                   misplaced, start, offline, newer, starting>>

(* fsync of the dir holding log l: its name survives a crash. *)
FsyncDir(l) ==
    /\ up /\ ~offline[l]
    /\ durName[l] # name[l]
    /\ durName' = [durName EXCEPT ![l] = name[l]]
    /\ UNCHANGED <<up, current, locked, vol, dur, name, acked, lateAppend, agree, skew, misplaced,
                   start, offline, newer, starting>>

(* S1: the future log, of the higher generation and on an online dir, has every fsynced source *)
(* record; take the append lock.                                                                 *)
BeginSwap ==
    /\ up /\ ~locked
    /\ current = "src" /\ name["fut"] = "future" /\ ~offline["fut"] /\ newer = "fut"
    /\ vol["fut"] = dur["src"]
    /\ locked' = TRUE
    /\ UNCHANGED <<up, current, vol, dur, name, durName, acked, lateAppend, agree, skew, misplaced,
                   start, offline, newer, starting>>

(* S3: the future dir takes the live name, once it is a complete, fsynced copy (S2). *)
RenameFutureLive ==
    /\ up /\ locked
    /\ name["fut"] = "future"
    /\ Bug # "SwapBeforeCopyDone" => vol["fut"] = vol["src"]
    /\ Bug # "SwapBeforeFlush" /\ Bug # "SeedRenameOrder" => dur["fut"] = vol["fut"]
    /\ start["fut"] = start["src"]
    /\ Bug = "SeedRenameOrder" => durName["src"] = "delete"
    /\ name' = [name EXCEPT !["fut"] = "live"]
    /\ UNCHANGED <<up, current, locked, vol, dur, durName, acked, lateAppend, agree, skew,
                   misplaced, start, offline, newer, starting>>

(* S5: the source dir is renamed -delete, once the commit (S4) is durable. *)
RenameSourceDelete ==
    /\ up /\ locked
    /\ name["src"] = "live"
    /\ IF Bug = "SeedRenameOrder"
       THEN name["fut"] = "future" /\ vol["fut"] = vol["src"]
       ELSE durName["fut"] = "live"
    /\ name' = [name EXCEPT !["src"] = "delete"]
    /\ UNCHANGED <<up, current, locked, vol, dur, durName, acked, lateAppend, agree, skew,
                   misplaced, start, offline, newer, starting>>

(* S6: both renames durable; appends go to the new log. *)
EndSwap ==
    /\ up /\ locked
    /\ durName["fut"] = "live" /\ durName["src"] = "delete"
    /\ current' = "fut"
    /\ locked' = FALSE
    /\ UNCHANGED <<up, vol, dur, name, durName, acked, lateAppend, agree, skew, misplaced, start,
                   offline, newer, starting>>

(* S7 / R4: the -delete dir is removed (unlink and dir fsync as one step). *)
DeleteSource ==
    /\ up /\ ~locked /\ ~offline["src"]
    /\ durName["src"] = "delete"
    /\ name' = [name EXCEPT !["src"] = "none"]
    /\ durName' = [durName EXCEPT !["src"] = "none"]
    /\ vol' = [vol EXCEPT !["src"] = 0]
    /\ dur' = [dur EXCEPT !["src"] = 0]
    /\ agree' = 0
    /\ start' = [start EXCEPT !["src"] = 0]
    /\ UNCHANGED <<up, current, locked, acked, lateAppend, skew, misplaced, offline, newer,
                   starting>>

(* A crash at any step: only fsynced records and fsynced dir names survive. *)
Crash ==
    /\ up
    /\ up' = FALSE
    /\ current' = "none"
    /\ locked' = FALSE
    /\ vol' = dur
    /\ name' = durName
    /\ agree' = Min(agree, Min(dur["src"], dur["fut"]))
    /\ skew' = 0
    /\ starting' = FALSE
    /\ UNCHANGED <<dur, durName, acked, lateAppend, misplaced, start, offline, newer>>

(* R1-R3: restart, from the names on disk of the online dirs. The authoritative log (R1) takes  *)
(* the live name (a no-op but for the seed's promotion of a lone future dir); a live dir of a    *)
(* lower generation is renamed -delete (R2); a -future dir is resumed (R3) if it is above the    *)
(* live log (the copier resumes from its own end, skew 0; the bug from the current log's HW,    *)
(* here its acknowledged prefix), else renamed -delete; with no live dir, left (R5). Renames are *)
(* durable only once their dir is fsynced (FsyncDir), a separate step: a crash in between leaves *)
(* the names as they were, and recovery runs again. Offline dirs are not touched.                *)
Recover ==
    LET a == AuthIn(durName, Online)
    IN
    /\ ~up
    /\ up' = TRUE
    /\ starting' = TRUE
    /\ name' = [l \in Logs |-> IF offline[l] THEN durName[l]
                              ELSE IF l = a THEN "live"
                              ELSE IF durName[l] = "live" THEN "delete"
                              ELSE IF durName[l] = "future" /\ a # "none" /\ newer # l
                                   THEN "delete"
                              ELSE durName[l]]
    /\ skew' = IF Bug = "CopierResumesFromHW" /\ durName["fut"] = "future"
               THEN acked - dur["fut"] ELSE 0
    /\ UNCHANGED <<current, locked, vol, dur, durName, acked, lateAppend, agree, misplaced, start,
                   offline, newer>>

(* The end of start-up, once recovery's renames are durable: the recovered log is served (none: *)
(* the partition stays offline on this broker). R6: with a dir offline, the log served is       *)
(* re-stamped above any generation a copy on the offline dir can hold (the metadata file        *)
(* replaced and fsynced before any append; a crash before leaves the old stamp, not yet served). *)
Serve ==
    LET a == AuthIn(durName, Online)
    IN
    /\ up /\ starting
    /\ \A l \in Online : durName[l] = name[l]
    /\ starting' = FALSE
    /\ current' = a
    /\ newer' = IF a # "none" /\ Online # Logs /\ Bug # "NoRestampOnOfflineDir" THEN a ELSE newer
    /\ UNCHANGED <<up, locked, vol, dur, name, durName, acked, lateAppend, agree, skew, misplaced,
                   start, offline>>

(* An I/O error takes the dir holding log l offline (or start-up finds it so). A swap under way  *)
(* is abandoned: the source may go on serving only while the future dir cannot yet have its     *)
(* live name (the code also stops it when the error hit the rename itself, which may or may not *)
(* have reached the disk: either is allowed); a log on the failed dir is no longer served.       *)
FailDir(l) ==
    /\ l \in FailDirs /\ ~offline[l]
    /\ offline' = [offline EXCEPT ![l] = TRUE]
    /\ current' \in IF current = l \/ (locked /\ (name["fut"] = "live" \/ name["src"] # "live"))
                    THEN {"none"}
                    ELSE IF locked THEN {current, "none"} ELSE {current}
    /\ locked' = FALSE
    /\ UNCHANGED <<up, vol, dur, name, durName, acked, lateAppend, agree, skew, misplaced, start,
                   newer, starting>>

(* A failed dir is back (repaired, or it was a transient fault) when the broker next starts. *)
Repair(l) ==
    /\ ~up /\ offline[l]
    /\ offline' = [offline EXCEPT ![l] = FALSE]
    /\ UNCHANGED <<up, current, locked, vol, dur, name, durName, acked, lateAppend, agree, skew,
                   misplaced, start, newer, starting>>

(* A future dir renamed -delete (R3, a future below the live log) is removed and the move starts *)
(* again with a fresh, empty future log of the next generation (one step: until the new dir is   *)
(* durable, a crash leaves no future log, which is the same as an empty one).                     *)
RestartMove ==
    /\ up /\ ~locked /\ current = "src" /\ ~offline["fut"]
    /\ durName["fut"] = "delete"
    /\ name' = [name EXCEPT !["fut"] = "future"]
    /\ durName' = [durName EXCEPT !["fut"] = "future"]
    /\ vol' = [vol EXCEPT !["fut"] = 0]
    /\ dur' = [dur EXCEPT !["fut"] = 0]
    /\ start' = [start EXCEPT !["fut"] = 0]
    /\ agree' = 0
    /\ newer' = "fut"
    /\ UNCHANGED <<up, current, locked, acked, lateAppend, skew, misplaced, offline, starting>>

(* The source, a follower, truncates its last record (above the HW, so never an acknowledged    *)
(* one) after a leader change, which comes with a new leader epoch; the future log follows in    *)
(* the same step: it never keeps a record above the source's truncation point. With its dir      *)
(* offline, it follows when the copier resumes, by the leader epoch protocol against the source, *)
(* before it copies anything: nothing can tell the two apart. One record a step: repeated, any  *)
(* truncation point.                                                                             *)
TruncateSource ==
    /\ up /\ ~locked
    /\ current = "src"
    /\ vol["src"] > acked
    /\ vol' = [l \in Logs |-> IF vol[l] >= vol["src"] THEN vol["src"] - 1 ELSE vol[l]]
    /\ dur' = [l \in Logs |-> IF dur[l] >= vol["src"] THEN vol["src"] - 1 ELSE dur[l]]
    /\ agree' = Min(agree, vol["src"] - 1)
    /\ UNCHANGED <<up, current, locked, name, durName, acked, lateAppend, skew, misplaced, start,
                   offline, newer, starting>>

(* DeleteRecords (or retention) raises the source's start offset, at most to the HW; it waits,  *)
(* like appends, while the swap holds the lock.                                                  *)
RaiseStart ==
    /\ up /\ ~locked
    /\ current = "src"
    /\ start["src"] < acked
    /\ start' = [start EXCEPT !["src"] = @ + 1]
    /\ UNCHANGED <<up, current, locked, vol, dur, name, durName, acked, lateAppend, agree, skew,
                   misplaced, offline, newer, starting>>

(* The copier raises the future log's start offset to the source's. *)
FollowStart ==
    /\ up /\ current = "src" /\ ~offline["fut"]
    /\ name["fut"] = "future"
    /\ start["fut"] < start["src"]
    /\ start' = [start EXCEPT !["fut"] = start["src"]]
    /\ UNCHANGED <<up, current, locked, vol, dur, name, durName, acked, lateAppend, agree, skew,
                   misplaced, offline, newer, starting>>

Next ==
    \/ Append
    \/ Copy
    \/ \E l \in Logs : Flush(l)
    \/ \E l \in Logs : FsyncDir(l)
    \/ BeginSwap
    \/ RenameFutureLive
    \/ RenameSourceDelete
    \/ EndSwap
    \/ DeleteSource
    \/ Crash
    \/ Recover
    \/ AdvanceHW
    \/ TruncateSource
    \/ RaiseStart
    \/ FollowStart
    \/ \E l \in Logs : FailDir(l)
    \/ \E l \in Logs : Repair(l)
    \/ Serve
    \/ RestartMove

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* AtomicMoveSwap: at every instant (so at every crash point) the dir      *)
(* names on disk resolve to exactly one authoritative log (R1), which      *)
(* durably holds every acknowledged record, so recovery loses none; while  *)
(* appends still go to the source, an authoritative future log holds the   *)
(* acknowledged records themselves, by identity, not only as many; when    *)
(* appends are allowed they go to that log; no append ever landed in a log *)
(* after it stopped being authoritative; and no record was copied to an    *)
(* offset the source did not hold it at; and the authoritative log never  *)
(* starts below a start offset the source was raised to (nothing deleted  *)
(* is served again after the swap). A broker serving with every dir online *)
(* serves the partition.                                                  *)
(***************************************************************************)
AtomicMoveSwap ==
    /\ Authoritative(durName) # "none"
    /\ dur[Authoritative(durName)] >= acked
    /\ Authoritative(durName) = "fut" /\ current = "src" => agree >= acked
    /\ up /\ ~locked /\ current # "none" => current = Authoritative(durName)
    /\ up /\ ~starting /\ Online = Logs => current # "none"
    /\ ~lateAppend
    /\ ~misplaced
    /\ Authoritative(durName) = "fut" /\ durName["src"] # "none" => start["fut"] >= start["src"]

-----------------------------------------------------------------------------
(* Liveness. The protocol's steps are weakly fair: the copier copies, logs and dirs are fsynced,  *)
(* the swap's steps run, the -delete dir is removed, a crashed broker restarts. The fault, a      *)
(* crash and a follower's truncation, is not fair; producers' appends are not either (they stop  *)
(* at MaxRecords).                                                                                *)
Fairness ==
    /\ WF_vars(Copy)
    /\ \A l \in Logs : WF_vars(Flush(l)) /\ WF_vars(FsyncDir(l))
    /\ WF_vars(BeginSwap)
    /\ WF_vars(RenameFutureLive)
    /\ WF_vars(RenameSourceDelete)
    /\ WF_vars(EndSwap)
    /\ WF_vars(DeleteSource)
    /\ WF_vars(Recover)
    /\ WF_vars(AdvanceHW)
    /\ WF_vars(FollowStart)
    /\ WF_vars(Serve)
    /\ WF_vars(RestartMove)

Fault == Crash \/ TruncateSource \/ \E l \in Logs : FailDir(l) \/ Repair(l)

LiveSpec == Spec /\ Fairness

(* MoveCompletes: once the faults stop with every dir online, the move ends for good: appends go *)
(* to the future log, its live name is durable and the source dir is gone.                       *)
MoveCompletes ==
    []<><<Fault>>_vars \/ <>[](Online # Logs) \/
        <>[](current = "fut" /\ durName["fut"] = "live" /\ durName["src"] = "none")

=============================================================================
