"""Transactional offsets in the group coordinator (KIP-98, KIP-447; issue 26): TxnOffsetCommit's
group checks, pending offsets, the transaction marker, OffsetFetch ``require_stable``, deletes and
replay.  Tests named ``test_test...`` port Kafka's OffsetMetadataManagerTest (group-coordinator,
trunk) scenario for scenario; the others cover what kgroup adds around them (the marker record, a
failover between the commit and its marker, producer epoch fencing).
"""
from __future__ import annotations

from typing import Optional

import pytest
from coordinator_kafka_gmm_harness import Ctx

from kgroup.core.consumer_group_messages import ConsumerGroupHeartbeatRequest
from kgroup.core.coordinator import GroupCoordinator, GroupState, replay
from kgroup.core.coordinator_common.records import (
    OffsetCommitRecord, OffsetTombstone, TxnMarkerRecord, TxnOffsetCommitRecord,
)
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    DeleteGroupsRequest, OffsetAndMetadata, OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest,
    PartitionOffset, PartitionOffsetCommit, TxnOffsetCommitRequest,
)
from kgroup.values import TopicPartition

E = ErrorCode
S = GroupState
PID = 10
FOO0, FOO1, BAR0, BAR1 = (TopicPartition("foo", 0), TopicPartition("foo", 1), TopicPartition("bar", 0),
                          TopicPartition("bar", 1))


def _txn_commit(ctx: Ctx, group_id: str, offsets: dict, *, producer_id: int = PID, producer_epoch: int = 0,
                generation_id: int = -1, member_id: str = "",
                instance_id: Optional[str] = None) -> list[ErrorCode]:
    commits = tuple(PartitionOffsetCommit(tp, OffsetAndMetadata(o, "metadata", 1))
                    for tp, o in offsets.items())
    response = ctx.call(TxnOffsetCommitRequest("txn", group_id, producer_id, producer_epoch, commits,
                                               generation_id=generation_id, member_id=member_id,
                                               group_instance_id=instance_id))
    return [p.error_code for p in response.partitions]


def _commit(ctx: Ctx, group_id: str, offsets: dict) -> None:
    commits = tuple(PartitionOffsetCommit(tp, OffsetAndMetadata(o, "metadata", 1))
                    for tp, o in offsets.items())
    response = ctx.call(OffsetCommitRequest(group_id, commits))
    assert {p.error_code for p in response.partitions} == {E.NONE}


def _end(ctx: Ctx, commit: bool, producer_id: int = PID, producer_epoch: int = 0) -> None:
    result = ctx.coordinator.complete_transaction(producer_id, producer_epoch, commit, ctx.now_ms)
    assert result.records[-1] == TxnMarkerRecord(producer_id, producer_epoch, commit, -1)
    ctx._absorb(result)


def _fetch(ctx: Ctx, group_id: str, partitions, require_stable: bool) -> tuple[PartitionOffset, ...]:
    response = ctx.call(OffsetFetchRequest(group_id, partitions, require_stable))
    assert response.error_code is E.NONE
    return response.partitions


def _at(offset: int, tp: TopicPartition) -> PartitionOffset:
    return PartitionOffset(tp, OffsetAndMetadata(offset, "metadata", 1))


def _unstable(tp: TopicPartition) -> PartitionOffset:
    return PartitionOffset(tp, None, E.UNSTABLE_OFFSET_COMMIT)


def _stable_classic_member(ctx: Ctx, group_id: str = "foo") -> str:
    return ctx.join_dynamic_and_complete_rebalance(group_id).member_id


def _consumer_group_member(ctx: Ctx, group_id: str = "foo") -> tuple[str, int]:
    response = ctx.call(ConsumerGroupHeartbeatRequest(group_id, member_id="member", member_epoch=0,
                                                      rebalance_timeout_ms=5_000,
                                                      subscribed_topic_names=("bar",), topic_partitions=()))
    assert response.error_code is E.NONE
    return response.member_id, response.member_epoch


def _failover(ctx: Ctx) -> None:
    """A new coordinator loads every record written so far; its view must be the old one's."""
    loaded = GroupCoordinator.load(ctx.records, ctx.now_ms, ctx.config)
    assert loaded.persisted_view() == ctx.coordinator.persisted_view()
    ctx.coordinator = loaded


