"""Real kgroup members against the in-memory cluster while the group coordinator fails over (mock clock)."""
import random

import pytest

from kgroup.core.cluster.offsets_topic import GROUP_METADATA_TOPIC
from kgroup.core.coordinator import GroupCoordinatorConfig, GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member import CommitCompleted, CommittedFetched, PartitionsLost, PartitionsRevoked
from kgroup.testing import InMemoryKafka, MockClock
from kgroup.values import TopicPartition

FAST = GroupCoordinatorConfig(group_min_session_timeout_ms=100, group_initial_rebalance_delay_ms=0)
TP0 = TopicPartition("t", 0)


class Observed:
    """What members saw: error codes of responses, transport failures, and their events."""

    def __init__(self):
        self.codes = []
        self.transport_errors = 0
        self.events = []

    def watch(self, member):
        on_response, on_transport_error = member.on_response, member.on_transport_error

        def response(token, resp, now_ms):
            code = getattr(resp, "error_code", None)
            if code is not None:
                self.codes.append(code)
            return on_response(token, resp, now_ms)

        def transport_error(token, now_ms):
            self.transport_errors += 1
            return on_transport_error(token, now_ms)

        member.on_response, member.on_transport_error = response, transport_error

    def on_events(self, name, events):
        self.events.extend((name, e) for e in events)

    def clear(self):
        self.codes.clear()
        self.events.clear()
        self.transport_errors = 0


def _kafka(names="abc", static=False, **kw):
    kafka = InMemoryKafka(3, offsets_partitions=10, clock=MockClock(0), coordinator_config=FAST, **kw)
    kafka.create_topic("t", 6)
    seen = Observed()
    for name in names:
        _add(kafka, seen, name, static)
    kafka.run_until(lambda: kafka.group_settled("g"), on_events=seen.on_events)
    return kafka, seen


def _add(kafka, seen, name, static=False):
    member = kafka.member(name, "g", ["t"], assignors=("range",), session_timeout_ms=1000,
                          heartbeat_interval_ms=100, retry_backoff_ms=50, enable_auto_commit=False,
                          fetch_committed_on_assignment=False, group_instance_id=name if static else None)
    seen.watch(member)
    return member


def _result(kafka, seen, name, kind, token):
    """The member's completion event for ``token`` (tokens are numbered per member)."""
    def found():
        return [e for n, e in seen.events if n == name and isinstance(e, kind) and e.token == token]

    kafka.run_until(lambda: bool(found()), on_events=seen.on_events)
    (done,) = found()
    return done


def _commit(kafka, seen, name, offsets):
    token = kafka.members()[name].commit_offsets(offsets, kafka.clock())
    return _result(kafka, seen, name, CommitCompleted, token)


def _fetch(kafka, seen, name, partitions):
    token = kafka.members()[name].fetch_committed(list(partitions), kafka.clock())
    done = _result(kafka, seen, name, CommittedFetched, token)
    assert done.error is None
    return done.offsets


def _assignment(kafka):
    return {name: member.assignment for name, member in kafka.members().items()}


def _owner_of_tp0(kafka):
    return next(name for name, member in kafka.members().items() if TP0 in member.assignment)


@pytest.mark.parametrize("static", [False, True])
def test_coordinator_broker_dies_while_stable(static):
    kafka, seen = _kafka(static=static, group_load_time_ms=500)
    owner = _owner_of_tp0(kafka)
    assert _commit(kafka, seen, owner, {TP0: 17}).error is None
    before = {n: (m.member_id, m.generation.generation_id) for n, m in kafka.members().items()}
    assignment = _assignment(kafka)
    old = kafka.coordinator_node("g")
    seen.clear()

    kafka.kill_broker(old)
    new = kafka.coordinator_node("g")
    assert new not in (None, old)
    kafka.run_until(lambda: kafka.group_settled("g"), on_events=seen.on_events)

    assert seen.transport_errors > 0  # the dead coordinator's connections failed
    assert ErrorCode.COORDINATOR_LOAD_IN_PROGRESS in seen.codes  # they found it while it was loading
    # The new coordinator loaded the group: same members, same generation, no rebalance.
    assert {n: (m.member_id, m.generation.generation_id) for n, m in kafka.members().items()} == before
    assert _assignment(kafka) == assignment
    assert not [e for _, e in seen.events if isinstance(e, (PartitionsRevoked, PartitionsLost))]
    assert _fetch(kafka, seen, owner, [TP0])[TP0].offset == 17


