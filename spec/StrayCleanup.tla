---------------------------- MODULE StrayCleanup ----------------------------
(***************************************************************************)
(* Topic identity, stray and orphan partitions on brokers (KIP-550 stray   *)
(* detection from a FULL LeaderAndIsr, KIP-370 delayed, age-guarded        *)
(* deletion), with control requests in flight on a network that reorders   *)
(* and duplicates them, topics deleted and re-created under the same name, *)
(* broker restarts and a log dir per broker that can fail.                 *)
(*                                                                         *)
(* A log on a broker is identified by its partition name AND its topic id: *)
(* re-creating a topic gives the name a new id, and a log of the old id is *)
(* a stray, never the new topic's log.                                     *)
(*                                                                         *)
(* The controller. Its assignment (replicas, topicId) is the metadata      *)
(* store. Each change is one step that sends its control requests to the   *)
(* live brokers concerned, all stamped with the version                    *)
(* <<controllerEpoch, seq>> (seq: the correlation id, growing in send      *)
(* order within one controller epoch) and the broker epoch of the          *)
(* addressee. A broker that registers (StartBroker) gets a FULL            *)
(* LeaderAndIsr, and so does every live broker on a controller failover.   *)
(*                                                                         *)
(* The broker.                                                             *)
(*  - Fencing: a request whose controller epoch is below the highest the   *)
(*    broker has seen, or whose broker epoch is not the broker's current   *)
(*    one, changes nothing. A restart forgets the controller epoch seen.   *)
(*  - Versions: per partition name, the version of the newest request it   *)
(*    applied for that name (forgotten on restart). A request changes      *)
(*    nothing about a name for which a newer version was applied.          *)
(*  - INCREMENTAL LeaderAndIsr <<p, t>>: a live log of p with another id   *)
(*    becomes stray; <<p, t>> is hosted (a stray of it revived, else a new *)
(*    empty log created), in the same step.                                *)
(*  - StopReplica(delete) <<p, t>>: deletes the live log of <<p, t>> only. *)
(*  - FULL LeaderAndIsr: for every name whose applied version is older,    *)
(*    every live log it does not list (with its topic id) becomes stray,   *)
(*    and what it lists is hosted.                                         *)
(*  - Dir offline: the broker can neither see nor create logs; a request   *)
(*    changes nothing about its partitions (they stay offline there).      *)
(*  - Truncation: a live log may lose its newest records (replication);    *)
(*    its newest write is then an earlier one.                             *)
(*  - Orphan removal: a stray is deleted by a broker that applied a FULL   *)
(*    request in this incarnation, StrayDeletionDelay after the rename,    *)
(*    and only if its newest write is at least RetentionPeriod old.        *)
(***************************************************************************)
EXTENDS Integers, FiniteSets

CONSTANTS
    Brokers,             \* broker ids, e.g. {1, 2}
    FaultyBrokers,       \* the brokers that may stop, restart and lose their log dir
    Partitions,          \* partition names (topic-partition), e.g. {1}
    MaxTopicId,          \* topic ids are 1..MaxTopicId; re-creations stop there
    MaxControllerEpoch,  \* failovers stop at this controller epoch
    MaxSeq,              \* a controller sends at most this many requests' rounds per epoch
    MaxBrokerEpoch,      \* restarts stop at this broker epoch
    MaxTime,             \* the clock stops at this time
    RetentionPeriod,     \* a stray whose newest write is younger than this is never deleted
    StrayDeletionDelay,  \* a stray is deleted no earlier than this long after it became stray
    Bug                  \* "none", or the name of the injected bug:
                         \*   "NoAgeGuard"                 strays deleted whatever their age
                         \*   "StaleEpochStrayDeletion"    a FULL request of a stale controller
                         \*                                epoch still decides strays (for every
                         \*                                name, its version unchecked)
                         \*   "StraySetInverted"           a FULL request sets aside the live logs
                         \*                                it lists instead of the others
                         \*   "StopReplicaIgnoresTopicId"  StopReplica deletes the live log of
                         \*                                the name, whatever its topic id
                         \*   "NonNewReplicaWithDirOffline" a replica the request does not mark
                         \*                                new is created while the dir is offline

TopicIds == 0..MaxTopicId \ {0}
Times == 0..MaxTime
Versions == (0..MaxControllerEpoch) \X (0..MaxSeq)
NoVersion == <<0, 0>>

(* Version order: controller epoch first, then seq. *)
VLt(a, b) == a[1] < b[1] \/ (a[1] = b[1] /\ a[2] < b[2])
VLeq(a, b) == ~VLt(b, a)

(* One log of one <<partition, topic id>> on a broker. state: "none" (no dir), "live" (the      *)
(* partition dir, served), "stray" (renamed -stray, never served). lastWrite: time of its newest *)
(* write. strayAt: when it was renamed -stray (0 unless stray).                                  *)
Log == [state: {"none", "live", "stray"}, lastWrite: Times, strayAt: Times]
NoLog == [state |-> "none", lastWrite |-> 0, strayAt |-> 0]

(* A control request. kind "LAI": INCREMENTAL LeaderAndIsr of <<part, topic>>, flag = isNew;   *)
(* "STOP": StopReplica of <<part, topic>>, flag = delete; "FULL": FULL LeaderAndIsr listing      *)
(* hosted (part 0, topic 0, flag FALSE). to, brokerEpoch: the addressee and its incarnation;    *)
(* epoch, seq: the version.                                                                      *)
Msg == [kind: {"LAI", "STOP", "FULL"}, to: Brokers, brokerEpoch: 1..MaxBrokerEpoch,
        epoch: 1..MaxControllerEpoch, seq: 1..MaxSeq, part: Partitions \cup {0},
        topic: 0..MaxTopicId, flag: BOOLEAN, hosted: SUBSET (Partitions \X TopicIds)]

VARIABLES
    now,             \* the clock
    controllerEpoch, \* store: the current controller's epoch
    seq,             \* the current controller's last sequence number (correlation id)
    topicId,         \* store: partition -> id of its newest topic (deleted if replicas = {})
    replicas,        \* store: partition -> brokers assigned ({} : the topic is deleted)
    assignedAt,      \* store: partition -> broker -> version of the decision that assigned it
                     \*   (NoVersion when not assigned)
    online,          \* broker -> running
    brokerEpoch,     \* broker -> its incarnation (registration) epoch
    seenEpoch,       \* broker -> highest controller epoch seen (0 after a restart)
    appliedVersion,  \* broker -> partition -> version of the newest request applied for it
    sawFull,         \* broker -> applied a FULL LeaderAndIsr in this incarnation
    dirOnline,       \* broker -> its log dir is readable
    disk,            \* broker -> partition -> topic id -> Log (durable)
    network,         \* every request ever sent (delivered any number of times, in any order)
    lost             \* ghost: <<broker, partition, topic id, lastWrite>> of every log deleted
                     \*   while its data was still owed (see NoNewDataDeleted)

vars == <<now, controllerEpoch, seq, topicId, replicas, assignedAt, online, brokerEpoch,
          seenEpoch, appliedVersion, sawFull, dirOnline, disk, network, lost>>

TypeOK ==
    /\ now \in Times
    /\ controllerEpoch \in 1..MaxControllerEpoch
    /\ seq \in 0..MaxSeq
    /\ topicId \in [Partitions -> TopicIds]
    /\ replicas \in [Partitions -> SUBSET Brokers]
    /\ assignedAt \in [Partitions -> [Brokers -> Versions]]
    /\ online \in [Brokers -> BOOLEAN]
    /\ brokerEpoch \in [Brokers -> 1..MaxBrokerEpoch]
    /\ seenEpoch \in [Brokers -> 0..MaxControllerEpoch]
    /\ appliedVersion \in [Brokers -> [Partitions -> Versions]]
    /\ sawFull \in [Brokers -> BOOLEAN]
    /\ dirOnline \in [Brokers -> BOOLEAN]
    /\ disk \in [Brokers -> [Partitions -> [TopicIds -> Log]]]
    /\ network \subseteq Msg
    /\ lost \subseteq Brokers \X Partitions \X TopicIds \X Times

(* The controller assigns <<p, t>> to b. *)
Assigned(b, p, t) == b \in replicas[p] /\ t = topicId[p]

(* b applied the decision that assigns it p: what it hosts of p is the controller's current     *)
(* wish, and writes acknowledged there are owed to the controller's assignment.                  *)
Current(b, p, t) == Assigned(b, p, t) /\ VLeq(assignedAt[p][b], appliedVersion[b][p])

(* What the controller lists for b in a FULL LeaderAndIsr. *)
View(b) == {<<p, topicId[p]>> : p \in {q \in Partitions : b \in replicas[q]}}

(* The lost-data ghost of a step removing log l of <<p, t>> from b. A deletion the controller    *)
(* ordered (a StopReplica naming <<p, t>>) owes nothing but the current assignment; any other    *)
(* (a stray deletion, a StopReplica hitting another id's log, a log superseded by a new empty    *)
(* one) also owes every write younger than RetentionPeriod.                                      *)
LostBy(b, p, t, l, ordered) ==
    IF l.state # "none"
       /\ (Current(b, p, t) \/ (~ordered /\ now - l.lastWrite < RetentionPeriod))
    THEN {<<b, p, t, l.lastWrite>>} ELSE {}

NewLog == [state |-> "live", lastWrite |-> now, strayAt |-> 0]
Strayed(l) == [l EXCEPT !.state = "stray", !.strayAt = now]

(* <<p, t>> hosted: a stray revived from its data, a missing log created empty. *)
HostedLog(l) == IF l.state = "none" THEN NewLog ELSE [l EXCEPT !.state = "live", !.strayAt = 0]

(* b's logs of p after an INCREMENTAL LeaderAndIsr of <<p, t>>: other ids' live logs set aside. *)
HostRow(b, p, t) ==
    [u \in TopicIds |-> LET l == disk[b][p][u] IN
        IF u = t THEN HostedLog(l) ELSE IF l.state = "live" THEN Strayed(l) ELSE l]

(* b's logs of p after a FULL request listing `hosted`. *)
FullRow(b, p, hosted) ==
    [u \in TopicIds |-> LET l == disk[b][p][u] IN
        IF Bug = "StraySetInverted"
        THEN IF <<p, u>> \in hosted
             THEN IF l.state = "live" THEN Strayed(l) ELSE HostedLog(l)
             ELSE l
        ELSE IF <<p, u>> \in hosted THEN HostedLog(l)
             ELSE IF l.state = "live" THEN Strayed(l) ELSE l]

(* The controller's next version, and its requests. *)
Next1 == <<controllerEpoch, seq + 1>>
Req(kind, b, p, t, flag, hosted) ==
    [kind |-> kind, to |-> b, brokerEpoch |-> brokerEpoch[b], epoch |-> controllerEpoch,
     seq |-> seq + 1, part |-> p, topic |-> t, flag |-> flag, hosted |-> hosted]

Init ==
    /\ now = 0
    /\ controllerEpoch = 1
    /\ seq = 0
    /\ topicId = [p \in Partitions |-> 1]
    /\ replicas = [p \in Partitions |-> Brokers]
    /\ assignedAt = [p \in Partitions |-> [b \in Brokers |-> <<1, 0>>]]
    /\ online = [b \in Brokers |-> TRUE]
    /\ brokerEpoch = [b \in Brokers |-> 1]
    /\ seenEpoch = [b \in Brokers |-> 1]
    /\ appliedVersion = [b \in Brokers |-> [p \in Partitions |-> <<1, 0>>]]
    /\ sawFull = [b \in Brokers |-> TRUE]
    /\ dirOnline = [b \in Brokers |-> TRUE]
    /\ disk = [b \in Brokers |-> [p \in Partitions |-> [t \in TopicIds |->
                  IF t = 1 THEN [state |-> "live", lastWrite |-> 0, strayAt |-> 0] ELSE NoLog]]]
    /\ network = {}
    /\ lost = {}

(* Time passes. *)
Tick ==
    /\ now < MaxTime
    /\ now' = now + 1
    /\ UNCHANGED <<controllerEpoch, seq, topicId, replicas, assignedAt, online, brokerEpoch,
                   seenEpoch, appliedVersion, sawFull, dirOnline, disk, network, lost>>

(* A write (produce or replication) to b's log of p, which it hosts as the controller assigns. *)
Append(b, p) ==
    LET t == topicId[p] IN
    /\ online[b] /\ dirOnline[b] /\ Current(b, p, t)
    /\ disk[b][p][t].state = "live"
    /\ disk' = [disk EXCEPT ![b][p][t].lastWrite = now]
    /\ UNCHANGED <<now, controllerEpoch, seq, topicId, replicas, assignedAt, online, brokerEpoch,
                   seenEpoch, appliedVersion, sawFull, dirOnline, network, lost>>

(* A truncation of b's live log of <<p, t>> (a follower dropping the records its leader        *)
(* does not have; which records may go is the concern of LogStartOffset and LeaderElection):   *)
(* what remains of the log was last written at w, before its newest write.                     *)
Truncate(b, p, t, w) ==
    /\ online[b] /\ dirOnline[b]
    /\ disk[b][p][t].state = "live"
    /\ w < disk[b][p][t].lastWrite
    /\ disk' = [disk EXCEPT ![b][p][t].lastWrite = w]
    /\ UNCHANGED <<now, controllerEpoch, seq, topicId, replicas, assignedAt, online, brokerEpoch,
                   seenEpoch, appliedVersion, sawFull, dirOnline, network, lost>>

(* The controller adds b to p's replicas (a reassignment); a live b is sent LeaderAndIsr. *)
Assign(p, b) ==
    /\ replicas[p] # {} /\ b \notin replicas[p]
    /\ seq < MaxSeq
    /\ replicas' = [replicas EXCEPT ![p] = @ \cup {b}]
    /\ assignedAt' = [assignedAt EXCEPT ![p][b] = Next1]
    /\ network' = network \cup (IF online[b] THEN {Req("LAI", b, p, topicId[p], TRUE, {})}
                                ELSE {})
    /\ seq' = seq + 1
    /\ UNCHANGED <<now, controllerEpoch, topicId, online, brokerEpoch, seenEpoch,
                   appliedVersion, sawFull, dirOnline, disk, lost>>

(* The controller removes b from p's replicas (one stays); a live b is sent StopReplica. *)
Unassign(p, b) ==
    /\ b \in replicas[p] /\ replicas[p] # {b}
    /\ seq < MaxSeq
    /\ replicas' = [replicas EXCEPT ![p] = @ \ {b}]
    /\ assignedAt' = [assignedAt EXCEPT ![p][b] = NoVersion]
    /\ network' = network \cup (IF online[b] THEN {Req("STOP", b, p, topicId[p], TRUE, {})}
                                ELSE {})
    /\ seq' = seq + 1
    /\ UNCHANGED <<now, controllerEpoch, topicId, online, brokerEpoch, seenEpoch,
                   appliedVersion, sawFull, dirOnline, disk, lost>>

(* p's topic is deleted: its live replicas are sent StopReplica. *)
DeleteTopic(p) ==
    /\ replicas[p] # {}
    /\ seq < MaxSeq
    /\ replicas' = [replicas EXCEPT ![p] = {}]
    /\ assignedAt' = [assignedAt EXCEPT ![p] = [b \in Brokers |-> NoVersion]]
    /\ network' = network \cup {Req("STOP", b, p, topicId[p], TRUE, {})
                                : b \in {c \in replicas[p] : online[c]}}
    /\ seq' = seq + 1
    /\ UNCHANGED <<now, controllerEpoch, topicId, online, brokerEpoch, seenEpoch,
                   appliedVersion, sawFull, dirOnline, disk, lost>>

(* A topic is created under p's name with a new topic id, assigned to S: its live replicas are  *)
(* sent LeaderAndIsr (isNew).                                                                    *)
CreateTopic(p, S) ==
    /\ replicas[p] = {} /\ S # {}
    /\ topicId[p] < MaxTopicId
    /\ seq < MaxSeq
    /\ topicId' = [topicId EXCEPT ![p] = @ + 1]
    /\ replicas' = [replicas EXCEPT ![p] = S]
    /\ assignedAt' = [assignedAt EXCEPT ![p] = [b \in Brokers |->
                                                   IF b \in S THEN Next1 ELSE NoVersion]]
    /\ network' = network \cup {Req("LAI", b, p, topicId[p] + 1, TRUE, {})
                                : b \in {c \in S : online[c]}}
    /\ seq' = seq + 1
    /\ UNCHANGED <<now, controllerEpoch, online, brokerEpoch, seenEpoch, appliedVersion, sawFull,
                   dirOnline, disk, lost>>

(* b stops (crash or shutdown): its disk stays, its memory is lost. *)
StopBroker(b) ==
    /\ b \in FaultyBrokers /\ online[b]
    /\ online' = [online EXCEPT ![b] = FALSE]
    /\ seenEpoch' = [seenEpoch EXCEPT ![b] = 0]
    /\ appliedVersion' = [appliedVersion EXCEPT ![b] = [p \in Partitions |-> NoVersion]]
    /\ sawFull' = [sawFull EXCEPT ![b] = FALSE]
    /\ UNCHANGED <<now, controllerEpoch, seq, topicId, replicas, assignedAt, brokerEpoch,
                   dirOnline, disk, network, lost>>

(* b starts and registers with a new broker epoch; the controller sends it a FULL request. *)
StartBroker(b) ==
    /\ ~online[b]
    /\ brokerEpoch[b] < MaxBrokerEpoch
    /\ seq < MaxSeq
    /\ online' = [online EXCEPT ![b] = TRUE]
    /\ brokerEpoch' = [brokerEpoch EXCEPT ![b] = @ + 1]
    /\ network' = network \cup {[Req("FULL", b, 0, 0, FALSE, View(b))
                                 EXCEPT !.brokerEpoch = brokerEpoch[b] + 1]}
    /\ seq' = seq + 1
    /\ UNCHANGED <<now, controllerEpoch, topicId, replicas, assignedAt, seenEpoch,
                   appliedVersion, sawFull, dirOnline, disk, lost>>

(* A new controller is elected: it sends every live broker a FULL request. *)
ControllerFailover ==
    /\ controllerEpoch < MaxControllerEpoch
    /\ controllerEpoch' = controllerEpoch + 1
    /\ seq' = 1
    /\ network' = network \cup {[kind |-> "FULL", to |-> b, brokerEpoch |-> brokerEpoch[b],
                                 epoch |-> controllerEpoch + 1, seq |-> 1, part |-> 0,
                                 topic |-> 0, flag |-> FALSE, hosted |-> View(b)]
                                : b \in {c \in Brokers : online[c]}}
    /\ UNCHANGED <<now, topicId, replicas, assignedAt, online, brokerEpoch, seenEpoch,
                   appliedVersion, sawFull, dirOnline, disk, lost>>

(* b's log dir fails / is repaired. *)
FailDir(b) ==
    /\ b \in FaultyBrokers /\ dirOnline[b]
    /\ dirOnline' = [dirOnline EXCEPT ![b] = FALSE]
    /\ UNCHANGED <<now, controllerEpoch, seq, topicId, replicas, assignedAt, online, brokerEpoch,
                   seenEpoch, appliedVersion, sawFull, disk, network, lost>>

RepairDir(b) ==
    /\ ~dirOnline[b]
    /\ dirOnline' = [dirOnline EXCEPT ![b] = TRUE]
    /\ UNCHANGED <<now, controllerEpoch, seq, topicId, replicas, assignedAt, online, brokerEpoch,
                   seenEpoch, appliedVersion, sawFull, disk, network, lost>>

(* Delivery of a request in flight to its broker, once more or for the first time. A fenced    *)
(* request (stale controller epoch, earlier incarnation) changes nothing: the step is disabled. *)
Deliver(m) ==
    LET b == m.to
        v == <<m.epoch, m.seq>>
        stale == m.epoch < seenEpoch[b]
        \* the request may change p: no newer version applied for p
        fresh(p) == ~VLt(v, appliedVersion[b][p]) \/ (Bug = "StaleEpochStrayDeletion" /\ stale)
    IN
    /\ m \in network
    /\ online[b] /\ m.brokerEpoch = brokerEpoch[b]
    /\ IF stale THEN Bug = "StaleEpochStrayDeletion" /\ m.kind = "FULL" ELSE TRUE
    /\ seenEpoch' = [seenEpoch EXCEPT ![b] = IF stale THEN @ ELSE m.epoch]
    /\ CASE m.kind = "LAI" ->
              LET p == m.part IN
              IF ~fresh(p) THEN UNCHANGED <<disk, appliedVersion, lost>>
              ELSE IF dirOnline[b]
              THEN /\ disk' = [disk EXCEPT ![b][p] = HostRow(b, p, m.topic)]
                   /\ appliedVersion' = [appliedVersion EXCEPT ![b][p] = v]
                   /\ UNCHANGED lost
              ELSE IF Bug = "NonNewReplicaWithDirOffline" /\ ~m.flag
              THEN /\ disk' = [disk EXCEPT ![b][p][m.topic] = NewLog]
                   /\ appliedVersion' = [appliedVersion EXCEPT ![b][p] = v]
                   /\ lost' = lost \cup LostBy(b, p, m.topic, disk[b][p][m.topic], FALSE)
              ELSE UNCHANGED <<disk, appliedVersion, lost>>
         [] m.kind = "STOP" ->
              LET p == m.part
                  gone == {u \in TopicIds : disk[b][p][u].state = "live"
                                            /\ (u = m.topic \/ Bug = "StopReplicaIgnoresTopicId")}
              IN
              IF ~fresh(p) \/ ~dirOnline[b] THEN UNCHANGED <<disk, appliedVersion, lost>>
              ELSE /\ disk' = [disk EXCEPT ![b][p] = [u \in TopicIds |->
                                  IF u \in gone THEN NoLog ELSE disk[b][p][u]]]
                   /\ appliedVersion' = [appliedVersion EXCEPT ![b][p] = v]
                   /\ lost' = lost \cup UNION {LostBy(b, p, u, disk[b][p][u], u = m.topic)
                                               : u \in gone}
         [] m.kind = "FULL" ->
              LET decided == {p \in Partitions : fresh(p)} IN
              IF dirOnline[b]
              THEN /\ disk' = [disk EXCEPT ![b] = [p \in Partitions |->
                                  IF p \in decided THEN FullRow(b, p, m.hosted)
                                  ELSE disk[b][p]]]
                   /\ appliedVersion' = [appliedVersion EXCEPT ![b] = [p \in Partitions |->
                                  IF p \in decided /\ VLt(appliedVersion[b][p], v) THEN v
                                  ELSE appliedVersion[b][p]]]
                   /\ UNCHANGED lost
              ELSE IF Bug = "NonNewReplicaWithDirOffline"
              THEN LET made == {pt \in m.hosted : pt[1] \in decided} IN
                   /\ disk' = [disk EXCEPT ![b] = [p \in Partitions |-> [u \in TopicIds |->
                                  IF <<p, u>> \in made THEN NewLog ELSE disk[b][p][u]]]]
                   /\ appliedVersion' = [appliedVersion EXCEPT ![b] = [p \in Partitions |->
                                  IF \E u \in TopicIds : <<p, u>> \in made THEN v
                                  ELSE appliedVersion[b][p]]]
                   /\ lost' = lost \cup UNION {LostBy(b, pt[1], pt[2], disk[b][pt[1]][pt[2]],
                                                      FALSE) : pt \in made}
              ELSE UNCHANGED <<disk, appliedVersion, lost>>
    /\ sawFull' = IF m.kind = "FULL" /\ dirOnline[b] THEN [sawFull EXCEPT ![b] = TRUE]
                  ELSE sawFull
    /\ UNCHANGED <<now, controllerEpoch, seq, topicId, replicas, assignedAt, online, brokerEpoch,
                   dirOnline, network>>

