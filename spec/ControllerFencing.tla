-------------------------- MODULE ControllerFencing --------------------------
(***************************************************************************)
(* Fencing of control requests by controller epoch and broker epoch, and  *)
(* of metadata-store writes by controller epoch (kafka-compatibility.md "Fencing",    *)
(* hazards 3 and 4).                                                       *)
(*                                                                         *)
(* Controllers: a failover makes a new controller with the next epoch; the *)
(* deposed ones do not notice and keep sending requests and attempting     *)
(* writes. Every controller 1..controllerEpoch is therefore still running. *)
(* Brokers: each restart is a new incarnation that registers and gets a    *)
(* new, larger broker epoch. The network is a set of requests in flight:   *)
(* a request can be delivered any number of times (duplication), in any   *)
(* order (reordering), or dropped (loss).                                  *)
(*                                                                         *)
(* One partition has a replica on every broker; its leader epoch is       *)
(* written to the store by controllers and carried by LeaderAndIsr and     *)
(* StopReplica.                                                            *)
(***************************************************************************)
EXTENDS Integers, FiniteSets

CONSTANTS
    Brokers,             \* broker ids, e.g. {1}
    MaxControllerEpoch,  \* failovers stop at this controller epoch
    MaxBrokerEpoch,      \* registrations (restarts) of a broker stop at this broker epoch
    MaxLeaderEpoch,      \* leader elections stop at this leader epoch
    MaxInFlight,         \* at most this many distinct requests in flight
    Bug                  \* "none", or the name of the injected bug:
                         \*   "NoControllerEpochCheck"  brokers skip the controller epoch check
                         \*   "NoBrokerEpochCheck"      brokers skip the broker epoch check (hazard 3)
                         \*   "UnconditionalStoreWrite" store writes ignore the controller epoch (hazard 4)
                         \*   "NoControllerEpochRecorded" brokers check the controller epoch but
                         \*                               never record the one they accept

NotHosted == -1            \* replicaEpoch of a broker that holds no replica of the partition
NoBrokerEpoch == -1        \* a request's broker epoch when the sender does not know it (never rejected)
None == <<>>               \* the ghost variables before anything was recorded

VARIABLES
    controllerEpoch,       \* store: the epoch of the active controller (its conditional-write token)
    leaderEpoch,           \* store: the partition's leader epoch, as last written by a controller
    brokerEpoch,           \* broker -> epoch of its current incarnation (its latest registration)
    brokerControllerEpoch, \* broker -> controller epoch of the last request this incarnation
                           \*   accepted (0: none yet; in memory, so a restart forgets it)
    replicaEpoch,          \* broker -> leader epoch of its replica, or NotHosted (kept on disk)
    network,               \* the set of control requests in flight
    lastApply,             \* ghost: broker -> <<request's controller epoch, request's broker epoch,
                           \*   broker's controller epoch before, broker's own epoch before>> of
                           \*   the last request that changed the broker, or None
    lastStoreWrite,        \* ghost: <<writer's controller epoch, store's controller epoch at the
                           \*   time>> of the last store write that landed, or None
    appliedEpoch,          \* ghost: broker -> the highest controller epoch of a request this
                           \*   incarnation applied (0: none yet); kept by the model, not by the
                           \*   broker, so a broker that forgets what it accepted cannot hide it
    replicaPeak            \* ghost: broker -> the highest leader epoch its replica has held
                           \*   since it was last created, or NotHosted while there is none

vars == <<controllerEpoch, leaderEpoch, brokerEpoch, brokerControllerEpoch, replicaEpoch,
          network, lastApply, lastStoreWrite, appliedEpoch, replicaPeak>>

RequestTypes == {"LeaderAndIsr", "StopReplica"}

Request == [type: RequestTypes, controllerEpoch: 1..MaxControllerEpoch, broker: Brokers,
            brokerEpoch: 1..MaxBrokerEpoch, leaderEpoch: 0..MaxLeaderEpoch]

TypeOK ==
    /\ controllerEpoch \in 1..MaxControllerEpoch
    /\ leaderEpoch \in 0..MaxLeaderEpoch
    /\ brokerEpoch \in [Brokers -> 1..MaxBrokerEpoch]
    /\ brokerControllerEpoch \in [Brokers -> 0..MaxControllerEpoch]
    /\ replicaEpoch \in [Brokers -> {NotHosted} \cup 0..MaxLeaderEpoch]
    /\ network \subseteq Request
    /\ Cardinality(network) <= MaxInFlight
    /\ \A b \in Brokers : lastApply[b] = None \/
          lastApply[b] \in (1..MaxControllerEpoch) \X (1..MaxBrokerEpoch)
                           \X (0..MaxControllerEpoch) \X (1..MaxBrokerEpoch)
    /\ lastStoreWrite = None \/
          lastStoreWrite \in (1..MaxControllerEpoch) \X (1..MaxControllerEpoch)
    /\ appliedEpoch \in [Brokers -> 0..MaxControllerEpoch]
    /\ replicaPeak \in [Brokers -> {NotHosted} \cup 0..MaxLeaderEpoch]

