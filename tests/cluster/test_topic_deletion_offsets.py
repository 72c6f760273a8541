"""A deleted topic's committed offsets go too (Kafka's BrokerMetadataPublisher calls
GroupCoordinatorService.onPartitionsDeleted, which runs OffsetMetadataManager.onPartitionsDeleted on
every group-coordinator shard): GroupHosting tombstones them on every loaded slot, the tombstones are
replicated like any coordinator write, so a failover does not bring them back and a topic re-created
with the same name starts without them."""
import pytest

from kgroup.core import messages as m
from kgroup.core.cluster import ClusterConfig, ClusterStateMachine
from kgroup.core.cluster.group_hosting import GroupHosting, GroupHostingConfig
from kgroup.core.cluster.offsets_topic import GROUP_METADATA_TOPIC
from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.core.coordinator_common.records import OffsetCommitRecord, OffsetTombstone
from kgroup.core.error_codes import ErrorCode as E
from kgroup.errors import ClusterError
from kgroup.testing import InMemoryKafka
from kgroup.io.clock import MockClock
from kgroup.values import TopicPartition

FAST = GroupCoordinatorConfig(group_min_session_timeout_ms=100, group_initial_rebalance_delay_ms=0)
LOAD_MS = 100
A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def _hosting():
    cluster = ClusterStateMachine(ClusterConfig(broker_ids=(1, 2, 3)))
    h = GroupHosting(cluster, GroupHostingConfig(offsets_topic_partitions=5, group_load_time_ms=LOAD_MS,
                                                 coordinator=FAST))
    h.handle_timer(LOAD_MS)  # the first leaders load
    cluster.create_topic("a", 2)
    cluster.create_topic("b", 1)
    return h


def _two_groups_on_different_slots(h):
    names = [f"g{i}" for i in range(20)]
    first = names[0]
    second = next(n for n in names if h.partition_for(n) != h.partition_for(first))
    return first, second


def _call(h, group_id, key, request, now_ms, rounds=10):
    """Ask the group's coordinator; run replication rounds until the answer is released."""
    answers = {d.request_key: d.response for d in h.send(h.coordinator_node(group_id), key, request, now_ms)}
    for _ in range(rounds):
        if key in answers:
            return answers[key]
        answers.update({d.request_key: d.response for d in h.handle_timer(h.cluster.get_timer())})
    raise AssertionError(f"no answer to {key!r}")


def _commit(h, group_id, now_ms):
    offsets = tuple(m.PartitionOffsetCommit(tp, m.OffsetAndMetadata(offset))
                    for tp, offset in ((A0, 10), (A1, 11), (B0, 20)))
    response = _call(h, group_id, ("commit", group_id), m.OffsetCommitRequest(group_id, offsets), now_ms)
    assert [p.error_code for p in response.partitions] == [E.NONE] * 3


def _fetch(h, group_id, key, now_ms, partitions=(A0, A1, B0)):
    """{partition: committed offset} (-1: none) of the listed partitions, or of all (partitions None)."""
    response = _call(h, group_id, key, m.OffsetFetchRequest(group_id, partitions), now_ms)
    assert response.error_code is E.NONE
    return {p.topic_partition: p.committed.offset if p.committed else -1 for p in response.partitions}


def _offset_records_in_log(h, group_id):
    """(partition, is a tombstone) of every offset record of the group in its slot's log, in order."""
    log = h.cluster.partition(GROUP_METADATA_TOPIC, h.partition_for(group_id)).leader_log()
    return [(e.payload.topic_partition, isinstance(e.payload, OffsetTombstone)) for e in log.entries
            if isinstance(e.payload, (OffsetCommitRecord, OffsetTombstone))
            and e.payload.group_id == group_id]


def test_deleting_a_topic_drops_every_groups_offsets_of_it_and_keeps_the_others():
    h = _hosting()
    groups = _two_groups_on_different_slots(h)
    for group_id in groups:
        _commit(h, group_id, 200)
    h.delete_topic("a", 300)
    for group_id in groups:
        assert _fetch(h, group_id, ("listed", group_id), 300) == {A0: -1, A1: -1, B0: 20}
        assert _fetch(h, group_id, ("all", group_id), 300, partitions=None) == {B0: 20}
        # Written as tombstones of the deleted partitions (OffsetMetadataManager.onPartitionsDeleted),
        # after the commits, in the group's own __consumer_offsets partition.
        assert sorted(_offset_records_in_log(h, group_id)[-2:]) == [(A0, True), (A1, True)]