# -- TxnOffsetCommit's checks (OffsetMetadataManagerTest) -----------------------------------------

def test_testGenericGroupTransactionalOffsetCommit():
    ctx = Ctx()
    member_id = _stable_classic_member(ctx)
    assert _txn_commit(ctx, "foo", {BAR0: 100}, generation_id=1, member_id=member_id) == [E.NONE]
    pending = OffsetAndMetadata(100, "metadata", 1)
    assert ctx.records[-1] == TxnOffsetCommitRecord("foo", BAR0, pending, PID, 0)


def test_testGenericGroupTransactionalOffsetCommitWithUnknownGroupId():
    ctx = Ctx()
    assert _txn_commit(ctx, "foo", {BAR0: 100}, generation_id=10, member_id="member") == [
        E.ILLEGAL_GENERATION]
    assert ctx.state("foo") is None


def test_testGenericGroupTransactionalOffsetCommitWithUnknownMemberId():
    ctx = Ctx()
    ctx.create_group("foo")
    assert _txn_commit(ctx, "foo", {BAR0: 100}, generation_id=10, member_id="member") == [
        E.UNKNOWN_MEMBER_ID]


def test_testGenericGroupTransactionalOffsetCommitWithIllegalGenerationId():
    ctx = Ctx()
    member_id = _stable_classic_member(ctx)
    assert _txn_commit(ctx, "foo", {BAR0: 100}, generation_id=100, member_id=member_id) == [
        E.ILLEGAL_GENERATION]


def test_testConsumerGroupTransactionalOffsetCommit():
    ctx = Ctx()
    member_id, epoch = _consumer_group_member(ctx)
    assert _txn_commit(ctx, "foo", {BAR0: 100}, generation_id=epoch, member_id=member_id) == [E.NONE]


def test_testConsumerGroupTransactionalOffsetCommitWithUnknownMemberId():
    ctx = Ctx()
    _consumer_group_member(ctx)
    assert _txn_commit(ctx, "foo", {BAR0: 100}, generation_id=1, member_id="other") == [E.UNKNOWN_MEMBER_ID]


def test_testConsumerGroupTransactionalOffsetCommitWithStaleMemberEpoch():
    # ConsumerGroup answers STALE_MEMBER_EPOCH; validateTransactionalOffsetCommit turns it into
    # ILLEGAL_GENERATION, the error transactional producers know.
    ctx = Ctx()
    member_id, epoch = _consumer_group_member(ctx)
    assert _txn_commit(ctx, "foo", {BAR0: 100}, generation_id=epoch + 99, member_id=member_id) == [
        E.ILLEGAL_GENERATION]


def test_a_consumer_group_with_members_refuses_a_txn_commit_without_member_identity():
    # ConsumerGroup.validateOffsetCommit looks the member "" up (TxnOffsetCommit v0-v2 send no identity).
    ctx = Ctx()
    _consumer_group_member(ctx)
    assert _txn_commit(ctx, "foo", {BAR0: 100}) == [E.UNKNOWN_MEMBER_ID]


# -- KIP-447 fencing of classic members -----------------------------------------------------------

def test_kip447_a_zombie_of_an_older_generation_is_fenced_and_its_offsets_never_written():
    ctx = Ctx()
    old_member = _stable_classic_member(ctx)
    # A second member joins: generation 2; the first rejoins, so generation 1 is a zombie's.
    first = ctx.call(ctx.join_request(group_id="foo"))
    new_key = ctx.join(group_id="foo", member_id=first.member_id)
    old_key = ctx.join(group_id="foo", member_id=old_member)
    assert ctx.result(new_key).generation_id == ctx.result(old_key).generation_id == 2
    before = len(ctx.records)
    assert _txn_commit(ctx, "foo", {BAR0: 5}, generation_id=1, member_id=old_member) == [E.ILLEGAL_GENERATION]
    assert not any(isinstance(r, TxnOffsetCommitRecord) for r in ctx.records[before:])
    # KIP-447: the group state does not matter to a transactional commit of the current generation
    # (CompletingRebalance answers OffsetCommit REBALANCE_IN_PROGRESS).
    assert ctx.state("foo") is S.COMPLETING_REBALANCE
    assert _txn_commit(ctx, "foo", {BAR0: 5}, generation_id=2, member_id=old_member) == [E.NONE]


