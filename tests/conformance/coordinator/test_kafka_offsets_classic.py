"""Kafka OffsetMetadataManagerTest (group-coordinator, trunk): classic-group ("generic group")
OffsetCommit / OffsetFetch validation.  One test per Kafka test, named after it.

Kafka builds the groups by hand (``group.add`` + ``initNextGeneration``); here
they are formed through JoinGroup / SyncGroup.
"""
from __future__ import annotations

from coordinator_kafka_gmm_harness import Ctx

from kgroup.core.coordinator import GroupState
from kgroup.core.error_codes import ErrorCode

E = ErrorCode
S = GroupState


def _static_member_in_generation_1(ctx, group_id="foo", stable=True):
    key = ctx.join(group_id=group_id, instance_id="new-instance-id", session_ms=5_000, rebalance_ms=10_000)
    ctx.sleep(ctx.delay_ms)
    joined = ctx.result(key)
    assert joined.generation_id == 1 and ctx.state(group_id) is S.COMPLETING_REBALANCE
    if stable:
        assert ctx.result(ctx.sync(joined.member_id, 1, group_id=group_id,
                                   instance_id="new-instance-id")).error_code is E.NONE
    return joined.member_id


def test_testOffsetCommitWithUnknownGroup():
    # Kafka: GROUP_ID_NOT_FOUND from v9, ILLEGAL_GENERATION before; kgroup answers the latter
    # (classic clients' answer, see docs/coordinator.md).
    ctx = Ctx()
    assert ctx.commit("foo", member_id="member", generation_id=10) is E.ILLEGAL_GENERATION
    assert ctx.state("foo") is None


def test_testGenericGroupOffsetCommitWithDeadGroup():
    ctx = Ctx()
    ctx.create_group("foo")
    assert ctx.delete("foo") == [E.NONE]
    assert ctx.commit("foo", member_id="member", generation_id=10) is E.COORDINATOR_NOT_AVAILABLE


def test_testGenericGroupOffsetCommitWithUnknownMemberId():
    ctx = Ctx()
    ctx.create_group("foo")
    assert ctx.commit("foo", member_id="member", generation_id=10) is E.UNKNOWN_MEMBER_ID


def test_testGenericGroupOffsetCommitWithIllegalGeneration():
    ctx = Ctx()
    member_id = _static_member_in_generation_1(ctx)
    assert ctx.commit("foo", member_id=member_id, generation_id=10) is E.ILLEGAL_GENERATION


def test_testGenericGroupOffsetCommitWithUnknownInstanceId():
    ctx = Ctx()
    joined = ctx.join_dynamic_and_complete_rebalance("foo")
    code = ctx.commit("foo", member_id=joined.member_id, instance_id="instanceid", generation_id=10)
    assert code is E.UNKNOWN_MEMBER_ID


def test_testGenericGroupOffsetCommitWithFencedInstanceId():
    # Kafka's test (despite its name) expects UNKNOWN_MEMBER_ID: "old-instance-id" is not in the group.
    ctx = Ctx()
    member_id = _static_member_in_generation_1(ctx)
    code = ctx.commit("foo", member_id=member_id, instance_id="old-instance-id", generation_id=10)
    assert code is E.UNKNOWN_MEMBER_ID


def test_testGenericGroupOffsetCommitWhileInCompletingRebalanceState():
    ctx = Ctx()
    member_id = _static_member_in_generation_1(ctx, stable=False)
    assert ctx.commit("foo", member_id=member_id, generation_id=1) is E.REBALANCE_IN_PROGRESS


def test_testGenericGroupOffsetCommitWithoutMemberIdAndGeneration():
    ctx = Ctx()
    _static_member_in_generation_1(ctx, stable=False)
    assert ctx.commit("foo") is E.UNKNOWN_MEMBER_ID


def test_testGenericGroupOffsetCommitWithRetentionTime():
    # Retention is not modelled; the commit itself is accepted and stored.
    ctx = Ctx()
    member_id = _static_member_in_generation_1(ctx)
    assert ctx.commit("foo", member_id=member_id, generation_id=1, offset=100) is E.NONE
    assert ctx.fetch("foo").partitions[0].committed.offset == 100


def test_testGenericGroupOffsetCommitMaintainsSession():
    ctx = Ctx()
    member_id = _static_member_in_generation_1(ctx)
    ctx.sleep(2_500)
    assert ctx.commit("foo", member_id=member_id, generation_id=1) is E.NONE
    ctx.sleep(2_500)
    assert member_id in ctx.group("foo").members
    ctx.sleep(2_500)
    assert member_id not in ctx.group("foo").members


def test_testSimpleGroupOffsetCommit():
    ctx = Ctx()
    assert ctx.commit("foo") is E.NONE
    assert ctx.state("foo") is S.EMPTY
    assert ctx.fetch("foo").partitions[0].committed.offset == 100


def test_testSimpleGroupOffsetCommitWithInstanceId():
    ctx = Ctx()
    assert ctx.commit("foo", instance_id="instance-id") is E.NONE
    assert ctx.fetch("foo").partitions[0].committed.offset == 100


def test_testGenericGroupFetchOffsetsWithDeadGroup():
    ctx = Ctx()
    ctx.create_group("group")
    assert ctx.delete("group") == [E.NONE]
    fetched = ctx.fetch("group", partitions=(0, 1))
    assert fetched.error_code is E.NONE
    assert [(p.committed, p.error_code) for p in fetched.partitions] == [(None, E.NONE), (None, E.NONE)]


def test_testFetchOffsetsWithUnknownGroup():
    ctx = Ctx()
    fetched = ctx.fetch("group", partitions=(0, 1))
    assert fetched.error_code is E.NONE
    assert [(p.committed, p.error_code) for p in fetched.partitions] == [(None, E.NONE), (None, E.NONE)]


def test_testGenericGroupFetchAllOffsetsWithDeadGroup():
    ctx = Ctx()
    ctx.create_group("group")
    assert ctx.delete("group") == [E.NONE]
    fetched = ctx.fetch("group", partitions=None)
    assert fetched.error_code is E.NONE and fetched.partitions == ()


def test_testFetchAllOffsetsWithUnknownGroup():
    ctx = Ctx()
    fetched = ctx.fetch("group", partitions=None)
    assert fetched.error_code is E.NONE and fetched.partitions == ()


def test_testDeleteGroupAllOffsets():
    from kgroup.core.coordinator_common.records import OffsetTombstone
    ctx = Ctx()
    assert ctx.commit("foo", partition=0) is E.NONE and ctx.commit("foo", partition=1) is E.NONE
    before = len(ctx.records)
    assert ctx.delete("foo") == [E.NONE]
    tombstones = [r for r in ctx.records[before:] if isinstance(r, OffsetTombstone)]
    assert {r.topic_partition.partition for r in tombstones} == {0, 1}
