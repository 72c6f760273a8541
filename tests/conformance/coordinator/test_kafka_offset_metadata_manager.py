"""Kafka's OffsetMetadataManagerTest (group-coordinator, trunk): the tests not ported earlier (classic
commit / fetch validation is in test_kafka_offsets_classic.py, transactional offsets in
test_kafka_txn_offsets.py, consumer-group OffsetDelete in tests/consumer_group).  One test per Kafka
test, named after it.

Kafka builds its KIP-848 groups by hand (``getOrMaybeCreatePersistedConsumerGroup`` +
``updateMember``) and its offsets by replaying records (``context.commitOffset(group, topic, ...)``);
the ports load the same records into the coordinator (``Ctx(records=...)``, what a coordinator
taking over the offsets partition does).  kgroup's offsets carry the offset, its metadata and the
leader epoch: Kafka's commit timestamp, expire timestamp and record offset are not modelled (offset
retention is not, docs/coordinator.md).
"""
from __future__ import annotations

from typing import Iterable, Optional

from coordinator_kafka_gmm_harness import Ctx

from kgroup.core.consumer_group.member import ClassicMemberMetadata, ConsumerGroupMember
from kgroup.core.consumer_group.records import ConsumerGroupMemberRecord, ConsumerGroupMetadataRecord
from kgroup.core.coordinator import GroupState, replay
from kgroup.core.coordinator_common.records import OffsetCommitRecord, OffsetTombstone, TxnOffsetCommitRecord
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    JoinGroupProtocol, OffsetAndMetadata, OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest,
    PartitionOffset, PartitionOffsetCommit, TxnOffsetCommitRequest,
)
from kgroup.values import Subscription, TopicPartition
from kgroup.wire.consumer_protocol import encode_subscription

E = ErrorCode
S = GroupState
BAR0, BAR1, FOO0 = TopicPartition("bar", 0), TopicPartition("bar", 1), TopicPartition("foo", 0)


def consumer_group(group_id: str, *members: ConsumerGroupMember, offsets: Iterable[OffsetCommitRecord] = ()):
    """Kafka's getOrMaybeCreatePersistedConsumerGroup(group_id) + updateMember(...) (+ replayed offset
    commits), as records."""
    return [ConsumerGroupMetadataRecord(group_id, 1, 1, ()),
            *(ConsumerGroupMemberRecord(group_id, m) for m in members), *offsets]


def member(epoch: int = 0, *, classic: bool = False) -> ConsumerGroupMember:
    """Kafka's ConsumerGroupMember.Builder("member"), at ``epoch``; ``classic``: with (empty) classic
    member metadata, a member of the classic protocol."""
    metadata = ClassicMemberMetadata(45_000, ()) if classic else None
    return ConsumerGroupMember("member", member_epoch=epoch, previous_member_epoch=epoch,
                               classic_member_metadata=metadata)


def commit(ctx: Ctx, group_id: str, *partitions: tuple[TopicPartition, OffsetAndMetadata],
           member_id: str = "", epoch: int = -1):
    """OffsetCommit (the latest version); the per-partition error codes and the records it wrote."""
    written = len(ctx.records)
    request = OffsetCommitRequest(group_id, tuple(PartitionOffsetCommit(tp, om) for tp, om in partitions),
                                  generation_id=epoch, member_id=member_id)
    codes = [p.error_code for p in ctx.call(request).partitions]
    return codes, ctx.records[written:]


def fetch(ctx: Ctx, group_id: str, partitions: Optional[tuple[TopicPartition, ...]],
          member_id: Optional[str] = None, epoch: int = -1):
    """OffsetFetch v9+ (``partitions`` None: every committed one): the group error, and the answers."""
    response = ctx.call(OffsetFetchRequest(group_id, partitions, member_id=member_id, member_epoch=epoch))
    return response.error_code, response.partitions


# -- OffsetCommit to a KIP-848 consumer group ---------------------------------------------------------


def test_testConsumerGroupOffsetCommitWithUnknownMemberId():
    ctx = Ctx(records=consumer_group("foo"))
    assert commit(ctx, "foo", (BAR0, OffsetAndMetadata(100)), member_id="member", epoch=10)[0] == [
        E.UNKNOWN_MEMBER_ID]


def test_testConsumerGroupOffsetCommitWithStaleMemberEpoch():
    ctx = Ctx(records=consumer_group("foo", member(10)))
    for epoch in (9, 11):  # smaller, then larger
        codes, records = commit(ctx, "foo", (BAR0, OffsetAndMetadata(100)), member_id="member", epoch=epoch)
        assert codes == [E.STALE_MEMBER_EPOCH] and records == []


def test_testConsumerGroupOffsetCommitWithIllegalGenerationId():
    """A classic-protocol member of a consumer group: its generation is its member epoch."""
    ctx = Ctx(records=consumer_group("foo", member(10, classic=True)))
    for epoch in (9, 11):
        codes, records = commit(ctx, "foo", (BAR0, OffsetAndMetadata(100)), member_id="member", epoch=epoch)
        assert codes == [E.ILLEGAL_GENERATION] and records == []