(* The delayed deletion of b's stray <<p, t>> (KIP-370). *)
DeleteStray(b, p, t) ==
    LET l == disk[b][p][t] IN
    /\ online[b] /\ dirOnline[b] /\ sawFull[b]
    /\ l.state = "stray"
    /\ now >= l.strayAt + StrayDeletionDelay
    /\ Bug # "NoAgeGuard" => now - l.lastWrite >= RetentionPeriod
    /\ disk' = [disk EXCEPT ![b][p][t] = NoLog]
    /\ lost' = lost \cup LostBy(b, p, t, l, FALSE)
    /\ UNCHANGED <<now, controllerEpoch, seq, topicId, replicas, assignedAt, online, brokerEpoch,
                   seenEpoch, appliedVersion, sawFull, dirOnline, network>>

Next ==
    \/ Tick
    \/ \E b \in Brokers, p \in Partitions : Append(b, p)
    \/ \E p \in Partitions, b \in Brokers : Assign(p, b)
    \/ \E p \in Partitions, b \in Brokers : Unassign(p, b)
    \/ \E p \in Partitions : DeleteTopic(p)
    \/ \E p \in Partitions, S \in SUBSET Brokers : CreateTopic(p, S)
    \/ \E b \in Brokers : StopBroker(b)
    \/ \E b \in Brokers : StartBroker(b)
    \/ ControllerFailover
    \/ \E b \in Brokers : FailDir(b)
    \/ \E b \in Brokers : RepairDir(b)
    \/ \E m \in network : Deliver(m)
    \/ \E b \in Brokers, p \in Partitions, t \in TopicIds : DeleteStray(b, p, t)
    \/ \E b \in Brokers, p \in Partitions, t \in TopicIds, w \in Times : Truncate(b, p, t, w)

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* NoNewDataDeleted, end to end: no log was ever deleted (or superseded by *)
(* an empty one) while its data was owed: data of a <<partition, topic     *)
(* id>> the controller assigns to that broker by a decision the broker     *)
(* had applied, or, for any deletion the controller did not order for that *)
(* very log, data younger than the retention period. The ghost `lost` is   *)
(* kept by every deleting step, so a missing guard is caught by the data   *)
(* it loses, not by the guard's text.                                      *)
(***************************************************************************)
NoNewDataDeleted == lost = {}

(* A broker never serves two topic ids of one partition name: at most one live log per name. *)
TopicIdentity ==
    \A b \in Brokers, p \in Partitions :
        Cardinality({t \in TopicIds : disk[b][p][t].state = "live"}) <= 1

=============================================================================
