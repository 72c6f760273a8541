"""GroupHosting.write_txn_marker (issue 26): the transaction marker on a ``__consumer_offsets``
partition, written through the partition's group coordinator (Kafka's
GroupCoordinatorService.completeTransaction), commits the producer's pending offsets; a failover
between the TxnOffsetCommit and its marker keeps them pending on the new leader."""
import pytest

from kgroup.core import messages as m
from kgroup.core.cluster import ClusterConfig, ClusterStateMachine
from kgroup.core.cluster.group_hosting import GroupHosting, GroupHostingConfig
from kgroup.core.cluster.offsets_topic import GROUP_METADATA_TOPIC
from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.core.coordinator_common.records import TxnMarkerRecord
from kgroup.core.error_codes import ErrorCode as E
from kgroup.core.transaction_markers import MarkerAppend, TxnMarker, TxnMarkerWriter
from kgroup.values import TopicPartition

FAST = GroupCoordinatorConfig(group_min_session_timeout_ms=100, group_initial_rebalance_delay_ms=0)
TP = TopicPartition("t", 0)
PID, EPOCH = 7, 2


def _hosting(load_ms=0, min_isr=1):
    cluster = ClusterStateMachine(ClusterConfig(broker_ids=(1, 2, 3), min_insync_replicas=min_isr))
    return GroupHosting(cluster, GroupHostingConfig(offsets_topic_partitions=5, group_load_time_ms=load_ms,
                                                    coordinator=FAST))


def _call(h, key, request, now_ms, rounds=5):
    """Ask the group's coordinator; run replication rounds until the answer is released."""
    answers = {d.request_key: d.response for d in h.send(h.coordinator_node("g"), key, request, now_ms)}
    for _ in range(rounds):
        if key in answers:
            return answers[key]
        answers.update({d.request_key: d.response for d in h.handle_timer(h.cluster.get_timer())})
    raise AssertionError(f"no answer to {key!r}")


def _txn_commit(h, offset, now_ms=0, epoch=EPOCH):
    commit = m.PartitionOffsetCommit(TP, m.OffsetAndMetadata(offset))
    return _call(h, ("txn", offset), m.TxnOffsetCommitRequest("tx", "g", PID, epoch, (commit,)), now_ms)


def _fetch(h, key, now_ms=0):
    (part,) = _call(h, key, m.OffsetFetchRequest("g", (TP,), require_stable=True), now_ms).partitions
    return part.error_code, part.committed.offset if part.committed else -1


def _marker(h, commit=True, epoch=EPOCH):
    return TxnMarker(GROUP_METADATA_TOPIC, h.partition_for("g"), PID, epoch, commit, coordinator_epoch=0)


def test_the_marker_commits_the_pending_offsets_and_answers_where_it_was_written():
    h = _hosting()
    writer: TxnMarkerWriter = h  # GroupHosting is the TxnMarkerWriter of __consumer_offsets
    assert _txn_commit(h, 42).partitions[0].error_code is E.NONE
    assert _fetch(h, "before") == (E.UNSTABLE_OFFSET_COMMIT, -1)
    marker = _marker(h)
    partition = h.cluster.partition(GROUP_METADATA_TOPIC, marker.partition)
    appended = writer.write_txn_marker(marker, 1)
    assert isinstance(appended, MarkerAppend)
    assert (appended.topic, appended.partition, appended.leader_epoch) == (
        GROUP_METADATA_TOPIC, marker.partition, partition.leader_epoch)
    assert isinstance(partition.leader_log().entries[appended.offset].payload, TxnMarkerRecord)
    assert _fetch(h, "after", 2) == (E.NONE, 42)
    assert partition.leader_log().hw > appended.offset  # written: the HW passed it in that epoch


def test_an_abort_marker_drops_the_pending_offsets():
    h = _hosting()
    _txn_commit(h, 42)
    assert isinstance(h.write_txn_marker(_marker(h, commit=False), 1), MarkerAppend)
    assert _fetch(h, "after", 2) == (E.NONE, -1)


def test_a_failover_between_the_commit_and_its_marker_keeps_the_offsets_pending_until_the_marker():
    h = _hosting(load_ms=100)
    h.handle_timer(100)  # the first leaders load
    _txn_commit(h, 42, now_ms=100)
    old_leader = h.coordinator_node("g")
    h.kill_broker(old_leader, 200)
    new_leader = h.coordinator_node("g")
    assert new_leader not in (None, old_leader)
    # The new leader is loading: the transaction coordinator must retry.
    assert h.write_txn_marker(_marker(h), 250) is E.NOT_LEADER_OR_FOLLOWER
    h.handle_timer(300)
    assert _fetch(h, "loaded", 300) == (E.UNSTABLE_OFFSET_COMMIT, -1)
    appended = h.write_txn_marker(_marker(h), 310)
    assert isinstance(appended, MarkerAppend)
    offsets_partition = h.cluster.partition(GROUP_METADATA_TOPIC, _marker(h).partition)
    assert appended.leader_epoch == offsets_partition.leader_epoch
    assert _fetch(h, "committed", 320) == (E.NONE, 42)


def test_a_zombie_epoch_and_a_wrong_partition_are_refused():
    h = _hosting()
    _txn_commit(h, 42)
    assert h.write_txn_marker(_marker(h, epoch=EPOCH - 1), 1) is E.INVALID_PRODUCER_EPOCH
    assert _txn_commit(h, 43, epoch=EPOCH - 1).partitions[0].error_code is E.INVALID_PRODUCER_EPOCH
    assert h.write_txn_marker(TxnMarker(GROUP_METADATA_TOPIC, 99, PID, EPOCH, True, 0), 1) is \
        E.UNKNOWN_TOPIC_OR_PARTITION
    with pytest.raises(ValueError, match="__consumer_offsets only"):
        h.write_txn_marker(TxnMarker("t", 0, PID, EPOCH, True, 0), 1)
    assert _fetch(h, "still pending", 2) == (E.UNSTABLE_OFFSET_COMMIT, -1)


def test_a_marker_refused_below_min_isr_answers_not_enough_replicas_and_keeps_the_offsets_pending():
    h = _hosting(min_isr=3)
    _txn_commit(h, 42)
    leader = h.coordinator_node("g")
    follower = next(b for b in (1, 2, 3) if b != leader)
    h.kill_broker(follower, 10)
    h.handle_timer(h.cluster.get_timer())  # the ISR shrinks below min.insync.replicas
    assert h.write_txn_marker(_marker(h), 20_000) is E.NOT_ENOUGH_REPLICAS
    pending = h.coordinator_for("g").persisted_view().pending_offsets
    assert pending == {PID: {"g": {TP: m.OffsetAndMetadata(42)}}}
