"""Random broker faults and membership changes around a consumer group (hypothesis, mock clock).

Invariants: members of one generation never own a partition twice; once the
faults stop the group settles balanced; a committed offset is the last
acknowledged commit or a later attempt, never an older value.
"""
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kgroup.core.cluster import BrokerState
from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.core.member import CommitCompleted, CommittedFetched
from kgroup.testing import InMemoryKafka, MockClock
from kgroup.values import TopicPartition

BROKERS = (1, 2, 3)
PARTITIONS = 6
FAST = GroupCoordinatorConfig(group_min_session_timeout_ms=100, group_initial_rebalance_delay_ms=0)
MEMBER = dict(assignors=("range",), session_timeout_ms=800, heartbeat_interval_ms=100, retry_backoff_ms=50,
              enable_auto_commit=False, fetch_committed_on_assignment=False)


class GroupUnderFaults(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        ids = iter(range(10**6))  # deterministic member ids, so a failing example replays
        self.kafka = InMemoryKafka(3, offsets_partitions=3, clock=MockClock(0), coordinator_config=FAST,
                                   member_id_factory=lambda prefix: f"{prefix}-{next(ids)}")
        self.kafka.create_topic("t", PARTITIONS)
        self.names = iter(f"m{i}" for i in range(1000))
        self.events = []
        self.attempts = {}     # (member name, token) -> (tp, index into history); tokens are per member
        self.history = {}      # tp -> offsets attempted, in order
        self.acknowledged = {}  # tp -> index into history of the last acknowledged commit
        for _ in range(2):
            self.add_member()

    def teardown(self):
        # Once the faults stop, the group must settle and keep every acknowledged commit.
        try:
            self.check_settles_and_keeps_commits()
        finally:
            self.kafka.close()

    def _on_events(self, name, events):
        for event in events:
            if isinstance(event, CommitCompleted) and (name, event.token) in self.attempts:
                tp, index = self.attempts.pop((name, event.token))
                if event.error is None:
                    self.acknowledged[tp] = max(self.acknowledged.get(tp, -1), index)
            self.events.append((name, event))

    # -- rules ----------------------------------------------------------------

    @precondition(lambda self: len(self.kafka.members()) < 4)
    @rule()
    def add_member(self):
        self.kafka.member(next(self.names), "g", ["t"], **MEMBER)

    @precondition(lambda self: len(self.kafka.members()) > 1)
    @rule(data=st.data(), crash=st.booleans())
    def remove_member(self, data, crash):
        name = data.draw(st.sampled_from(sorted(self.kafka.members())))
        if crash:
            self.kafka.crash_member(name)
        else:
            self.kafka.remove_member(name)

    @rule(broker=st.sampled_from(BROKERS))
    def kill_broker(self, broker):
        if self.kafka.cluster.brokers[broker] is not BrokerState.DEAD:
            self.kafka.kill_broker(broker)

    @rule(broker=st.sampled_from(BROKERS))
    def restart_broker(self, broker):
        if self.kafka.cluster.brokers[broker] is BrokerState.DEAD:
            self.kafka.restart_broker(broker)

    @rule(partition=st.integers(0, PARTITIONS - 1), offset=st.integers(0, 10**6))
    def commit(self, partition, offset):
        tp = TopicPartition("t", partition)
        owner = next((n for n, m in self.kafka.members().items() if tp in m.assignment), None)
        if owner is None:
            return
        history = self.history.setdefault(tp, [])
        history.append(offset)
        token = self.kafka.members()[owner].commit_offsets({tp: offset}, self.kafka.clock())
        self.attempts[(owner, token)] = (tp, len(history) - 1)

    @rule(ms=st.integers(10, 1500))
    def run(self, ms):
        self.kafka.run(ms, on_events=self._on_events)

    # -- invariants -----------------------------------------------------------

    @invariant()
    def no_partition_owned_twice_in_one_generation(self):
        by_generation = {}
        for member in self.kafka.members().values():
            generation = member.generation.generation_id
            if generation < 0:
                continue
            for tp in member.assignment:
                owner = by_generation.setdefault((generation, tp), member.member_id)
                assert owner == member.member_id, f"{tp} owned twice in generation {generation}"

    def check_settles_and_keeps_commits(self):
        for broker in BROKERS:
            self.restart_broker(broker)
        self.kafka.run_until(lambda: self.kafka.group_settled("g"), limit_ms=30_000,
                             on_events=self._on_events)
        self.kafka.run(500, on_events=self._on_events)  # let outstanding commits finish
        members = self.kafka.members()
        sizes = sorted(len(m.assignment) for m in members.values())
        assert sum(sizes) == PARTITIONS and sizes[-1] - sizes[0] <= 1
        if not self.acknowledged:
            return
        reader = next(iter(sorted(members)))
        token = members[reader].fetch_committed(sorted(self.acknowledged), self.kafka.clock())

        def fetched_events():
            return [e for n, e in self.events
                    if n == reader and isinstance(e, CommittedFetched) and e.token == token]

        self.kafka.run_until(lambda: bool(fetched_events()), on_events=self._on_events)
        (fetched,) = fetched_events()
        assert fetched.error is None
        for tp, index in self.acknowledged.items():
            committed = fetched.offsets[tp]
            assert committed is not None, f"acknowledged commit of {tp} lost"
            assert committed.offset in self.history[tp][index:], \
                (tp, committed.offset, self.history[tp], index)


TestGroupUnderFaults = GroupUnderFaults.TestCase
TestGroupUnderFaults.settings = settings(max_examples=25, stateful_step_count=15, deadline=None,
                                         suppress_health_check=[HealthCheck.too_slow])