def test_kip447_static_member_checks():
    ctx = Ctx()
    rebalance = ctx.static_members_join_and_rebalance(group_id="foo")
    leader = rebalance.leader_id
    assert _txn_commit(ctx, "foo", {BAR0: 1}, generation_id=1, member_id=leader,
                       instance_id="follower-instance-id") == [E.FENCED_INSTANCE_ID]
    assert _txn_commit(ctx, "foo", {BAR0: 1}, generation_id=1, member_id=leader,
                       instance_id="unknown-instance") == [E.UNKNOWN_MEMBER_ID]
    assert _txn_commit(ctx, "foo", {BAR0: 1}, generation_id=1, member_id=leader,
                       instance_id="leader-instance-id") == [E.NONE]


def test_v0_v2_commits_without_generation_are_accepted_by_a_classic_group_in_any_state():
    ctx = Ctx()
    _stable_classic_member(ctx)
    assert ctx.state("foo") is S.STABLE
    # An OffsetCommit with no identity is refused by a group with members...
    commit = PartitionOffsetCommit(BAR0, OffsetAndMetadata(1))
    assert ctx.call(OffsetCommitRequest("foo", (commit,))).partitions[0].error_code is E.UNKNOWN_MEMBER_ID
    # ...a TxnOffsetCommit v0-v2 (-1 / "" / no instance) is not (ClassicGroup, isTransactional).
    assert _txn_commit(ctx, "foo", {BAR0: 1}) == [E.NONE]


def test_an_unknown_group_with_no_generation_becomes_a_simple_group():
    ctx = Ctx()
    assert _txn_commit(ctx, "simple", {BAR0: 1}) == [E.NONE]
    assert ctx.state("simple") is S.EMPTY


def test_empty_group_id_dead_group_and_oversized_metadata():
    ctx = Ctx(initial_delay_ms=0)
    assert _txn_commit(ctx, "", {BAR0: 1}) == [E.INVALID_GROUP_ID]
    ctx.create_group("foo")
    assert ctx.delete("foo") == [E.NONE]
    assert _txn_commit(ctx, "foo", {BAR0: 1}, generation_id=3, member_id="m") == [E.COORDINATOR_NOT_AVAILABLE]
    big = PartitionOffsetCommit(BAR1, OffsetAndMetadata(1, "x" * (ctx.config.offset_metadata_max_bytes + 1)))
    small = PartitionOffsetCommit(BAR0, OffsetAndMetadata(1))
    response = ctx.call(TxnOffsetCommitRequest("txn", "g2", PID, 0, (small, big)))
    assert [p.error_code for p in response.partitions] == [E.NONE, E.OFFSET_METADATA_TOO_LARGE]


def test_a_zombie_producer_epoch_is_refused_with_invalid_producer_epoch():
    # ProducerAppendInfo.checkProducerEpoch on the offsets partition: an older epoch of a producer id
    # that already wrote there is a fenced producer's.
    ctx = Ctx()
    assert _txn_commit(ctx, "g", {BAR0: 1}, producer_epoch=5) == [E.NONE]
    assert _txn_commit(ctx, "g", {BAR0: 2}, producer_epoch=4) == [E.INVALID_PRODUCER_EPOCH]
    assert ctx.coordinator.is_stale_producer_epoch(PID, 4)
    with pytest.raises(ValueError, match="zombie"):
        ctx.coordinator.complete_transaction(PID, 4, True, ctx.now_ms)
    _end(ctx, True, producer_epoch=6)  # KIP-890 ends with a bumped epoch: newer is fine
    assert _fetch(ctx, "g", (BAR0,), True) == (_at(1, BAR0),)


# -- pending offsets, the marker, OffsetFetch ------------------------------------------------------

def test_testFetchOffsetsWithPendingTransactionalOffsets():
    ctx = Ctx()
    _commit(ctx, "group", {FOO0: 100, FOO1: 110, BAR0: 200})
    assert _txn_commit(ctx, "group", {FOO1: 111, BAR0: 201, BAR1: 211}) == [E.NONE] * 3
    asked = (FOO0, FOO1, BAR0, BAR1)
    assert _fetch(ctx, "group", asked, True) == (
        _at(100, FOO0), _unstable(FOO1), _unstable(BAR0), _unstable(BAR1))
    assert _fetch(ctx, "group", asked, False) == (
        _at(100, FOO0), _at(110, FOO1), _at(200, BAR0), PartitionOffset(BAR1, None))
    _end(ctx, commit=True)
    assert _fetch(ctx, "group", asked, True) == (
        _at(100, FOO0), _at(111, FOO1), _at(201, BAR0), _at(211, BAR1))


