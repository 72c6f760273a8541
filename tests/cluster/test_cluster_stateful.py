"""Random kills, restarts, bounces, appends and time: leadership and committed data stay safe."""
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kgroup.core.cluster import BrokerState, ClusterStateMachine, ClusterConfig
from kgroup.errors import ClusterError

BROKERS = (1, 2, 3)


class ClusterMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.cluster = ClusterStateMachine(ClusterConfig(broker_ids=BROKERS, replica_lag_time_max_ms=300,
                                                         replica_fetch_interval_ms=100))
        self.cluster.create_topic("t", 2)
        self.now_ms = 0
        self.acked = []
        self.hw_by_epoch = {}
        self.counter = 0

    @rule(broker=st.sampled_from(BROKERS))
    def kill(self, broker):
        self.cluster.kill_broker(broker)

    @rule(broker=st.sampled_from(BROKERS))
    def restart(self, broker):
        if self.cluster.brokers[broker] is BrokerState.DEAD:
            self.cluster.restart_broker(broker)

    @rule(broker=st.sampled_from(BROKERS))
    def bounce(self, broker):
        if self.cluster.brokers[broker] is BrokerState.LIVE:
            self.cluster.bounce_broker(broker)

    @rule(partition=st.integers(0, 1), acks_all=st.booleans())
    def append(self, partition, acks_all):
        self.counter += 1
        try:
            self.cluster.produce("t", partition, self.counter, acks_all=acks_all)
        except ClusterError:
            pass

    @rule(delta_ms=st.integers(0, 500))
    def advance(self, delta_ms):
        self.now_ms += delta_ms
        self.cluster.handle_timer(self.now_ms)
        self.acked.extend(self.cluster.take_acks())

    @invariant()
    def one_leader_per_epoch(self):
        leaders = {}
        for topic, index, epoch, leader, _unclean in self.cluster.elections:
            if leader is not None:
                assert leaders.setdefault((topic, index, epoch), leader) == leader

    @invariant()
    def leader_hw_never_decreases_within_an_epoch(self):
        for p in self.cluster.partitions():
            if p.leader is None:
                continue
            key = (p.index, p.leader_epoch)
            hw = p.logs[p.leader].hw
            assert hw >= self.hw_by_epoch.get(key, 0)
            self.hw_by_epoch[key] = hw

    @invariant()
    def acknowledged_records_survive(self):
        self.acked.extend(self.cluster.take_acks())
        for ack in self.acked:
            p = self.cluster.partition(ack.topic, ack.partition)
            if p.leader is None:
                continue  # every ISR member is down: nothing may be read, nothing is lost yet
            log = p.logs[p.leader]
            assert ack.offset < log.leo and log.entries[ack.offset].payload == ack.payload


TestCluster = ClusterMachine.TestCase
TestCluster.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