Init ==
    /\ controllerEpoch = 1
    /\ leaderEpoch = 0
    /\ brokerEpoch = [b \in Brokers |-> 1]
    /\ brokerControllerEpoch = [b \in Brokers |-> 0]
    /\ replicaEpoch = [b \in Brokers |-> NotHosted]
    /\ network = {}
    /\ lastApply = [b \in Brokers |-> None]
    /\ lastStoreWrite = None
    /\ appliedEpoch = [b \in Brokers |-> 0]
    /\ replicaPeak = [b \in Brokers |-> NotHosted]

(* A failover: a new controller wins the election and bumps the controller epoch in the store.    *)
(* The previous controllers keep running with their old epochs.                                   *)
ElectController ==
    /\ controllerEpoch < MaxControllerEpoch
    /\ controllerEpoch' = controllerEpoch + 1
    /\ UNCHANGED <<leaderEpoch, brokerEpoch, brokerControllerEpoch, replicaEpoch, network,
                   lastApply, lastStoreWrite, appliedEpoch, replicaPeak>>

(* Controller c elects a new partition leader: it writes the next leader epoch to the store. The  *)
(* write is conditional on c still being the store's controller epoch, so a deposed controller's  *)
(* attempt fails and changes nothing (a stuttering step, not modelled).                           *)
ElectLeader(c) ==
    /\ leaderEpoch < MaxLeaderEpoch
    /\ Bug # "UnconditionalStoreWrite" => c = controllerEpoch
    /\ leaderEpoch' = leaderEpoch + 1
    /\ lastStoreWrite' = <<c, controllerEpoch>>
    /\ UNCHANGED <<controllerEpoch, brokerEpoch, brokerControllerEpoch, replicaEpoch, network,
                   lastApply, appliedEpoch, replicaPeak>>

(* Broker b restarts and registers again: a new incarnation with a larger broker epoch. What it   *)
(* kept in memory (the controller epoch it had accepted) is lost; its log (replicaEpoch) is kept. *)
Register(b) ==
    /\ brokerEpoch[b] < MaxBrokerEpoch
    /\ brokerEpoch' = [brokerEpoch EXCEPT ![b] = @ + 1]
    /\ brokerControllerEpoch' = [brokerControllerEpoch EXCEPT ![b] = 0]
    /\ appliedEpoch' = [appliedEpoch EXCEPT ![b] = 0]
    /\ UNCHANGED <<controllerEpoch, leaderEpoch, replicaEpoch, network, lastApply,
                   lastStoreWrite, replicaPeak>>

(* Controller c sends a request to broker b, addressed to broker epoch e and carrying leader      *)
(* epoch le. A controller's view may be out of date (a deposed controller stops learning), so it  *)
(* may use any broker epoch and leader epoch that has existed: this over-approximates every view. *)
Send(type, c, b, e, le) ==
    LET m == [type |-> type, controllerEpoch |-> c, broker |-> b, brokerEpoch |-> e,
              leaderEpoch |-> le]
    IN /\ Cardinality(network) < MaxInFlight
       /\ m \notin network
       /\ network' = network \cup {m}
       /\ UNCHANGED <<controllerEpoch, leaderEpoch, brokerEpoch, brokerControllerEpoch,
                      replicaEpoch, lastApply, lastStoreWrite, appliedEpoch, replicaPeak>>

SendLeaderAndIsr(c, b, e, le) == Send("LeaderAndIsr", c, b, e, le)
SendStopReplica(c, b, e, le) == Send("StopReplica", c, b, e, le)

(* A request addressed to an older incarnation of b gets STALE_BROKER_EPOCH (one addressed to a   *)
(* newer incarnation, or to NoBrokerEpoch, does not); one from a lower controller epoch than b     *)
(* has accepted gets STALE_CONTROLLER_EPOCH. Either way it changes nothing.                       *)
StaleBrokerEpoch(b, m) == m.brokerEpoch # NoBrokerEpoch /\ m.brokerEpoch < brokerEpoch[b]
StaleControllerEpoch(b, m) == m.controllerEpoch < brokerControllerEpoch[b]

(* Whether broker b accepts request m. Written with implications, not disjunctions, so that TLC   *)
(* does not split the guard into branches that generate the same successor twice.                 *)
Accepts(b, m) ==
    /\ Bug # "NoBrokerEpochCheck" => ~StaleBrokerEpoch(b, m)
    /\ Bug # "NoControllerEpochCheck" => ~StaleControllerEpoch(b, m)

(* The replica's leader epoch after b applies m. LeaderAndIsr takes a newer leader epoch (an      *)
(* older or equal one is ignored); StopReplica removes the replica unless its leader epoch is     *)
(* older than the replica's (FENCED_LEADER_EPOCH).                                                *)
ReplicaAfter(b, m) ==
    IF m.type = "LeaderAndIsr"
    THEN IF m.leaderEpoch > replicaEpoch[b] THEN m.leaderEpoch ELSE replicaEpoch[b]
    ELSE IF replicaEpoch[b] # NotHosted /\ m.leaderEpoch >= replicaEpoch[b]
         THEN NotHosted ELSE replicaEpoch[b]

(* The controller epoch broker b remembers after accepting m: m's (with NoControllerEpochRecorded *)
(* the broker checks the epoch but never records it, so it keeps what it had).                     *)
RecordedEpoch(b, m) ==
    IF Bug = "NoControllerEpochRecorded" THEN brokerControllerEpoch[b] ELSE m.controllerEpoch

(* Broker m.broker receives m and applies it. The request stays in the network, so it may be      *)
(* delivered again (duplication). A rejected request, or one that changes nothing, is a           *)
(* stuttering step and is not modelled.                                                           *)
Deliver(m) ==
    LET b == m.broker IN
    /\ m \in network
    /\ Accepts(b, m)
    /\ ~(brokerControllerEpoch[b] = m.controllerEpoch /\ ReplicaAfter(b, m) = replicaEpoch[b])
    /\ brokerControllerEpoch' = [brokerControllerEpoch EXCEPT ![b] = RecordedEpoch(b, m)]
    /\ replicaEpoch' = [replicaEpoch EXCEPT ![b] = ReplicaAfter(b, m)]
    /\ lastApply' = [lastApply EXCEPT ![b] = <<m.controllerEpoch, m.brokerEpoch,
                                               brokerControllerEpoch[b], brokerEpoch[b]>>]
    /\ appliedEpoch' = [appliedEpoch EXCEPT ![b] = IF m.controllerEpoch > @
                                                   THEN m.controllerEpoch ELSE @]
    /\ replicaPeak' = [replicaPeak EXCEPT ![b] = IF ReplicaAfter(b, m) = NotHosted THEN NotHosted
                                                 ELSE IF ReplicaAfter(b, m) > @
                                                      THEN ReplicaAfter(b, m) ELSE @]
    /\ UNCHANGED <<controllerEpoch, leaderEpoch, brokerEpoch, network, lastStoreWrite>>