def test_leadership_moves_to_a_live_broker_members_see_not_coordinator():
    kafka, seen = _kafka()
    old = kafka.coordinator_node("g")
    kafka.kill_broker(old)
    kafka.run_until(lambda: kafka.group_settled("g"))
    kafka.restart_broker(old)
    offsets = kafka.cluster.partition(GROUP_METADATA_TOPIC, kafka.hosting.partition_for("g"))
    kafka.run_until(lambda: old in offsets.isr)
    seen.clear()

    kafka.elect_preferred_leaders()  # the preferred replica (the old coordinator) leads again
    assert kafka.coordinator_node("g") == old
    kafka.run_until(lambda: kafka.group_settled("g"), on_events=seen.on_events)
    assert ErrorCode.NOT_COORDINATOR in seen.codes
    assert all(m.coordinator_id == old for m in kafka.members().values())


def test_coordinator_fails_mid_rebalance_and_the_group_completes_it():
    kafka, seen = _kafka("ab")
    _add(kafka, seen, "c")
    rebalancing = (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE)
    kafka.run_until(lambda: kafka.group_state("g") in rebalancing)
    kafka.kill_broker(kafka.coordinator_node("g"))
    kafka.run_until(lambda: kafka.group_settled("g"), on_events=seen.on_events)
    sizes = sorted(len(a) for a in _assignment(kafka).values())
    assert sizes == [2, 2, 2]
    owned = [tp for a in _assignment(kafka).values() for tp in a]
    assert len(owned) == len(set(owned)) == 6


def test_coordinator_unavailable_while_no_replica_of_its_partition_lives_then_recovers():
    kafka, seen = _kafka()
    offsets = kafka.cluster.partition(GROUP_METADATA_TOPIC, kafka.hosting.partition_for("g"))
    for broker in offsets.assigned:
        kafka.kill_broker(broker)
    assert kafka.coordinator_node("g") is None
    seen.clear()
    kafka.run(3000, on_events=seen.on_events)  # members keep looking; nothing hangs or crashes
    assert not kafka.group_settled("g")
    for broker in offsets.assigned:
        kafka.restart_broker(broker)
    kafka.run_until(lambda: kafka.group_settled("g"), on_events=seen.on_events)
    assert sorted(len(a) for a in _assignment(kafka).values()) == [2, 2, 2]


@pytest.mark.parametrize("seed", range(8))
def test_a_commit_acknowledged_before_the_failure_is_never_lost(seed):
    rng = random.Random(seed)
    kafka, seen = _kafka()
    owner = _owner_of_tp0(kafka)
    acknowledged = None
    for _ in range(rng.randint(1, 4)):
        offset = rng.randint(1, 10_000)
        if _commit(kafka, seen, owner, {TP0: offset}).error is None:
            acknowledged = offset
    # Fail right after the acknowledgement, before any further replication round.
    victim = kafka.coordinator_node("g") if rng.random() < 0.7 else rng.choice(sorted(kafka.cluster.brokers))
    kafka.kill_broker(victim)
    if rng.random() < 0.5:
        kafka.run(rng.randint(0, 500))
        kafka.restart_broker(victim)
    kafka.run_until(lambda: kafka.group_settled("g"), on_events=seen.on_events)
    reader = _owner_of_tp0(kafka)
    assert _fetch(kafka, seen, reader, [TP0])[TP0].offset == acknowledged