def test_testFetchAllOffsetsWithPendingTransactionalOffsets():
    ctx = Ctx()
    _commit(ctx, "group", {FOO0: 100, FOO1: 110, BAR0: 200})
    _txn_commit(ctx, "group", {FOO1: 111, BAR0: 201, BAR1: 211})
    # bar-1 has no committed offset: not listed until the transaction commits.
    assert set(_fetch(ctx, "group", None, True)) == {_at(100, FOO0), _unstable(FOO1), _unstable(BAR0)}
    assert set(_fetch(ctx, "group", None, False)) == {_at(100, FOO0), _at(110, FOO1), _at(200, BAR0)}
    _end(ctx, commit=True)
    assert set(_fetch(ctx, "group", None, True)) == {
        _at(100, FOO0), _at(111, FOO1), _at(201, BAR0), _at(211, BAR1)}


def test_abort_drops_the_pending_offsets():
    ctx = Ctx()
    _commit(ctx, "group", {FOO0: 100})
    _txn_commit(ctx, "group", {FOO0: 150, FOO1: 10})
    _end(ctx, commit=False)
    assert _fetch(ctx, "group", (FOO0, FOO1), True) == (_at(100, FOO0), PartitionOffset(FOO1, None))
    assert ctx.coordinator.persisted_view().pending_offsets == {}


def test_testReplayTransactionEndMarkerWithCommit():
    ctx = Ctx()
    _commit(ctx, "foo", {BAR0: 99})
    _txn_commit(ctx, "foo", {BAR0: 100}, producer_id=5)
    _txn_commit(ctx, "foo", {BAR1: 200}, producer_id=6)
    _end(ctx, True, producer_id=1)  # a producer with nothing pending: ignored
    _end(ctx, True, producer_id=5)
    _end(ctx, False, producer_id=6)
    view = ctx.coordinator.persisted_view()
    assert view.offsets["foo"] == {BAR0: OffsetAndMetadata(100, "metadata", 1)}
    assert view.pending_offsets == {}
    assert replay(ctx.records) == view


def test_testReplayTransactionEndMarkerKeepsTheMostRecentCommittedOffset():
    ctx = Ctx()
    _txn_commit(ctx, "foo", {BAR0: 100}, producer_id=5)
    _commit(ctx, "foo", {BAR0: 101})
    _end(ctx, True, producer_id=5)
    assert _fetch(ctx, "foo", (BAR0,), True) == (_at(101, BAR0),)
    assert replay(ctx.records).offsets["foo"] == {BAR0: OffsetAndMetadata(101, "metadata", 1)}


def test_a_later_transaction_overrides_an_earlier_plain_commit_and_an_earlier_transaction():
    # Record order decides, across producers too: 5 writes, 6 writes later; 6 commits first, then 5.
    ctx = Ctx()
    _commit(ctx, "foo", {BAR0: 1})
    _txn_commit(ctx, "foo", {BAR0: 50}, producer_id=5)
    _txn_commit(ctx, "foo", {BAR0: 60}, producer_id=6)
    _end(ctx, True, producer_id=6)
    _end(ctx, True, producer_id=5)
    assert _fetch(ctx, "foo", (BAR0,), False) == (_at(60, BAR0),)
    _failover(ctx)


def test_testTransactionalReplay():
    ctx = Ctx()
    _txn_commit(ctx, "foo", {TopicPartition("bar", 0): 100, TopicPartition("bar", 1): 101}, producer_id=5)
    _txn_commit(ctx, "bar", {TopicPartition("zar", 0): 100, TopicPartition("zar", 1): 101}, producer_id=5)
    _txn_commit(ctx, "foo", {TopicPartition("bar", 2): 102, TopicPartition("bar", 3): 102}, producer_id=6)
    pending = replay(ctx.records).pending_offsets
    assert set(pending) == {5, 6}
    assert pending[5]["bar"][TopicPartition("zar", 1)] == OffsetAndMetadata(101, "metadata", 1)
    assert set(pending[6]["foo"]) == {TopicPartition("bar", 2), TopicPartition("bar", 3)}
    _failover(ctx)