def test_testConsumerGroupOffsetCommitFromAdminClient():
    ctx = Ctx(records=consumer_group("foo"))
    codes, records = commit(ctx, "foo", (BAR0, OffsetAndMetadata(100)))
    assert codes == [E.NONE]
    assert records == [OffsetCommitRecord("foo", BAR0, OffsetAndMetadata(100))]


def test_testConsumerGroupOffsetCommit():
    ctx = Ctx(records=consumer_group("foo", member(10)))
    committed = OffsetAndMetadata(100, "metadata", 10)
    codes, records = commit(ctx, "foo", (BAR0, committed), member_id="member", epoch=10)
    assert codes == [E.NONE]
    assert records == [OffsetCommitRecord("foo", BAR0, committed)]


def test_testConsumerGroupOffsetCommitWithOffsetMetadataTooLarge():
    ctx = Ctx(records=consumer_group("foo", member(10)), offset_metadata_max_bytes=5)
    codes, records = commit(ctx, "foo", (BAR0, OffsetAndMetadata(100, "toolarge", 10)),
                            (BAR1, OffsetAndMetadata(100, "small", 10)), member_id="member", epoch=10)
    assert codes == [E.OFFSET_METADATA_TOO_LARGE, E.NONE]
    assert records == [OffsetCommitRecord("foo", BAR1, OffsetAndMetadata(100, "small", 10))]


def test_testConsumerGroupTransactionalOffsetCommitWithUnknownGroupId():
    ctx = Ctx()
    request = TxnOffsetCommitRequest("txn", "foo", 10, 0, (PartitionOffsetCommit(BAR0, OffsetAndMetadata(
        100, "metadata", 10)),), generation_id=10, member_id="member")
    assert [p.error_code for p in ctx.call(request).partitions] == [E.ILLEGAL_GENERATION]
    assert ctx.state("foo") is None


# -- OffsetFetch from a KIP-848 consumer group --------------------------------------------------------

COMMITTED = OffsetCommitRecord("group", FOO0, OffsetAndMetadata(100, "metadata", 1))
FETCHED = (PartitionOffset(FOO0, OffsetAndMetadata(100, "metadata", 1)),)


def test_testConsumerGroupOffsetFetchWithMemberIdAndEpoch():
    ctx = Ctx(records=consumer_group("group", member(0), offsets=[COMMITTED]))
    assert fetch(ctx, "group", (FOO0,), "member", 0) == (E.NONE, FETCHED)
    assert fetch(ctx, "group", None, "member", 0) == (E.NONE, FETCHED)


def test_testConsumerGroupOffsetFetchFromAdminClient():
    """Kafka's getOrMaybeCreateMember("member", true) adds a member at epoch 0."""
    ctx = Ctx(records=consumer_group("group", member(0), offsets=[COMMITTED]))
    assert fetch(ctx, "group", (FOO0,)) == (E.NONE, FETCHED)
    assert fetch(ctx, "group", None) == (E.NONE, FETCHED)


def test_testConsumerGroupOffsetFetchWithUnknownMemberId():
    ctx = Ctx(records=consumer_group("group"))
    for partitions in ((FOO0,), None):
        assert fetch(ctx, "group", partitions, "", 0)[0] is E.UNKNOWN_MEMBER_ID
        assert fetch(ctx, "group", partitions, "member", 0)[0] is E.UNKNOWN_MEMBER_ID


def test_testConsumerGroupOffsetFetchWithStaleMemberEpoch():
    ctx = Ctx(records=consumer_group("group", member(0)))
    for partitions in ((FOO0,), None):
        assert fetch(ctx, "group", partitions, "member", 10)[0] is E.STALE_MEMBER_EPOCH


def test_testConsumerGroupOffsetFetchWithIllegalGenerationId():
    ctx = Ctx(records=consumer_group("group", member(0, classic=True)))
    for partitions in ((FOO0,), None):
        assert fetch(ctx, "group", partitions, "member", 10)[0] is E.ILLEGAL_GENERATION


# -- OffsetDelete of a classic group ------------------------------------------------------------------


def _delete(ctx: Ctx, group_id: str, tp: TopicPartition):
    """Kafka's testOffsetDeleteWith: the partition's answer and the records written."""
    written = len(ctx.records)
    response = ctx.call(OffsetDeleteRequest(group_id, (tp,)))
    assert response.error_code is E.NONE
    (answer,) = response.partitions
    assert answer.topic_partition == tp
    return answer.error_code, ctx.records[written:]


def test_testGenericGroupOffsetDelete():
    """Kafka's getOrMaybeCreateClassicGroup + a replayed commit is a simple consumer's commit here (an
    Empty group of no protocol type, whose subscribed topics are the empty set Kafka sets)."""
    ctx = Ctx()
    assert commit(ctx, "foo", (BAR0, OffsetAndMetadata(100, "", 0)))[0] == [E.NONE]
    assert _delete(ctx, "foo", BAR0) == (E.NONE, [OffsetTombstone("foo", BAR0)])
    assert fetch(ctx, "foo", (BAR0,))[1] == (PartitionOffset(BAR0, None),)