(* The network drops m. *)
Lose(m) ==
    /\ m \in network
    /\ network' = network \ {m}
    /\ UNCHANGED <<controllerEpoch, leaderEpoch, brokerEpoch, brokerControllerEpoch,
                   replicaEpoch, lastApply, lastStoreWrite, appliedEpoch, replicaPeak>>

Next ==
    \/ ElectController
    \/ \E c \in 1..controllerEpoch : ElectLeader(c)
    \/ \E b \in Brokers : Register(b)
    \/ \E c \in 1..controllerEpoch, b \in Brokers, le \in 0..leaderEpoch :
          \E e \in 1..brokerEpoch[b] : SendLeaderAndIsr(c, b, e, le)
    \/ \E c \in 1..controllerEpoch, b \in Brokers, le \in 0..leaderEpoch :
          \E e \in 1..brokerEpoch[b] : SendStopReplica(c, b, e, le)
    \/ \E m \in network : Deliver(m)
    \/ \E m \in network : Lose(m)

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* StaleControllerFenced: no request from a controller epoch below the     *)
(* highest one the broker has accepted, nor addressed to an earlier broker *)
(* epoch, changes anything on that broker; and no write by a deposed       *)
(* controller lands in the store. The ghost variables record each change   *)
(* with what the broker (the store) knew just before it.                   *)
(***************************************************************************)
StaleControllerFenced ==
    /\ \A b \in Brokers :
          lastApply[b] = None
          \/ /\ lastApply[b][1] >= lastApply[b][3]
             /\ lastApply[b][2] = NoBrokerEpoch \/ lastApply[b][2] >= lastApply[b][4]
    /\ lastStoreWrite = None \/ lastStoreWrite[1] = lastStoreWrite[2]

(***************************************************************************)
(* BrokerFollowsLatestDecision: the same fences stated end to end, on what *)
(* each broker holds now rather than on what it knew when it checked.      *)
(* - The change the broker's current incarnation acts on (its replica's    *)
(*   leader epoch and the controller epoch it last took) came from the     *)
(*   latest controller this incarnation has taken a decision from: no      *)
(*   decision older than one it already applied overrides it. The model    *)
(*   keeps that latest epoch (appliedEpoch), not the broker, so a broker   *)
(*   that forgets the epoch it accepted does not hide the regression.      *)
(* - That change was addressed to the current incarnation (a request for   *)
(*   an earlier one cannot reach the state it acts on).                    *)
(* - The replica holds the newest leader epoch it has held since it was    *)
(*   created (replicaPeak, a ghost): no older decision took it back.       *)
(* - The replica never holds a leader epoch the store has not decided, and *)
(*   the store's latest decision was written by the controller the store   *)
(*   named at the time.                                                    *)
(***************************************************************************)
BrokerFollowsLatestDecision ==
    /\ \A b \in Brokers :
          /\ replicaEpoch[b] <= leaderEpoch
          /\ replicaEpoch[b] = replicaPeak[b]
          /\ lastApply[b] # None /\ lastApply[b][4] = brokerEpoch[b] =>
                /\ lastApply[b][1] = appliedEpoch[b]
                /\ lastApply[b][2] \in {NoBrokerEpoch, brokerEpoch[b]}
    /\ lastStoreWrite = None \/ lastStoreWrite[1] = lastStoreWrite[2]

=============================================================================
