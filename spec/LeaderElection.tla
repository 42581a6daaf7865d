--------------------------- MODULE LeaderElection ---------------------------
(***************************************************************************)
(* Leader election with eligible leader replicas (KIP-966, as logwright    *)
(* implements it: docs/cluster.md, "Eligible leader replicas and           *)
(* unclean-shutdown detection"), unclean-shutdown detection per replica,   *)
(* strict min.insync.replicas and logwright's recovery election.           *)
(*                                                                         *)
(* One partition with a replica on each broker of Replicas. The controller *)
(* keeps the leader, the ISR, the ELR, the leader epoch, the log ends the  *)
(* replicas reported while the partition had no eligible replica, the      *)
(* lineage of the latest leader epoch (the epochs of the records below its *)
(* start, as its leader reported them), and which brokers it considers     *)
(* alive. Each replica has a log (a sequence of *)
(* record epochs: a record carries the leader epoch it was written in, its *)
(* offset is its index), a flushed prefix, and a process that is up, down  *)
(* after a clean shutdown (the whole log kept) or down after a power loss  *)
(* (the unflushed tail lost). A failed log dir loses the replica's whole   *)
(* log; the broker tells the controller at once. The leader keeps the HW.  *)
(*                                                                         *)
(* Ghosts: acked (the records acknowledged to acks=all producers, each     *)
(* with the ISR that acknowledged it) and lossReported (an unclean         *)
(* election happened: the controller knowingly gave up records).           *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS
    Replicas,        \* broker ids, one replica each, in assignment order, e.g. {1, 2, 3}
    MinIsr,          \* min.insync.replicas
    MaxRecords,      \* a replica's log holds at most this many records
    MaxEpoch,        \* the CONSTRAINT EpochBound: a state above it is checked, not expanded
    UncleanEnabled,  \* unclean.leader.election.enable
    Bug              \* "none", or the name of the injected bug:
                     \*   "DamagedReplicaKeptInIsr"  a replica registering after an unclean
                     \*                              shutdown keeps its ISR and ELR membership
                     \*   "LastIsrMemberKept"        no ELR: the last ISR member is never removed
                     \*                              (Kafka before KIP-966)
                     \*   "ElectOutsideEligible"     with no live ISR or ELR member, any live
                     \*                              replica is elected at once, loss unreported
                     \*   "NoStrictMinIsr"           the HW advances with the ISR below MinIsr

NoLeader == 0
NoReport == <<>>     \* recoveryLogEnds of a replica that has not reported since

VARIABLES
    leader,          \* controller: the leader, or NoLeader (the partition is offline)
    isr,             \* controller: the in-sync replicas
    elr,             \* controller: the eligible leader replicas
    leaderEpoch,     \* controller: bumped by every change of the leader or (made by the
                     \*   controller) of the ISR, but for a change to no leader (no record is
                     \*   written without a leader; the next leader's change bumps it)
    recoveryLogEnds, \* controller: replica -> <<how many leading records of its log agree with
                     \*   the lineage, last epoch, end offset>>, reported while the ISR and the
                     \*   ELR are both empty, or NoReport
    lineage,         \* controller: <<e, below>>: the latest leader epoch e whose leader told the
                     \*   controller its log (RecordLineage), and the epochs of that leader's
                     \*   records below e's start offset; the leader's records from there on are
                     \*   of epoch e. The HW advances in an epoch only once it is recorded here.
    alive,           \* controller: replica -> its broker is registered, its session not expired
                     \*   and its replica not on a failed dir
    proc,            \* replica -> "up", or down after a "clean" shutdown or an "unclean" one
                     \*   (a power loss, or its log dir failed)
    log,             \* replica -> its log: the leader epoch of each record, by offset
    flushed,         \* replica -> how many of its records are durable
    cacheEpoch,      \* replica -> the latest leader epoch in its leader epoch cache (0: none).
                     \*   A new leader records its epoch there, at its log end, before it
                     \*   writes a record of it (so the leader's is its epoch even with no record
                     \*   of it); a follower's copy of a record records the record's epoch, and
                     \*   a follower whose log reaches the leader's epochStartOffset records the
                     \*   leader's epoch there (FollowLeaderEpoch); a truncation drops the epochs
                     \*   that begin at or after the cut. The cache file is fsynced at every
                     \*   change, so a crash keeps it; loading the log at start-up drops the
                     \*   epochs that begin past the log's end, and keeps one that begins exactly
                     \*   there (see PowerLoss).
    hw,              \* the leader's high watermark
    epochStartOffset,\* the leader's log end when it took up the current leader epoch (its
                     \*   leader_epoch_start_offset); 0 while no leader is up
    acked,           \* ghost: offset -> <<epoch of the record acknowledged there, the replicas
                     \*   that acknowledged it>>
    lossReported     \* ghost: an unclean election happened

vars == <<leader, isr, elr, leaderEpoch, recoveryLogEnds, lineage, alive, proc, log, flushed,
          cacheEpoch, hw, epochStartOffset, acked, lossReported>>

Epochs == 1..MaxEpoch
Min(S) == CHOOSE x \in S : \A y \in S : x <= y
MinOf(a, b) == IF a <= b THEN a ELSE b

MaxOf(a, b) == IF a >= b THEN a ELSE b
LastEpoch(s) == IF s = <<>> THEN 0 ELSE s[Len(s)]

\* The epoch of the record at offset o in the log of the lineage's leader.
LineageEpochAt(o) == IF o <= Len(lineage[2]) THEN lineage[2][o] ELSE lineage[1]

\* How many leading records of the log s agree with the lineage: a record of the epoch the
\* lineage's leader wrote or copied at its offset is that leader's record, and so is every record
\* below it (one leader per epoch, which only appends). An acknowledged record is in the log of
\* every later leader, so a log that holds it agrees with the lineage up to it at least.
LineagePrefix(s) ==
    IF \A i \in 1..Len(s) : s[i] = LineageEpochAt(i) THEN Len(s)
    ELSE Min({i \in 1..Len(s) : s[i] # LineageEpochAt(i)}) - 1

\* What replica r reports when its leader epoch cache's latest epoch is c: how many leading
\* records of its log agree with the lineage (the controller works it out from the epochs and
\* start offsets of r's cache), c (0 when its log is empty), its end offset (the
\* implementation's broker _report and controller Election._note_log_ends). No replica's log
\* and no lineage changes while reports are kept: there is no leader then.
ReportOf(r, c) == <<LineagePrefix(log[r]), IF log[r] = <<>> THEN 0 ELSE c, Len(log[r])>>
LogEnd(r) == ReportOf(r, cacheEpoch[r])
\* Report a ranks at least as high as b: the longer prefix agreeing with the lineage, then the
\* later last epoch, then the higher end offset.
EndAtLeast(a, b) ==
    \/ a[1] > b[1]
    \/ a[1] = b[1] /\ (a[2] > b[2] \/ (a[2] = b[2] /\ a[3] >= b[3]))

\* The latest epoch of a follower's cache after a fetch from the leader left its log as new and
\* its cache's latest epoch as c: once new reaches the offset the leader's epoch began at
\* (epochStartOffset) and c is below that epoch, the follower records the leader's epoch there,
\* as the leader did (the implementation's _follow_epoch: the leader's Fetch answer to a
\* follower carries its epoch and that offset). As new is a prefix of the leader's log, whose
\* records past epochStartOffset are all of the leader's epoch, only an epoch that begins
\* exactly at new's end is new to the cache.
FollowLeaderEpoch(new, c) ==
    IF Len(new) >= epochStartOffset /\ c < leaderEpoch THEN leaderEpoch ELSE c

\* How many leading records the logs of r and q share.
CommonPrefix(r, q) ==
    LET n == MinOf(Len(log[r]), Len(log[q])) IN
    IF \A i \in 1..n : log[r][i] = log[q][i] THEN n
    ELSE Min({i \in 1..n : log[r][i] # log[q][i]}) - 1

\* r's log holds the record acknowledged at offset o, intact.
Holds(r, o) == Len(log[r]) >= o /\ log[r][o] = acked[o][1]

\* Some replica that acknowledged the record at offset o still holds it.
Held(o) == \E r \in acked[o][2] : Holds(r, o)

TypeOK ==
    /\ leader \in Replicas \cup {NoLeader}
    /\ isr \subseteq Replicas /\ elr \subseteq Replicas
    /\ leaderEpoch \in 1..(MaxEpoch + 1)
    /\ \A r \in Replicas : recoveryLogEnds[r] = NoReport
                           \/ recoveryLogEnds[r] \in (0..MaxRecords) \X (0..MaxEpoch)
                                                     \X (0..MaxRecords)
    /\ lineage[1] \in 1..(MaxEpoch + 1)
    /\ lineage[2] \in Seq(Epochs) /\ Len(lineage[2]) <= MaxRecords
    /\ alive \in [Replicas -> BOOLEAN]
    /\ proc \in [Replicas -> {"up", "clean", "unclean"}]
    /\ \A r \in Replicas : log[r] \in Seq(Epochs) /\ Len(log[r]) <= MaxRecords
    /\ \A r \in Replicas : flushed[r] \in 0..Len(log[r])
    /\ cacheEpoch \in [Replicas -> 0..(MaxEpoch + 1)]
    /\ hw \in 0..MaxRecords
    /\ epochStartOffset \in 0..MaxRecords
    /\ \A o \in 1..Len(acked) : acked[o][1] \in Epochs /\ acked[o][2] \subseteq Replicas
    /\ Len(acked) <= MaxRecords
    /\ lossReported \in BOOLEAN

Init ==
    /\ leader = Min(Replicas)
    /\ isr = Replicas
    /\ elr = {}
    /\ leaderEpoch = 1
    /\ recoveryLogEnds = [r \in Replicas |-> NoReport]
    /\ lineage = <<1, <<>>>>
    /\ alive = [r \in Replicas |-> TRUE]
    /\ proc = [r \in Replicas |-> "up"]
    /\ log = [r \in Replicas |-> <<>>]
    /\ flushed = [r \in Replicas |-> 0]
    /\ cacheEpoch = [r \in Replicas |-> IF r = Min(Replicas) THEN 1 ELSE 0]
    /\ hw = 0
    /\ epochStartOffset = 0
    /\ acked = <<>>
    /\ lossReported = FALSE

(***************************************************************************)
(* The controller's election, after a step that gave the ISR isr0, the ELR *)
(* elr0, the leader ld0, the reports ends0 and the alive brokers alv (the  *)
(* implementation's Election._elect):                                      *)
(* - ISR members that are not alive leave the ISR; while the ISR left is   *)
(*   smaller than MinIsr they join the ELR (the HW cannot advance then, so *)
(*   they hold every acknowledged record);                                 *)
(* - the leader stays if it is a live ISR member; else the first live ISR  *)
(*   member leads; else the first live ELR member, alone in the ISR; else, *)
(*   with the ISR and the ELR empty and every replica alive and reported,  *)
(*   the one whose report ranks highest (the longest prefix agreeing with  *)
(*   the lineage, then last epoch, then end offset; the first on a tie)    *)
(*   leads alone (a recovery election); else, only with                    *)
(*   UncleanEnabled, the first live replica (an unclean election, a loss   *)
(*   reported); else no leader;                                            *)
(* - an ISR of MinIsr members empties the ELR; a leaderless partition with *)
(*   an eligible replica forgets the reports;                              *)
(* - a change of the leader or the ISR bumps the leader epoch (not one to  *)
(*   no leader), and a new leader's HW is at most its log's end.           *)
(* The result is a record; Elected(e, cache0) applies it, cache0 the       *)
(* step's leader epoch caches. A leader that is up takes up a new epoch,   *)
(* or its epoch when it starts (make_leader): it records the epoch in its  *)
(* cache at its log end, which is the epoch's start offset.                *)
(***************************************************************************)
Election(ld0, isr0, elr0, ends0, alv) ==
    LET liveIsr == {r \in isr0 : alv[r]}
        isr1 == IF Bug = "LastIsrMemberKept" /\ liveIsr = {} THEN isr0 ELSE liveIsr
        elr1 == IF Bug = "LastIsrMemberKept" THEN {}
                ELSE IF Cardinality(isr1) < MinIsr THEN elr0 \cup (isr0 \ isr1) ELSE elr0
        liveElr == {r \in elr1 : alv[r]}
        live == {r \in Replicas : alv[r]}
        ready == \A r \in Replicas : alv[r] /\ ends0[r] # NoReport
        best == CHOOSE r \in Replicas :
                    \A q \in Replicas : EndAtLeast(ends0[r], ends0[q])
                                        /\ (ends0[q] = ends0[r] => r <= q)
        choice ==
            IF ld0 \in isr1 /\ alv[ld0] THEN [l |-> ld0, i |-> isr1, e |-> elr1, how |-> "isr"]
            ELSE IF liveIsr # {} THEN [l |-> Min(liveIsr), i |-> isr1, e |-> elr1, how |-> "isr"]
            ELSE IF liveElr # {}
                 THEN [l |-> Min(liveElr), i |-> {Min(liveElr)}, e |-> elr1, how |-> "elr"]
            ELSE IF Bug = "ElectOutsideEligible" /\ live # {}
                 THEN [l |-> Min(live), i |-> {Min(live)}, e |-> {}, how |-> "outside"]
            ELSE IF elr1 = {} /\ ready
                 THEN [l |-> best, i |-> {best}, e |-> {}, how |-> "recovery"]
            ELSE IF UncleanEnabled /\ live # {}
                 THEN [l |-> Min(live), i |-> {Min(live)}, e |-> {}, how |-> "unclean"]
            ELSE [l |-> NoLeader, i |-> isr1, e |-> elr1, how |-> "none"]
        elr2 == IF Cardinality(choice.i) >= MinIsr THEN {} ELSE choice.e \ choice.i
    IN [l |-> choice.l, i |-> choice.i, e |-> elr2, how |-> choice.how,
        ends |-> IF choice.i # {} \/ elr2 # {} THEN [r \in Replicas |-> NoReport] ELSE ends0]

Elected(e, cache0) ==
    LET epoch == IF <<e.l, e.i>> # <<leader, isr>> /\ e.l # NoLeader THEN leaderEpoch + 1
                 ELSE leaderEpoch
        up == e.l # NoLeader /\ proc'[e.l] = "up"
        takesUp == up /\ (e.l # leader \/ epoch # leaderEpoch \/ proc[e.l] # "up")
    IN /\ leader' = e.l
       /\ isr' = e.i
       /\ elr' = e.e
       /\ recoveryLogEnds' = e.ends
       /\ UNCHANGED lineage
       /\ leaderEpoch' = epoch
       /\ hw' = IF e.l # leader /\ e.l # NoLeader THEN MinOf(hw, Len(log'[e.l])) ELSE hw
       /\ cacheEpoch' = IF takesUp THEN [cache0 EXCEPT ![e.l] = epoch] ELSE cache0
       /\ epochStartOffset' = IF takesUp THEN Len(log'[e.l])
                              ELSE IF up THEN epochStartOffset ELSE 0
       /\ lossReported' = (lossReported \/ e.how = "unclean")

(* The leader appends a record in its epoch (a produce). *)
Produce ==
    /\ leader # NoLeader /\ proc[leader] = "up"
    /\ Len(log[leader]) < MaxRecords
    /\ log' = [log EXCEPT ![leader] = Append(@, leaderEpoch)]
    /\ cacheEpoch' = [cacheEpoch EXCEPT ![leader] = MaxOf(@, leaderEpoch)]
    /\ UNCHANGED <<leader, isr, elr, leaderEpoch, recoveryLogEnds, lineage, alive, proc, flushed,
                   hw, epochStartOffset, acked, lossReported>>

(* Follower r fetches from the leader: it truncates where its log diverges from the leader's *)
(* (the leader epoch protocol), its cache dropping the epochs that begin at or after the cut, *)
(* and copies the leader's next record, if there is one, whose epoch its cache records unless *)
(* it knows a later one (the cache's assign); then, once its log reaches the leader's epoch    *)
(* start offset, it records the leader's epoch (FollowLeaderEpoch). A fetch that changes only *)
(* the cache (the log already the leader's up to that offset) is a step too.                 *)
Replicate(r) ==
    /\ leader # NoLeader /\ r # leader
    /\ proc[leader] = "up" /\ proc[r] = "up"
    /\ LET c == CommonPrefix(r, leader)
           grows == c < Len(log[leader])
           new == IF grows THEN Append(SubSeq(log[r], 1, c), log[leader][c + 1])
                  ELSE SubSeq(log[r], 1, c)
           cut == IF c < Len(log[r]) THEN LastEpoch(SubSeq(log[r], 1, c)) ELSE cacheEpoch[r]
           cache == FollowLeaderEpoch(new, IF grows THEN MaxOf(cut, log[leader][c + 1])
                                           ELSE cut)
       IN /\ <<new, cache>> # <<log[r], cacheEpoch[r]>>  \* one test: TLC splits a disjunction
          /\ log' = [log EXCEPT ![r] = new]
          /\ flushed' = [flushed EXCEPT ![r] = MinOf(@, c)]
          /\ cacheEpoch' = [cacheEpoch EXCEPT ![r] = cache]
    /\ UNCHANGED <<leader, isr, elr, leaderEpoch, recoveryLogEnds, lineage, alive, proc, hw,
                   epochStartOffset, acked, lossReported>>

(* The leader tells the controller its log as it took up its epoch, which records it as the   *)
(* lineage: the epochs of the records below the epoch's start offset (the implementation: its   *)
(* leader epoch cache's entries, each epoch with the offset it began at). Until then its HW     *)
(* does not advance in the epoch, so a recovery election never judges logs by a lineage older   *)
(* than a record acknowledged.                                                                   *)
RecordLineage ==
    /\ leader # NoLeader /\ proc[leader] = "up"
    /\ lineage[1] # leaderEpoch
    /\ lineage' = <<leaderEpoch, SubSeq(log[leader], 1, epochStartOffset)>>
    /\ UNCHANGED <<leader, isr, elr, leaderEpoch, recoveryLogEnds, alive, proc, log, flushed,
                   cacheEpoch, hw, epochStartOffset, acked, lossReported>>

(* r fsyncs its log. *)
Flush(r) ==
    /\ proc[r] = "up" /\ flushed[r] < Len(log[r])
    /\ flushed' = [flushed EXCEPT ![r] = Len(log[r])]
    /\ UNCHANGED <<leader, isr, elr, leaderEpoch, recoveryLogEnds, lineage, alive, proc, log,
                   cacheEpoch, hw, epochStartOffset, acked, lossReported>>

(* The leader advances its HW to the least end, over the ISR, of the log it shares with the  *)
(* leader, only while the ISR has MinIsr members (strict min.insync.replicas) and once the    *)
(* controller recorded the lineage of its epoch: the records below it are acknowledged, each *)
(* by the ISR, which holds it.                                                                *)
AdvanceHW ==
    /\ leader # NoLeader /\ proc[leader] = "up"
    /\ lineage[1] = leaderEpoch
    /\ Bug # "NoStrictMinIsr" => Cardinality(isr) >= MinIsr
    /\ LET h == Min({CommonPrefix(r, leader) : r \in isr})
           n == IF h > Len(acked) THEN h ELSE Len(acked)
       IN /\ h > hw
          /\ hw' = h
          /\ acked' = [o \in 1..n |->
                         IF o > hw /\ o <= h /\ (o > Len(acked) \/ acked[o][1] # log[leader][o])
                         THEN <<log[leader][o], isr>> ELSE acked[o]]
    /\ UNCHANGED <<leader, isr, elr, leaderEpoch, recoveryLogEnds, lineage, alive, proc, log,
                   flushed, cacheEpoch, epochStartOffset, lossReported>>

(* The leader drops a follower that lags (AlterPartition: no new leader epoch). While the ISR *)
(* left is smaller than MinIsr the follower joins the ELR.                                    *)
ShrinkIsr(r) ==
    /\ leader # NoLeader /\ proc[leader] = "up"
    /\ r \in isr /\ r # leader /\ log[r] # log[leader]
    /\ isr' = isr \ {r}
    /\ elr' = IF Bug = "LastIsrMemberKept" \/ Cardinality(isr') >= MinIsr THEN {}
              ELSE elr \cup {r}
    /\ UNCHANGED <<leader, leaderEpoch, recoveryLogEnds, lineage, alive, proc, log, flushed,
                   cacheEpoch, hw, epochStartOffset, acked, lossReported>>

(* The leader takes back a follower (AlterPartition) whose fetch offset reaches the HW and the *)
(* start offset of the leader's epoch (the implementation's replicas_to_add_to_isr), and whose *)
(* fetch reports the leader's epoch as its cache's latest (last_fetched_epoch): it recorded it *)
(* (FollowLeaderEpoch). A fetch counts only after the leader epoch protocol truncated the      *)
(* follower's divergent records, so the follower's log is a prefix of the leader's, its end    *)
(* the fetch offset. It leaves the ELR, which an ISR of MinIsr members empties.                *)
IsrExpand(r) ==
    /\ leader # NoLeader /\ proc[leader] = "up"
    /\ r \notin isr /\ proc[r] = "up"
    /\ CommonPrefix(r, leader) = Len(log[r])
    /\ Len(log[r]) >= hw /\ Len(log[r]) >= epochStartOffset
    /\ cacheEpoch[r] >= leaderEpoch
    /\ isr' = isr \cup {r}
    /\ elr' = IF Cardinality(isr') >= MinIsr THEN {} ELSE elr \ {r}
    /\ UNCHANGED <<leader, leaderEpoch, recoveryLogEnds, lineage, alive, proc, log, flushed,
                   cacheEpoch, hw, epochStartOffset, acked, lossReported>>

(* r's broker shuts down cleanly: its log is flushed and kept whole (a clean-shutdown marker). *)
CleanShutdown(r) ==
    /\ proc[r] = "up"
    /\ proc' = [proc EXCEPT ![r] = "clean"]
    /\ flushed' = [flushed EXCEPT ![r] = Len(log[r])]
    /\ epochStartOffset' = IF r = leader THEN 0 ELSE epochStartOffset
    /\ UNCHANGED <<leader, isr, elr, leaderEpoch, recoveryLogEnds, lineage, alive, log,
                   cacheEpoch, hw, acked, lossReported>>

(* r's broker loses power: the unflushed tail of its log is lost, and no marker is written. Its *)
(* leader epoch cache file, fsynced at every change, is kept whole; the next start-up drops the *)
(* epochs that begin past the log's end and keeps the latest that begins at or before it. With  *)
(* nothing lost that is the cache's latest; else the first lost record's epoch (its epoch's     *)
(* entry begins at or before that record, exactly at the new end if it begins there; an epoch a *)
(* follower recorded by FollowLeaderEpoch began at its log's end then, below the records of it  *)
(* it copied after, so it goes with the first of them or is kept when none was lost).          *)
(* cacheEpoch takes that value here: it is not read while r is down, and Register keeps it.    *)
PowerLoss(r) ==
    /\ proc[r] = "up"
    /\ proc' = [proc EXCEPT ![r] = "unclean"]
    /\ log' = [log EXCEPT ![r] = SubSeq(@, 1, flushed[r])]
    /\ cacheEpoch' = [cacheEpoch EXCEPT ![r] = IF flushed[r] < Len(log[r])
                                               THEN log[r][flushed[r] + 1] ELSE @]
    /\ epochStartOffset' = IF r = leader THEN 0 ELSE epochStartOffset
    /\ UNCHANGED <<leader, isr, elr, leaderEpoch, recoveryLogEnds, lineage, alive, flushed, hw,
                   acked, lossReported>>

(* r's log dir fails: its whole log is gone, the broker tells the controller at once, which   *)
(* takes r out of the ISR and the ELR (it may have lost records) and elects. r is missing      *)
(* until its broker restarts with a working dir (Register, an unclean start).                  *)
DirFailure(r) ==
    /\ proc[r] = "up"
    /\ proc' = [proc EXCEPT ![r] = "unclean"]
    /\ log' = [log EXCEPT ![r] = <<>>]
    /\ flushed' = [flushed EXCEPT ![r] = 0]
    /\ alive' = [alive EXCEPT ![r] = FALSE]
    /\ UNCHANGED acked
    /\ LET keep == Bug = "LastIsrMemberKept" /\ isr = {r}
       IN Elected(Election(IF leader = r /\ ~keep THEN NoLeader ELSE leader,
                           IF keep THEN isr ELSE isr \ {r}, elr \ {r},
                           [recoveryLogEnds EXCEPT ![r] = NoReport], alive'),
                  [cacheEpoch EXCEPT ![r] = 0])

(* The controller fences r's broker: its session expired (it is down). *)
FenceBroker(r) ==
    /\ alive[r] /\ proc[r] # "up"
    /\ alive' = [alive EXCEPT ![r] = FALSE]
    /\ UNCHANGED <<proc, log, flushed, acked>>
    /\ Elected(Election(leader, isr, elr, recoveryLogEnds, alive'), cacheEpoch)

(* r's broker starts and registers. Loading its log drops the epochs of its leader epoch cache  *)
(* that begin past the log's end and keeps one that begins exactly at it (a leader records its  *)
(* epoch there before it writes): after a clean shutdown the whole cache, after a power loss    *)
(* what PowerLoss left in cacheEpoch, after a dir failure none. After an unclean               *)
(* shutdown (no clean-shutdown marker, or its dir failed) its replica leaves the ISR and the ELR *)
(* at once (unclean-shutdown detection). With the ISR and the ELR empty it reports its log end  *)
(* with the registration. Then the election.                                                   *)
Register(r) ==
    /\ proc[r] # "up"
    /\ proc' = [proc EXCEPT ![r] = "up"]
    /\ alive' = [alive EXCEPT ![r] = TRUE]
    /\ UNCHANGED <<log, flushed, acked>>
    /\ LET damaged == proc[r] = "unclean" /\ Bug # "DamagedReplicaKeptInIsr"
           keep == Bug = "LastIsrMemberKept" /\ isr = {r}
           isr0 == IF damaged /\ ~keep THEN isr \ {r} ELSE isr
           elr0 == IF damaged THEN elr \ {r} ELSE elr
           ld0 == IF leader = r /\ r \notin isr0 THEN NoLeader ELSE leader
           ends0 == IF isr0 = {} /\ elr0 = {}
                    THEN [recoveryLogEnds EXCEPT ![r] = LogEnd(r)] ELSE recoveryLogEnds
       IN Elected(Election(ld0, isr0, elr0, ends0, alive'), cacheEpoch)

(* A live replica of the partition, which has no replica in the ISR or the ELR, reports its log *)
(* end in a heartbeat; a recovery election follows once every replica has.                      *)
ReportLogEnd(r) ==
    /\ isr = {} /\ elr = {}
    /\ alive[r] /\ proc[r] = "up"
    /\ recoveryLogEnds[r] # LogEnd(r)
    /\ UNCHANGED <<alive, proc, log, flushed, acked>>
    /\ Elected(Election(leader, isr, elr, [recoveryLogEnds EXCEPT ![r] = LogEnd(r)], alive),
               cacheEpoch)

Next ==
    \/ Produce
    \/ \E r \in Replicas : Replicate(r)
    \/ \E r \in Replicas : Flush(r)
    \/ AdvanceHW
    \/ RecordLineage
    \/ \E r \in Replicas : ShrinkIsr(r)
    \/ \E r \in Replicas : IsrExpand(r)
    \/ \E r \in Replicas : CleanShutdown(r)
    \/ \E r \in Replicas : PowerLoss(r)
    \/ \E r \in Replicas : DirFailure(r)
    \/ \E r \in Replicas : FenceBroker(r)
    \/ \E r \in Replicas : Register(r)
    \/ \E r \in Replicas : ReportLogEnd(r)

Spec == Init /\ [][Next]_vars

(* The bound of the model: TLC checks the invariants in a state whose leader epoch is above     *)
(* MaxEpoch (the election that got there, a recovery election say, is checked), and explores no *)
(* further from it.                                                                              *)
EpochBound == leaderEpoch <= MaxEpoch

(***************************************************************************)
(* AckedRecordsSurvive: a leader that is up holds every acknowledged       *)
(* record some replica that acknowledged it still holds intact, unless an  *)
(* unclean election gave records up (lossReported). A record every one of *)
(* its acknowledgers lost (unflushed at a power loss, or on a failed dir)  *)
(* cannot be brought back: a recovery election over such logs is the only  *)
(* way the partition gets a leader again, and the controller warns of it.  *)
(***************************************************************************)
AckedRecordsSurvive ==
    lossReported \/
    \A o \in 1..Len(acked) :
        leader # NoLeader /\ proc[leader] = "up" /\ Held(o) => Holds(leader, o)

LeaderInIsr == leader # NoLeader => leader \in isr

IsrElrDisjoint == isr \cap elr = {}

ElrOnlyBelowMinIsr == elr # {} => Cardinality(isr) < MinIsr

=============================================================================
