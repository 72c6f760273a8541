"""The replica-layer state machine's facade: brokers, the controller, topics, produce, replication
and fault injection (the test harness on top of it is :class:`kgroup.testing.InMemoryKafka`)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from kgroup.core.cluster.config import ClusterConfig
from kgroup.core.cluster.election import (
    ElectionResult, elect_controlled_shutdown, elect_offline, elect_preferred, elect_reassignment,
)
from kgroup.core.cluster.partition import Partition
from kgroup.core.cluster.reassignment import Reassignment
from kgroup.core.cluster.states import BrokerState, PartitionState, ReplicaState
from kgroup.core.error_codes import ErrorCode
from kgroup.errors import ClusterError, ConfigError


class ClusterStateMachine:
    def __init__(self, config: ClusterConfig = ClusterConfig(), now_ms: int = 0) -> None:
        if not config.broker_ids:
            raise ConfigError("a cluster needs at least one broker")
        self.config = config
        self.now_ms = now_ms
        self.brokers: Dict[int, BrokerState] = {b: BrokerState.LIVE for b in config.broker_ids}
        self.isolated: set = set()
        self.fetch_interval_ms: Dict[int, int] = {}  # slowed followers
        self.last_fetch_ms: Dict[int, int] = {}
        self.controller_id: Optional[int] = None
        self.controller_epoch = 0
        self.topics: Dict[str, List[Partition]] = {}
        self.reassignments: Dict[Tuple[str, int], Reassignment] = {}
        # (topic, partition, leader epoch, leader, unclean) per election, in order.
        self.elections: List[Tuple[str, int, int, Optional[int], bool]] = []
        self._next_replication_ms = now_ms
        #: Partitions the periodic fetch round visits: every one not found quiet since it was last
        #: touched (see Partition.is_quiet).  Idle partitions cost nothing per round, so a cluster
        #: of 100,000 idle partitions ticks as cheaply as one of ten.
        self._active: Dict[Tuple[str, int], Partition] = {}
        #: Partition visits made by fetch rounds (periodic and explicit): a work counter for tests.
        self.partition_rounds = 0
        #: Called with (topic, partition count) after every topic deletion, whoever deletes it: the
        #: group hosting tombstones the topic's committed offsets (Kafka's metadata publisher calls
        #: GroupCoordinator.onPartitionsDeleted on every topic deletion it sees).
        self.topic_deletion_listeners: List[Callable[[str, int], None]] = []
        self._elect_controller()

    # -- brokers and controller ---------------------------------------------------
    def live_brokers(self) -> List[int]:
        return [b for b, s in self.brokers.items() if s is not BrokerState.DEAD and b not in self.isolated]

    def _elect_controller(self) -> None:
        live = self.live_brokers()
        new = min(live) if live else None
        if new != self.controller_id:
            self.controller_id = new
            if new is not None:
                self.controller_epoch += 1

    def partitions(self) -> List[Partition]:
        return [p for parts in self.topics.values() for p in parts]

    def wake(self, p: Partition) -> None:
        """Put ``p`` back into the periodic fetch round before something changes it.

        A quiet partition skipped rounds that would only have set ``last_caught_up_ms`` of each
        follower that fetched to that round's time; each broker's last fetch time is exactly
        that, so it is restored here and the ISR shrinks as if every round had run."""
        if p.key in self._active:
            return
        self._active[p.key] = p
        if p.leader is None:
            return
        for b in p.assigned:
            fetched_ms = self.last_fetch_ms.get(b)
            if b != p.leader and fetched_ms is not None and fetched_ms > p.last_caught_up_ms.get(b, 0):
                p.last_caught_up_ms[b] = fetched_ms

    def _wake_broker(self, broker: int) -> None:
        """Wake every partition with a replica on ``broker`` (a fault: proportional to partitions)."""
        for p in self.partitions():
            if broker in p.logs:
                self.wake(p)

    def active_partitions(self) -> int:
        """How many partitions the next periodic fetch round visits."""
        return len(self._active)

    def partition(self, topic: str, index: int) -> Partition:
        try:
            return self.topics[topic][index]
        except (KeyError, IndexError):
            raise ClusterError(f"unknown partition {topic}-{index}",
                               ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) from None

    # -- topics -----------------------------------------------------------------
    def _assign(self, start: int, count: int, replication_factor: int) -> List[List[int]]:
        ids = sorted(self.brokers)
        if replication_factor > len(ids):
            raise ConfigError(f"replication factor {replication_factor} exceeds {len(ids)} brokers")
        return [[ids[(start + i + r) % len(ids)] for r in range(replication_factor)] for i in range(count)]

    def create_topic(self, name: str, partitions: int, replication_factor: Optional[int] = None,
                     assignments: Optional[Sequence[Sequence[int]]] = None) -> None:
        if name in self.topics:
            raise ClusterError(f"topic {name} exists", ErrorCode.TOPIC_ALREADY_EXISTS)
        rf = replication_factor or min(self.config.default_replication_factor, len(self.brokers))
        replicas = [list(a) for a in assignments] if assignments else self._assign(0, partitions, rf)
        self.topics[name] = []
        self._add(name, replicas)

    def add_partitions(self, name: str, count: int) -> None:
        existing = self.topics[name]
        rf = len(existing[0].assigned)
        self._add(name, self._assign(len(existing), count, rf))

    def _add(self, name: str, replicas: List[List[int]]) -> None:
        parts = self.topics[name]
        for assigned in replicas:
            p = Partition(name, len(parts), assigned, self.config.min_insync_replicas)
            self._active[p.key] = p
            p.state.transition_to(PartitionState.NEW)
            for b in assigned:
                p.replica_states[b].transition_to(ReplicaState.NEW)
            parts.append(p)
            live = self.live_brokers()
            p.isr = [b for b in assigned if b in live]
            self._elect(p, elect_offline(assigned, p.isr, live, False))
            for b in assigned:
                target = ReplicaState.ONLINE if b in live else ReplicaState.OFFLINE
                p.replica_states[b].transition_to(target)

    def delete_topic(self, name: str) -> None:
        deleted = self.topics.pop(name)
        for p in deleted:
            self._active.pop(p.key, None)
            if p.state.state is PartitionState.ONLINE or p.state.state is PartitionState.NEW:
                p.state.transition_to(PartitionState.OFFLINE)
            p.state.transition_to(PartitionState.NON_EXISTENT)
            for sm in p.replica_states.values():
                sm.transition_to(ReplicaState.OFFLINE)
                sm.transition_to(ReplicaState.DELETION_STARTED)
                sm.transition_to(ReplicaState.DELETION_SUCCESSFUL)
                sm.transition_to(ReplicaState.NON_EXISTENT)
        for listener in list(self.topic_deletion_listeners):
            listener(name, len(deleted))

    # -- elections --------------------------------------------------------------
    def _elect(self, p: Partition, result: ElectionResult) -> None:
        self.wake(p)
        if result.leader is None:
            p.set_leader(None, self.now_ms)
            if p.state.state is not PartitionState.OFFLINE:
                p.state.transition_to(PartitionState.OFFLINE)
        else:
            p.set_leader(result.leader, self.now_ms, unclean=result.unclean)
            p.state.transition_to(PartitionState.ONLINE)
        self.elections.append((p.topic, p.index, p.leader_epoch, p.leader, result.unclean))

    def _elect_offline(self, p: Partition, live: List[int]) -> None:
        self._elect(p, elect_offline(p.assigned, p.isr, live, self.config.unclean_leader_election_enable))

    def _on_brokers_failed(self, failed: List[int]) -> None:
        live = self.live_brokers()
        for p in self.partitions():
            hit = [b for b in failed if b in p.logs]
            if not hit:
                continue
            for b in hit:
                p.replica_states[b].transition_to(ReplicaState.OFFLINE)
            # Kafka keeps the last ISR member in the ISR so it can be elected cleanly when it returns.
            remaining = [b for b in p.isr if b not in hit]
            p.isr = remaining or ([p.isr[0]] if p.isr else [])
            if p.leader in hit or (p.leader is None and p.state.state is PartitionState.OFFLINE):
                self._elect_offline(p, live)

    def _on_brokers_started(self, started: List[int]) -> None:
        live = self.live_brokers()
        for p in self.partitions():
            for b in started:
                if b in p.logs:
                    p.replica_states[b].transition_to(ReplicaState.ONLINE)
                    p.needs_truncation.add(b)
                    if not self.config.leader_epoch_truncation:
                        p.logs[b].truncate_to(p.logs[b].hw)
            if p.leader is None:
                self._elect_offline(p, live)

    def elect_preferred_leaders(self) -> None:
        live = self.live_brokers()
        for p in self.partitions():
            if p.leader != p.assigned[0]:
                result = elect_preferred(p.assigned, p.isr, live)
                if result.leader is not None:
                    self._elect(p, result)

    def elect_leader_from(self, p: Partition, candidates: Sequence[int]) -> Optional[int]:
        live = self.live_brokers()
        return elect_reassignment(list(candidates), p.isr, live).leader

    # -- fault injection ----------------------------------------------------------
    def kill_broker(self, broker: int) -> None:
        self._wake_broker(broker)
        self.brokers[broker] = BrokerState.DEAD
        self._elect_controller()
        self._on_brokers_failed([broker])

    def restart_broker(self, broker: int) -> None:
        self._wake_broker(broker)
        self.brokers[broker] = BrokerState.LIVE
        self._elect_controller()
        self._on_brokers_started([broker])

    def bounce_broker(self, broker: int) -> None:
        """Crash and restart within the session timeout: the controller never notices, ISR kept."""
        self._wake_broker(broker)
        for p in self.partitions():
            if broker in p.logs and broker != p.leader:
                p.needs_truncation.add(broker)
                if not self.config.leader_epoch_truncation:
                    p.logs[broker].truncate_to(p.logs[broker].hw)

    def controlled_shutdown(self, broker: int) -> None:
        self._wake_broker(broker)
        self.brokers[broker] = BrokerState.SHUTTING_DOWN
        live = self.live_brokers()
        for p in self.partitions():
            if p.leader == broker:
                result = elect_controlled_shutdown(p.assigned, p.isr, live, {broker})
                if result.leader is not None:
                    self._elect(p, result)
            if broker in p.isr and len(p.isr) > 1:
                p.isr.remove(broker)
        self.kill_broker(broker)

    def isolate_broker(self, broker: int) -> None:
        """Cut a broker off: its followers stop fetching and the controller treats it as failed."""
        self._wake_broker(broker)
        self.isolated.add(broker)
        self._elect_controller()
        self._on_brokers_failed([broker])

    def heal_broker(self, broker: int) -> None:
        self._wake_broker(broker)
        self.isolated.discard(broker)
        self._elect_controller()
        self._on_brokers_started([broker])

    def slow_follower(self, broker: int, fetch_interval_ms: Optional[int]) -> None:
        """Let ``broker`` fetch only every ``fetch_interval_ms`` (None restores normal speed)."""
        self._wake_broker(broker)
        if fetch_interval_ms is None:
            self.fetch_interval_ms.pop(broker, None)
        else:
            self.fetch_interval_ms[broker] = fetch_interval_ms

    # -- produce and replication -------------------------------------------------
    def produce(self, topic: str, index: int, payload: Any, acks_all: bool = True) -> int:
        return self._appendable(topic, index, acks_all).append(payload, acks_all, self.now_ms)

    def produce_many(self, topic: str, index: int, payloads: Sequence[Any], acks_all: bool = True) -> int:
        """:meth:`produce` of each payload in order, checked once; returns the first one's offset."""
        return self._appendable(topic, index, acks_all).append_many(payloads, acks_all, self.now_ms)

    def _appendable(self, topic: str, index: int, acks_all: bool) -> Partition:
        p = self.partition(topic, index)
        if p.leader is None:
            raise ClusterError(f"{topic}-{index} has no leader", ErrorCode.NOT_LEADER_OR_FOLLOWER)
        # Kafka Partition.appendRecordsToLeader compares the ISR with the effective min ISR
        # (min.insync.replicas capped by the replica count).
        if acks_all and p.is_under_min_isr():
            raise ClusterError(f"{topic}-{index}: ISR {p.isr} below min.insync.replicas",
                               ErrorCode.NOT_ENOUGH_REPLICAS)
        self.wake(p)
        return p

    def _can_fetch(self, broker: int) -> bool:
        if self.brokers[broker] is BrokerState.DEAD or broker in self.isolated:
            return False
        interval = self.fetch_interval_ms.get(broker)
        if interval is not None and self.now_ms - self.last_fetch_ms.get(broker, -interval) < interval:
            return False
        return True

    def replicate(self, now_ms: Optional[int] = None,
                  partitions: Optional[Sequence[Partition]] = None) -> None:
        """One fetch round: every reachable follower of every partition fetches from its leader once.

        ``partitions`` limits the round to those partitions: what Kafka's followers do when
        an append completes the fetch they had parked on the leader (a server uses it so
        acks=all appends do not wait for the next periodic round).  A slowed follower takes
        no part in such a round.
        """
        if now_ms is not None:
            self.now_ms = max(self.now_ms, now_ms)
        if partitions is not None:
            # A slowed follower has no fetch parked on the leader: it waits for its own round.
            allowed = {b: self._can_fetch(b) and b not in self.fetch_interval_ms for b in self.brokers}
            self._visit(partitions, allowed)
            return
        everything = self.partitions()
        self._round(everything)
        # A direct call may follow changes made behind the cluster's back (tests edit partitions):
        # sort every partition again rather than trust the active set.
        for p in everything:
            self._active[p.key] = p
        self._settle_quiet(everything)

    def _round(self, partitions: Sequence[Partition]) -> None:
        """A periodic round over ``partitions``: every follower that may fetch now does."""
        allowed = {b: self._can_fetch(b) for b in self.brokers}
        for b, ok in allowed.items():
            if ok:
                self.last_fetch_ms[b] = self.now_ms
        self._visit(partitions, allowed)
        for key, r in list(self.reassignments.items()):
            self.wake(r.partition)
            if r.complete_if_caught_up(self.now_ms, self.elect_leader_from):
                del self.reassignments[key]

    def _visit(self, partitions: Sequence[Partition], allowed: Dict[int, bool]) -> None:
        for p in partitions:
            p.replicate(self.now_ms, allowed.__getitem__, self.config.leader_epoch_truncation,
                        self.config.replica_lag_time_max_ms)
        self.partition_rounds += len(partitions)

    def _settle_quiet(self, partitions: Sequence[Partition]) -> None:
        """Drop from the active set the partitions a round left with nothing more to do."""
        dead = {b for b, s in self.brokers.items() if s is BrokerState.DEAD} | self.isolated
        reassigning = self.reassignments

        def is_live(b: int) -> bool:
            return b not in dead
        for p in partitions:
            if p.key not in reassigning and p.is_quiet(is_live):
                self._active.pop(p.key, None)

    def get_timer(self) -> int:
        """When the next fetch round is due (rounds are periodic: there always is one)."""
        return self._next_replication_ms

    def handle_timer(self, now_ms: int) -> None:
        """Advance time, running the fetch round that falls due, over the active partitions only.

        Rounds the caller missed (it was busy past several intervals) are not replayed one by
        one: they run as one round at the latest instant due, as a follower that fell behind
        fetches once, not once per interval it missed."""
        interval = self.config.replica_fetch_interval_ms
        if self._next_replication_ms <= now_ms:
            missed = (now_ms - self._next_replication_ms) // interval
            at_ms = self._next_replication_ms + missed * interval
            self.now_ms = max(self.now_ms, at_ms)
            active = list(self._active.values())
            self._round(active)
            self._settle_quiet(active)
            self._next_replication_ms = at_ms + interval
        self.now_ms = max(self.now_ms, now_ms)

    # -- reassignment -------------------------------------------------------------
    def reassign_partition(self, topic: str, index: int, rar: Sequence[int]) -> Reassignment:
        p = self.partition(topic, index)
        for b in rar:
            self.brokers.setdefault(b, BrokerState.LIVE)
        self.wake(p)
        r = Reassignment(p, list(rar))
        r.start(self.now_ms)
        self.reassignments[p.key] = r
        return r

    # -- acks ---------------------------------------------------------------------
    def take_acks(self) -> list:
        out = []
        for p in self.partitions():
            out.extend(p.acked)
            p.acked = []
        return out
