---------------------------- MODULE StrayCleanup ----------------------------
(***************************************************************************)
(* Stray (orphan) partition cleanup on brokers: KIP-550 detection from a   *)
(* full LeaderAndIsr (containsAllReplicas), KIP-370 delayed deletion       *)
(* guarded by segment age, with the rename to a -stray dir in between      *)
(* (kafka-compatibility.md "What shipped, and what never did").                                           *)
(*                                                                         *)
(* A log on a broker's disk is identified by its partition name AND its    *)
(* topic id (partition.metadata): re-creating a topic under the same name  *)
(* gives a new id, and a log of the old id is stray, never the new one's.  *)
(*                                                                         *)
(* The protocol, as the broker follows it:                                 *)
(*  1. Only a full LeaderAndIsr whose controller epoch is not below the    *)
(*     highest the broker has seen decides what is stray: every live log   *)
(*     whose <<partition, topic id>> it does not list is renamed -stray.   *)
(*  2. A stray listed again (by any accepted request) is restored, not     *)
(*     re-fetched: re-hosting before deletion.                             *)
(*  3. A stray is deleted only by a broker that has applied a full request *)
(*     in its current incarnation, StrayDeletionDelay after it became     *)
(*     stray, and only when its newest segment is at least                 *)
(*     RetentionPeriod old; deletion matches partition AND topic id.       *)
(*                                                                         *)
(* The controller: its assignment (replicas, topicId) is the metadata      *)
(* store. A request to an online broker is applied in the step that        *)
(* changes the assignment (the controller's change completes when the      *)
(* broker acknowledges it); an offline broker learns everything from the   *)
(* full request after it starts. A deposed controller's last full request  *)
(* may arrive at any later time (network): that is the stale request the   *)
(* controller epoch fences. A broker learns the current controller epoch   *)
(* when it registers at start-up; fencing of earlier broker incarnations   *)
(* (KIP-380) is the subject of ControllerFencing.                          *)
(***************************************************************************)
EXTENDS Integers, FiniteSets

CONSTANTS
    Brokers,             \* broker ids, e.g. {1, 2}
    Partitions,          \* partition names (topic-partition), e.g. {1}
    MaxTopicId,          \* topic ids are 1..MaxTopicId; re-creations stop there
    MaxControllerEpoch,  \* failovers stop at this controller epoch
    MaxTime,             \* the clock stops at this time
    RetentionPeriod,     \* a stray whose newest segment is younger than this is never deleted
    StrayDeletionDelay,  \* a stray is deleted no earlier than this long after it became stray
    Bug                  \* "none", or the name of the injected bug:
                         \*   "StaleEpochStrayDeletion"  a full request from a stale controller
                         \*                              epoch still decides what is stray
                         \*   "NoAgeGuard"               strays deleted whatever their segments' age
                         \*   "TopicNameOnlyMatch"       a stray's deletion matches the partition
                         \*                              name only: every log of it goes

TopicIds == 1..MaxTopicId
Times == 0..MaxTime

(* One log dir on a broker, for one <<partition, topic id>>. state: "none" (no dir), "live" (the  *)
(* partition dir), "stray" (renamed -stray). lastWrite: time of the newest write to its newest    *)
(* segment (its age is now - lastWrite). strayAt: when it was renamed -stray (0 unless stray).    *)
Log == [state: {"none", "live", "stray"}, lastWrite: Times, strayAt: Times]
NoLog == [state |-> "none", lastWrite |-> 0, strayAt |-> 0]

VARIABLES
    now,                   \* the clock
    controllerEpoch,       \* store: the epoch of the current controller
    topicId,               \* store: partition -> topic id of its current topic
    replicas,              \* store: partition -> brokers the current controller assigns it to
    online,                \* broker -> whether it is running
    sawFullRequest,        \* broker -> whether this incarnation applied a full LeaderAndIsr
    brokerControllerEpoch, \* broker -> highest controller epoch it has seen
    disk,                  \* broker -> partition -> topic id -> Log (durable across restarts)
    network,               \* full LeaderAndIsr requests of deposed controllers, still in flight
    lastStrayDeletion      \* ghost: the logs the step into this state deleted as strays, each
                           \*   <<broker, partition, topic id, assigned then, age then>>; {} after
                           \*   any other step

vars == <<now, controllerEpoch, topicId, replicas, online, sawFullRequest, brokerControllerEpoch,
          disk, network, lastStrayDeletion>>

(* A full LeaderAndIsr: its controller epoch, its broker, the <<partition, topic id>> it lists.   *)
FullRequest == [epoch: 1..MaxControllerEpoch, broker: Brokers,
                hosted: SUBSET (Partitions \X TopicIds)]

TypeOK ==
    /\ now \in Times
    /\ controllerEpoch \in 1..MaxControllerEpoch
    /\ topicId \in [Partitions -> TopicIds]
    /\ replicas \in [Partitions -> SUBSET Brokers]
    /\ online \in [Brokers -> BOOLEAN]
    /\ sawFullRequest \in [Brokers -> BOOLEAN]
    /\ brokerControllerEpoch \in [Brokers -> 1..MaxControllerEpoch]
    /\ disk \in [Brokers -> [Partitions -> [TopicIds -> Log]]]
    /\ \A m \in network : m \in FullRequest
    /\ lastStrayDeletion \subseteq Brokers \X Partitions \X TopicIds \X BOOLEAN \X Times

(* Whether the current controller assigns <<p, t>> to broker b. *)
Assigned(b, p, t) == b \in replicas[p] /\ t = topicId[p]

(* What the current controller lists for b in a full LeaderAndIsr. *)
View(b) == {<<p, topicId[p]>> : p \in {q \in Partitions : b \in replicas[q]}}

(* Every step but a stray deletion leaves the ghost empty. *)
ClearGhost == lastStrayDeletion' = {}

NewLog == [state |-> "live", lastWrite |-> now, strayAt |-> 0]

(* b hosts <<p, t>>: a stray is restored (re-hosting before deletion), a missing log created.    *)
HostedLog(l) == IF l.state = "none" THEN NewLog ELSE [l EXCEPT !.state = "live", !.strayAt = 0]

(* b's logs after it applies a full request listing `hosted`: what is listed is hosted, every     *)
(* live log not listed is renamed -stray, strays not listed stay strays.                          *)
AfterFull(b, hosted) ==
    [p \in Partitions |-> [t \in TopicIds |->
        LET l == disk[b][p][t] IN
        IF <<p, t>> \in hosted THEN HostedLog(l)
        ELSE IF l.state = "live" THEN [l EXCEPT !.state = "stray", !.strayAt = now]
        ELSE l]]

Init ==
    /\ now = 0
    /\ controllerEpoch = 1
    /\ topicId = [p \in Partitions |-> 1]
    /\ replicas = [p \in Partitions |-> Brokers]
    /\ online = [b \in Brokers |-> TRUE]
    /\ sawFullRequest = [b \in Brokers |-> TRUE]
    /\ brokerControllerEpoch = [b \in Brokers |-> 1]
    /\ disk = [b \in Brokers |-> [p \in Partitions |-> [t \in TopicIds |->
                  IF t = 1 THEN [state |-> "live", lastWrite |-> 0, strayAt |-> 0] ELSE NoLog]]]
    /\ network = {}
    /\ lastStrayDeletion = {}

(* Time passes. *)
Tick ==
    /\ now < MaxTime
    /\ now' = now + 1
    /\ ClearGhost
    /\ UNCHANGED <<controllerEpoch, topicId, replicas, online, sawFullRequest,
                   brokerControllerEpoch, disk, network>>

(* A write (produce or replication) to b's live log of p: its newest segment is new again. *)
Append(b, p) ==
    LET t == topicId[p] IN
    /\ online[b] /\ sawFullRequest[b] /\ Assigned(b, p, t)
    /\ disk[b][p][t].state = "live"
    /\ disk' = [disk EXCEPT ![b][p][t].lastWrite = now]
    /\ ClearGhost
    /\ UNCHANGED <<now, controllerEpoch, topicId, replicas, online, sawFullRequest,
                   brokerControllerEpoch, network>>

(* The controller adds b to p's replicas (a reassignment). An online broker applies the           *)
(* LeaderAndIsr at once: it hosts the log, restoring its stray if it has one.                     *)
Assign(p, b) ==
    /\ b \notin replicas[p]
    /\ replicas' = [replicas EXCEPT ![p] = @ \cup {b}]
    /\ IF online[b]
       THEN /\ disk' = [disk EXCEPT ![b][p][topicId[p]] = HostedLog(@)]
            /\ brokerControllerEpoch' = [brokerControllerEpoch EXCEPT ![b] = controllerEpoch]
       ELSE UNCHANGED <<disk, brokerControllerEpoch>>
    /\ ClearGhost
    /\ UNCHANGED <<now, controllerEpoch, topicId, online, sawFullRequest, network>>

(* The controller removes b from p's replicas. An online broker applies StopReplica(delete) at    *)
(* once; an offline one keeps the log, which becomes an orphan.                                   *)
Unassign(p, b) ==
    /\ b \in replicas[p]
    /\ replicas' = [replicas EXCEPT ![p] = @ \ {b}]
    /\ IF online[b]
       THEN /\ disk' = [disk EXCEPT ![b][p][topicId[p]] = NoLog]
            /\ brokerControllerEpoch' = [brokerControllerEpoch EXCEPT ![b] = controllerEpoch]
       ELSE UNCHANGED <<disk, brokerControllerEpoch>>
    /\ ClearGhost
    /\ UNCHANGED <<now, controllerEpoch, topicId, online, sawFullRequest, network>>

(* The topic of p is deleted and created again under the same name with a new topic id, assigned  *)
(* to S. Online old replicas delete their log; online new replicas create one; offline brokers    *)
(* keep the old-id log as an orphan.                                                              *)
RecreateTopic(p, S) ==
    LET old == topicId[p]
        new == topicId[p] + 1
        told == {b \in Brokers : online[b] /\ b \in replicas[p] \cup S}
    IN
    /\ topicId[p] < MaxTopicId
    /\ topicId' = [topicId EXCEPT ![p] = new]
    /\ replicas' = [replicas EXCEPT ![p] = S]
    /\ disk' = [b \in Brokers |->
                  IF b \in told
                  THEN [disk[b] EXCEPT ![p][old] = IF b \in replicas[p] THEN NoLog ELSE @,
                                       ![p][new] = IF b \in S THEN NewLog ELSE @]
                  ELSE disk[b]]
    /\ brokerControllerEpoch' = [b \in Brokers |->
                                   IF b \in told THEN controllerEpoch
                                   ELSE brokerControllerEpoch[b]]
    /\ ClearGhost
    /\ UNCHANGED <<now, controllerEpoch, online, sawFullRequest, network>>

(* b stops (crash or shutdown): its disk stays, its memory is lost. *)
StopBroker(b) ==
    /\ online[b]
    /\ online' = [online EXCEPT ![b] = FALSE]
    /\ sawFullRequest' = [sawFullRequest EXCEPT ![b] = FALSE]
    /\ ClearGhost
    /\ UNCHANGED <<now, controllerEpoch, topicId, replicas, brokerControllerEpoch, disk, network>>

(* b starts and registers, learning the current controller epoch. Its strays stay strays. *)
StartBroker(b) ==
    /\ ~online[b]
    /\ online' = [online EXCEPT ![b] = TRUE]
    /\ brokerControllerEpoch' = [brokerControllerEpoch EXCEPT ![b] = controllerEpoch]
    /\ ClearGhost
    /\ UNCHANGED <<now, controllerEpoch, topicId, replicas, sawFullRequest, disk, network>>

(* The current controller sends b the full LeaderAndIsr (containsAllReplicas): after b starts,    *)
(* or after a failover. b applies it: KIP-550 stray detection.                                    *)
SendFullLeaderAndIsr(b) ==
    /\ online[b]
    /\ sawFullRequest[b] => brokerControllerEpoch[b] < controllerEpoch
    /\ disk' = [disk EXCEPT ![b] = AfterFull(b, View(b))]
    /\ sawFullRequest' = [sawFullRequest EXCEPT ![b] = TRUE]
    /\ brokerControllerEpoch' = [brokerControllerEpoch EXCEPT ![b] = controllerEpoch]
    /\ ClearGhost
    /\ UNCHANGED <<now, controllerEpoch, topicId, replicas, online, network>>

(* A new controller is elected. The deposed one's last full requests, one per broker, listing     *)
(* its (now frozen) view, may still be delivered later.                                           *)
ControllerFailover ==
    /\ controllerEpoch < MaxControllerEpoch
    /\ controllerEpoch' = controllerEpoch + 1
    /\ network' = network \cup {[epoch |-> controllerEpoch, broker |-> b, hosted |-> View(b)]
                                : b \in Brokers}
    /\ ClearGhost
    /\ UNCHANGED <<now, topicId, replicas, online, sawFullRequest, brokerControllerEpoch, disk>>

(* A deposed controller's full request reaches its broker. One below the broker's controller      *)
(* epoch is rejected (STALE_CONTROLLER_EPOCH) and changes nothing.                                *)
DeliverDelayedLeaderAndIsr(m) ==
    LET b == m.broker IN
    /\ m \in network
    /\ online[b]
    /\ network' = network \ {m}
    /\ IF m.epoch >= brokerControllerEpoch[b] \/ Bug = "StaleEpochStrayDeletion"
       THEN /\ disk' = [disk EXCEPT ![b] = AfterFull(b, m.hosted)]
            /\ sawFullRequest' = [sawFullRequest EXCEPT ![b] = TRUE]
            /\ brokerControllerEpoch' = [brokerControllerEpoch EXCEPT ![b] =
                                           IF m.epoch > @ THEN m.epoch ELSE @]
       ELSE UNCHANGED <<disk, sawFullRequest, brokerControllerEpoch>>
    /\ ClearGhost
    /\ UNCHANGED <<now, controllerEpoch, topicId, replicas, online>>

(* The delayed deletion of b's stray <<p, t>> (KIP-370): only after this incarnation applied a    *)
(* full request, StrayDeletionDelay after the rename, and when its newest segment is at least     *)
(* RetentionPeriod old. The deleted dirs are matched by partition and topic id.                   *)
DeleteStray(b, p, t) ==
    LET l == disk[b][p][t]
        gone == IF Bug = "TopicNameOnlyMatch"
                THEN {u \in TopicIds : disk[b][p][u].state # "none"}
                ELSE {t}
    IN
    /\ online[b] /\ sawFullRequest[b]
    /\ l.state = "stray"
    /\ now >= l.strayAt + StrayDeletionDelay
    /\ Bug # "NoAgeGuard" => now - l.lastWrite >= RetentionPeriod
    /\ disk' = [disk EXCEPT ![b][p] = [u \in TopicIds |->
                                          IF u \in gone THEN NoLog ELSE disk[b][p][u]]]
    /\ lastStrayDeletion' = {<<b, p, u, Assigned(b, p, u), now - disk[b][p][u].lastWrite>>
                             : u \in gone}
    /\ UNCHANGED <<now, controllerEpoch, topicId, replicas, online, sawFullRequest,
                   brokerControllerEpoch, network>>

Next ==
    \/ Tick
    \/ \E b \in Brokers, p \in Partitions : Append(b, p)
    \/ \E p \in Partitions, b \in Brokers : Assign(p, b)
    \/ \E p \in Partitions, b \in Brokers : Unassign(p, b)
    \/ \E p \in Partitions, S \in SUBSET Brokers : RecreateTopic(p, S)
    \/ \E b \in Brokers : StopBroker(b)
    \/ \E b \in Brokers : StartBroker(b)
    \/ \E b \in Brokers : SendFullLeaderAndIsr(b)
    \/ ControllerFailover
    \/ \E m \in network : DeliverDelayedLeaderAndIsr(m)
    \/ \E b \in Brokers, p \in Partitions, t \in TopicIds : DeleteStray(b, p, t)

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* NoNewDataDeleted (the stray-cleanup part of architecture.md's invariant): no  *)
(* stray deletion removes a log that the current controller assigns to     *)
(* that broker (same partition, same topic id), nor one whose newest       *)
(* segment is younger than the retention period. The controller's own     *)
(* deletions (StopReplica, topic deletion) remove only what it no longer   *)
(* assigns, by construction.                                               *)
(***************************************************************************)
NoNewDataDeleted ==
    \A d \in lastStrayDeletion : ~d[4] /\ d[5] >= RetentionPeriod

=============================================================================
