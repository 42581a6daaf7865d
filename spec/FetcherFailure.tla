--------------------------- MODULE FetcherFailure ---------------------------
(***************************************************************************)
(* Failed partitions in replica fetchers (KIP-461, hazards 5 and 6).       *)
(*                                                                         *)
(* A follower broker fetches its partitions through fetcher threads; each  *)
(* partition always goes to the same fetcher (Kafka hashes the partition   *)
(* onto one of num.replica.fetchers threads). A partition that fails (a    *)
(* storage error, or a fence at its current leader epoch) leaves its       *)
(* fetcher's partition states and enters the failed set; the fetcher goes  *)
(* on with the others, and shuts down once it has nothing left. A          *)
(* LeaderAndIsr with a newer leader epoch un-fails the partition and adds  *)
(* it back; StopReplica removes it from the fetcher and from the failed    *)
(* set. Fetch requests carry the leader epoch the fetcher had when it sent *)
(* them, so their responses can arrive after a newer epoch is known.       *)
(***************************************************************************)
EXTENDS Integers

CONSTANTS
    NumPartitions,   \* partitions 1..NumPartitions, followers on this broker
    NumFetchers,     \* fetcher threads 1..NumFetchers (num.replica.fetchers)
    MaxLeaderEpoch,  \* leader elections stop at this leader epoch
    Bug              \* "none", or the name of the injected bug:
                     \*   "FailWholeFetcher"          a partition failure kills its fetcher (hazard 5)
                     \*   "FenceWithStaleEpochFails"  a fence fails the partition whatever the
                     \*                               request's epoch (hazard 6)
                     \*   "NoUnfailOnNewEpoch"        a newer leader epoch leaves it failed
                     \*   "StaleFenceStalls"          a stale fence is dropped with the fetch
                     \*                               still outstanding: no fetch is sent again

Partitions == 1..NumPartitions
Fetchers == 1..NumFetchers

\* The fetcher a partition is assigned to, fixed as Kafka's hash of the partition is.
FetcherOf(p) == ((p - 1) % NumFetchers) + 1

NotHosted == -1  \* knownEpoch of a partition with no replica here
NotFailed == -1  \* failedEpoch of a partition that is not in the failed set
NoFetch == -1    \* inflight of a partition with no fetch request outstanding

VARIABLES
    leaderEpoch,  \* partition -> its leader epoch at the leader (set by the controller)
    knownEpoch,   \* partition -> the leader epoch this follower got from its last LeaderAndIsr,
                  \*   or NotHosted; it is also the epoch in the fetcher's partition state
    fetching,     \* partition -> whether it is in its fetcher's partition states
    failedEpoch,  \* partition -> the leader epoch at which it failed (it is in the failed set),
                  \*   or NotFailed
    inflight,     \* partition -> the leader epoch of its outstanding fetch request, or NoFetch
    alive         \* fetcher -> whether its thread is running

vars == <<leaderEpoch, knownEpoch, fetching, failedEpoch, inflight, alive>>

TypeOK ==
    /\ leaderEpoch \in [Partitions -> 0..MaxLeaderEpoch]
    /\ knownEpoch \in [Partitions -> {NotHosted} \cup 0..MaxLeaderEpoch]
    /\ fetching \in [Partitions -> BOOLEAN]
    /\ failedEpoch \in [Partitions -> {NotFailed} \cup 0..MaxLeaderEpoch]
    /\ inflight \in [Partitions -> {NoFetch} \cup 0..MaxLeaderEpoch]
    /\ alive \in [Fetchers -> BOOLEAN]

Init ==
    /\ leaderEpoch = [p \in Partitions |-> 0]
    /\ knownEpoch = [p \in Partitions |-> NotHosted]
    /\ fetching = [p \in Partitions |-> FALSE]
    /\ failedEpoch = [p \in Partitions |-> NotFailed]
    /\ inflight = [p \in Partitions |-> NoFetch]
    /\ alive = [f \in Fetchers |-> FALSE]

(* The controller elects a new leader for p: its leader epoch goes up. *)
ElectLeader(p) ==
    /\ leaderEpoch[p] < MaxLeaderEpoch
    /\ leaderEpoch' = [leaderEpoch EXCEPT ![p] = @ + 1]
    /\ UNCHANGED <<knownEpoch, fetching, failedEpoch, inflight, alive>>

(* A LeaderAndIsr with a newer leader epoch makes this broker a follower of p at that epoch: p   *)
(* leaves the failed set and is added to its fetcher, whose thread starts if it was not running. *)
(* A LeaderAndIsr whose epoch is not newer is ignored (not modelled).                            *)
LeaderAndIsr(p) ==
    /\ knownEpoch[p] < leaderEpoch[p]
    /\ knownEpoch' = [knownEpoch EXCEPT ![p] = leaderEpoch[p]]
    /\ IF Bug = "NoUnfailOnNewEpoch" /\ failedEpoch[p] # NotFailed
       THEN UNCHANGED <<fetching, failedEpoch, alive>>
       ELSE /\ failedEpoch' = [failedEpoch EXCEPT ![p] = NotFailed]
            /\ fetching' = [fetching EXCEPT ![p] = TRUE]
            /\ alive' = [alive EXCEPT ![FetcherOf(p)] = TRUE]
    /\ UNCHANGED <<leaderEpoch, inflight>>

(* p's fetcher sends a fetch request for p, carrying p's leader epoch in its partition state. *)
FetchRequest(p) ==
    /\ fetching[p]
    /\ alive[FetcherOf(p)]
    /\ inflight[p] = NoFetch
    /\ inflight' = [inflight EXCEPT ![p] = knownEpoch[p]]
    /\ UNCHANGED <<leaderEpoch, knownEpoch, fetching, failedEpoch, alive>>

(* The leader answers p's fetch with records: its epoch is the leader's. The fetcher appends them  *)
(* (progress is not modelled) or, if p left the fetcher meanwhile, discards them.                  *)
FetchOk(p) ==
    /\ inflight[p] # NoFetch
    /\ inflight[p] = leaderEpoch[p]
    /\ inflight' = [inflight EXCEPT ![p] = NoFetch]
    /\ UNCHANGED <<leaderEpoch, knownEpoch, fetching, failedEpoch, alive>>

(* The leader answers FENCED_LEADER_EPOCH: the request's epoch is older than the leader's. The    *)
(* partition fails only if the request's epoch is still the fetcher's current epoch for p; if a   *)
(* newer epoch has arrived meanwhile the fence is stale and the fetcher just fetches again.       *)
FetchFenced(p) ==
    /\ inflight[p] # NoFetch
    /\ inflight[p] < leaderEpoch[p]
    /\ Bug = "StaleFenceStalls" => fetching[p] /\ inflight[p] = knownEpoch[p]
    /\ inflight' = [inflight EXCEPT ![p] = NoFetch]
    /\ IF fetching[p] /\ (inflight[p] = knownEpoch[p] \/ Bug = "FenceWithStaleEpochFails")
       THEN /\ failedEpoch' = [failedEpoch EXCEPT ![p] = inflight[p]]
            /\ fetching' = [fetching EXCEPT ![p] = FALSE]
       ELSE UNCHANGED <<failedEpoch, fetching>>
    /\ UNCHANGED <<leaderEpoch, knownEpoch, alive>>

(* p's log dir fails while p's fetcher appends to it (KAFKA_STORAGE_ERROR): p fails at its       *)
(* current epoch and leaves the fetcher, which goes on with its other partitions.                 *)
StorageError(p) ==
    /\ fetching[p]
    /\ alive[FetcherOf(p)]
    /\ failedEpoch' = [failedEpoch EXCEPT ![p] = knownEpoch[p]]
    /\ fetching' = [fetching EXCEPT ![p] = FALSE]
    /\ IF Bug = "FailWholeFetcher"
       THEN alive' = [alive EXCEPT ![FetcherOf(p)] = FALSE]
       ELSE UNCHANGED alive
    /\ UNCHANGED <<leaderEpoch, knownEpoch, inflight>>

(* StopReplica: the replica of p is removed from this broker, from its fetcher and from the      *)
(* failed set.                                                                                    *)
StopReplica(p) ==
    /\ knownEpoch[p] # NotHosted
    /\ knownEpoch' = [knownEpoch EXCEPT ![p] = NotHosted]
    /\ fetching' = [fetching EXCEPT ![p] = FALSE]
    /\ failedEpoch' = [failedEpoch EXCEPT ![p] = NotFailed]
    /\ UNCHANGED <<leaderEpoch, inflight, alive>>

(* A running fetcher with no partition left shuts down. *)
ShutdownIdle(f) ==
    /\ alive[f]
    /\ \A p \in Partitions : FetcherOf(p) = f => ~fetching[p]
    /\ alive' = [alive EXCEPT ![f] = FALSE]
    /\ UNCHANGED <<leaderEpoch, knownEpoch, fetching, failedEpoch, inflight>>

Next ==
    \/ \E p \in Partitions : ElectLeader(p)
    \/ \E p \in Partitions : LeaderAndIsr(p)
    \/ \E p \in Partitions : FetchRequest(p)
    \/ \E p \in Partitions : FetchOk(p)
    \/ \E p \in Partitions : FetchFenced(p)
    \/ \E p \in Partitions : StorageError(p)
    \/ \E p \in Partitions : StopReplica(p)
    \/ \E f \in Fetchers : ShutdownIdle(f)

(* What p's fetcher does for p: send its fetch, or handle the answer. *)
FetcherStep(p) == FetchRequest(p) \/ FetchOk(p) \/ FetchFenced(p)

(* A running fetcher keeps serving each of its partitions: weak fairness of each partition's    *)
(* fetch actions. Nothing else is fair: elections, LeaderAndIsr, StopReplica, storage errors and *)
(* shutdowns may or may not happen.                                                             *)
Fairness == \A p \in Partitions : WF_vars(FetcherStep(p))

Spec == Init /\ [][Next]_vars /\ Fairness

(***************************************************************************)
(* FailureContained: a failure stays with its partition.                   *)
(* - A hosted partition that is not failed is in its fetcher's partition   *)
(*   states, and that fetcher is running: no failure elsewhere stops it.   *)
(* - A partition in a fetcher's partition states is never in a dead one.  *)
(* - A failed partition is not fetched.                                    *)
(* - A failed partition failed at the leader epoch this broker now knows:  *)
(*   a newer epoch always un-fails, and a stale fence never fails.         *)
(***************************************************************************)
FailureContained ==
    \A p \in Partitions :
        /\ knownEpoch[p] # NotHosted /\ failedEpoch[p] = NotFailed => fetching[p]
        /\ fetching[p] => alive[FetcherOf(p)]
        /\ failedEpoch[p] # NotFailed => ~fetching[p]
        /\ failedEpoch[p] # NotFailed => failedEpoch[p] = knownEpoch[p]

(***************************************************************************)
(* HealthyPartitionsFetch (liveness, KIP-461's goal): a partition hosted   *)
(* here that stays not failed keeps completing fetches, whatever happens   *)
(* to the other partitions, under the fairness of Spec.                    *)
(***************************************************************************)
Healthy(p) == knownEpoch[p] # NotHosted /\ failedEpoch[p] = NotFailed

HealthyPartitionsFetch ==
    \A p \in Partitions : <>[]Healthy(p) => []<><<FetchOk(p)>>_vars

=============================================================================