def test_the_tombstones_survive_a_coordinator_failover_and_a_recreated_topic_starts_without_offsets():
    h = _hosting()
    groups = _two_groups_on_different_slots(h)
    for group_id in groups:
        _commit(h, group_id, 200)
    h.delete_topic("a", 300)
    h.handle_timer(h.cluster.get_timer())  # a replication round: every replica has the tombstones
    old_leaders = {h.coordinator_node(g) for g in groups}
    now_ms = h.now_ms
    for broker in sorted(old_leaders):
        h.kill_broker(broker, now_ms)
    assert all(h.coordinator_node(g) not in old_leaders for g in groups)
    assert all(h.coordinator_for(g) is None for g in groups)  # the new leaders load the logs
    now_ms += LOAD_MS
    for group_id in groups:
        assert _fetch(h, group_id, ("after failover", group_id), now_ms) == {A0: -1, A1: -1, B0: 20}
    h.cluster.create_topic("a", 2)
    for group_id in groups:
        assert _fetch(h, group_id, ("recreated", group_id), now_ms) == {A0: -1, A1: -1, B0: 20}
        assert _fetch(h, group_id, ("recreated all", group_id), now_ms, partitions=None) == {B0: 20}


def test_a_deletion_the_cluster_makes_directly_reaches_the_hosted_coordinators():
    # The wire broker's DeleteTopics deletes through ClusterStateMachine.delete_topic.
    h = _hosting()
    group_id, _ = _two_groups_on_different_slots(h)
    _commit(h, group_id, 200)
    h.cluster.delete_topic("a")
    assert _fetch(h, group_id, "after", 300) == {A0: -1, A1: -1, B0: 20}


def test_a_slot_still_loading_keeps_the_offsets_as_kafka_does():
    # GroupCoordinatorService.onPartitionsDeleted: a shard that is loading fails the write-all operation
    # with COORDINATOR_LOAD_IN_PROGRESS, which is logged and swallowed (GroupCoordinatorServiceTest
    # .testOnPartitionsDeleted); the offsets stay until OffsetDelete, DeleteGroups or expiry.
    h = _hosting()
    loading = "g0"
    # A group coordinated by another broker: its slot stays put when the loading group's leader dies.
    loaded = next(name for name in (f"g{i}" for i in range(1, 50))
                  if h.coordinator_node(name) != h.coordinator_node(loading))
    for group_id in (loading, loaded):
        _commit(h, group_id, 200)
    h.handle_timer(h.cluster.get_timer())
    now_ms = h.now_ms  # the replication rounds moved the clock
    h.kill_broker(h.coordinator_node(loading), now_ms)
    assert h.coordinator_for(loaded) is not None
    assert h.coordinator_for(loading) is None  # its new leader is loading
    h.delete_topic("a", now_ms)
    now_ms += LOAD_MS
    h.handle_timer(now_ms)
    assert _fetch(h, loading, "loading", now_ms) == {A0: 10, A1: 11, B0: 20}
    assert _fetch(h, loaded, "loaded", now_ms) == {A0: -1, A1: -1, B0: 20}


def test_deleting_an_unknown_or_internal_topic_is_refused_with_kafkas_code():
    h = _hosting()
    with pytest.raises(ClusterError) as unknown:
        h.delete_topic("missing", 200)
    assert unknown.value.error_code is E.UNKNOWN_TOPIC_OR_PARTITION
    with pytest.raises(ClusterError) as internal:
        h.delete_topic(GROUP_METADATA_TOPIC, 200)
    assert internal.value.error_code is E.INVALID_TOPIC_EXCEPTION


def test_in_memory_kafka_delete_topic_drops_the_offsets():
    clock = MockClock(0)
    with InMemoryKafka(brokers=3, offsets_partitions=5, clock=clock) as kafka:
        kafka.create_topic("a", 2)
        kafka.create_topic("b", 1)
        kafka.run(500)  # the coordinators load
        group_id, _ = _two_groups_on_different_slots(kafka.hosting)
        h = kafka.hosting
        _commit(h, group_id, clock())
        kafka.delete_topic("a")
        assert _fetch(h, group_id, "after", clock(), partitions=None) == {B0: 20}
        kafka.create_topic("a", 2)
        assert _fetch(h, group_id, "recreated", clock()) == {A0: -1, A1: -1, B0: 20}