# -- failover between the commit and its marker ------------------------------------------------------

def test_a_failover_between_the_commit_and_its_marker_keeps_the_offsets_pending_then_the_marker_commits():
    ctx = Ctx()
    _commit(ctx, "group", {FOO0: 100})
    _txn_commit(ctx, "group", {FOO0: 200}, producer_epoch=3)
    _failover(ctx)
    assert _fetch(ctx, "group", (FOO0,), True) == (_unstable(FOO0),)
    assert _fetch(ctx, "group", (FOO0,), False) == (_at(100, FOO0),)
    # The loaded coordinator still knows the producer's epoch.
    assert _txn_commit(ctx, "group", {FOO0: 1}, producer_epoch=2) == [E.INVALID_PRODUCER_EPOCH]
    _end(ctx, True, producer_epoch=3)
    assert _fetch(ctx, "group", (FOO0,), True) == (_at(200, FOO0),)
    _failover(ctx)
    assert _fetch(ctx, "group", (FOO0,), True) == (_at(200, FOO0),)


def test_a_failover_after_an_abort_marker_loads_no_pending_offsets():
    ctx = Ctx()
    _txn_commit(ctx, "group", {FOO0: 200})
    _end(ctx, False)
    _failover(ctx)
    assert _fetch(ctx, "group", (FOO0,), True) == (PartitionOffset(FOO0, None),)


# -- deletes --------------------------------------------------------------------------------------

@pytest.mark.parametrize("consumer_group", [False, True], ids=["classic", "consumer"])
def test_testOffsetDeleteWithPendingTransactionalOffsets(consumer_group):
    # testGenericGroupOffsetDeleteWithPendingTransactionalOffsets /
    # testConsumerGroupOffsetDeleteWithPendingTransactionalOffsets.
    ctx = Ctx()
    if consumer_group:
        member_id, epoch = _consumer_group_member(ctx)  # subscribed to "bar", not "foo"
        assert _txn_commit(ctx, "foo", {FOO0: 100}, generation_id=epoch, member_id=member_id) == [E.NONE]
    else:
        assert _txn_commit(ctx, "foo", {FOO0: 100}) == [E.NONE]
    response = ctx.call(OffsetDeleteRequest("foo", (FOO0,)))
    assert response.error_code is E.NONE and response.partitions[0].error_code is E.NONE
    assert ctx.records[-1] == OffsetTombstone("foo", FOO0)
    _end(ctx, commit=True)
    assert _fetch(ctx, "foo", (FOO0,), True) == (PartitionOffset(FOO0, None),)
    _failover(ctx)


def test_testDeleteGroupAllOffsetsWithPendingTransactionalOffsets():
    ctx = Ctx()
    b00, b01, b10, b20 = (TopicPartition("bar-0", 0), TopicPartition("bar-0", 1), TopicPartition("bar-1", 0),
                          TopicPartition("bar-2", 0))
    _commit(ctx, "foo", {b00: 100, b01: 100, b10: 100})
    _txn_commit(ctx, "foo", {b10: 101, b20: 100})
    before = len(ctx.records)
    assert [r.error_code for r in ctx.call(DeleteGroupsRequest(("foo",))).results] == [E.NONE]
    tombstones = [r for r in ctx.records[before:] if isinstance(r, OffsetTombstone)]
    # One tombstone per partition, the pending-only bar-2-0 included (Kafka's deleteAllOffsets).
    assert sorted(t.topic_partition for t in tombstones) == [b00, b01, b10, b20]
    assert ctx.coordinator.persisted_view().pending_offsets == {}
    _end(ctx, commit=True)
    assert ctx.coordinator.persisted_view().offsets == {}
    _failover(ctx)


def test_a_group_with_pending_offsets_and_no_members_can_be_deleted():
    # Kafka validates DeleteGroups on members only (NON_EMPTY_GROUP); open transactions do not block it.
    ctx = Ctx()
    _txn_commit(ctx, "g", {FOO0: 1})
    assert ctx.delete("g") == [E.NONE]
    assert not any(isinstance(r, OffsetCommitRecord) for r in ctx.records)