def test_testGenericGroupOffsetDeleteWithErrors():
    """Kafka sets the group's subscribed topics to {"bar"} by hand; here a Stable group's member
    subscribes to "bar" (ConsumerProtocol metadata) and commits the offset."""
    ctx = Ctx()
    protocols = (JoinGroupProtocol("range", encode_subscription(Subscription(("bar",)))),)
    joined = ctx.join_dynamic_and_complete_rebalance("foo", protocols=protocols)
    codes, _ = commit(ctx, "foo", (BAR0, OffsetAndMetadata(100, "", 0)), member_id=joined.member_id, epoch=1)
    assert codes == [E.NONE]
    # A partition of a topic that does not exist: nothing to delete, no record.
    assert _delete(ctx, "foo", TopicPartition("bar1", 0)) == (E.NONE, [])
    assert _delete(ctx, "foo", BAR0) == (E.GROUP_SUBSCRIBED_TO_TOPIC, [])
    assert fetch(ctx, "foo", (BAR0,))[1] == (PartitionOffset(BAR0, OffsetAndMetadata(100, "", 0)),)


# -- replay -------------------------------------------------------------------------------------------


def test_testReplay():
    """Each OffsetCommit record replayed makes its offset the partition's (Kafka's verifyReplay), for a
    coordinator loading the records written so far."""
    records = []
    replayed = ((BAR0, OffsetAndMetadata(100, "small")), (BAR0, OffsetAndMetadata(200, "small", 10)),
                (BAR1, OffsetAndMetadata(200, "small", 10)), (BAR1, OffsetAndMetadata(300, "small", 10)))
    for tp, committed in replayed:
        records.append(OffsetCommitRecord("foo", tp, committed))
        assert replay(records).offsets["foo"][tp] == committed
        assert fetch(Ctx(records=records), "foo", (tp,))[1] == (PartitionOffset(tp, committed),)


def test_testReplayWithTombstoneAndPendingTransactionalOffsets():
    records: list = [OffsetCommitRecord("foo", BAR0, OffsetAndMetadata(100, "small"))]
    assert replay(records).offsets["foo"][BAR0] == OffsetAndMetadata(100, "small")
    for tp in (BAR0, BAR1):
        records.append(TxnOffsetCommitRecord("foo", tp, OffsetAndMetadata(100, "small"), 10, 0))
        assert replay(records).pending_offsets[10]["foo"][tp] == OffsetAndMetadata(100, "small")
    records += [OffsetTombstone("foo", BAR0), OffsetTombstone("foo", BAR1)]
    view = replay(records)
    # Kafka's hasOffset: neither a committed nor a pending offset is left.
    assert "foo" not in view.offsets and view.pending_offsets == {}


# -- deleted topics -----------------------------------------------------------------------------------


def test_testOnPartitionsDeleted():
    """Kafka's onPartitionsDeleted is GroupCoordinator.on_partitions_deleted: a tombstone for every
    group's committed offset of the deleted partitions.  Kafka commits grp-2's offsets
    transactionally (producer 100, still pending); so does the port."""
    ctx = Ctx()
    for group_id, topic in (("grp-0", "foo"), ("grp-1", "bar")):
        partitions = [(TopicPartition(topic, p), OffsetAndMetadata(100 * p, "", 1)) for p in (1, 2, 3)]
        assert commit(ctx, group_id, *partitions)[0] == [E.NONE] * 3
    txn_commits = tuple(PartitionOffsetCommit(TopicPartition("foo", p), OffsetAndMetadata(100 * p, "", 1))
                        for p in (1, 2, 3))
    txn = TxnOffsetCommitRequest("txn", "grp-2", 100, 0, txn_commits)
    assert [p.error_code for p in ctx.call(txn).partitions] == [E.NONE] * 3
    deleted = [TopicPartition("foo", 1), TopicPartition("foo", 2), TopicPartition("foo", 3),
               TopicPartition("bar", 1)]

    result = ctx.coordinator.on_partitions_deleted(deleted)

    expected = {OffsetTombstone("grp-0", TopicPartition("foo", p)) for p in (1, 2, 3)}
    expected |= {OffsetTombstone("grp-1", TopicPartition("bar", 1))}
    expected |= {OffsetTombstone("grp-2", TopicPartition("foo", p)) for p in (1, 2, 3)}
    assert set(result.records) == expected and len(result.records) == len(expected)
    assert result.deliveries == ()
    ctx.records.extend(result.records)
    view = replay(ctx.records)
    left = {TopicPartition("bar", p): OffsetAndMetadata(100 * p, "", 1) for p in (2, 3)}
    assert view.offsets == {"grp-1": left}
    assert view.pending_offsets == {}
    for group_id, tp in (("grp-0", TopicPartition("foo", 1)), ("grp-1", TopicPartition("bar", 1))):
        assert fetch(ctx, group_id, (tp,))[1] == (PartitionOffset(tp, None),)
    assert not ctx.coordinator._pending.has_pending("grp-2", TopicPartition("foo", 1))
    ctx.assert_replays()
