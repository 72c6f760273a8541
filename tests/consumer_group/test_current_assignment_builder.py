"""Reconciliation steps of one member, ported from Kafka's CurrentAssignmentBuilderTest
(org.apache.kafka.coordinator.group.modern.consumer); each test names its Kafka test.

Topics "a" and "b" stand for Kafka's topicId1 and topicId2.
"""
from __future__ import annotations

import pytest
from consumer_group_harness import tps

from kgroup.core.consumer_group.member import ConsumerGroupMember, MemberState
from kgroup.core.consumer_group.reconciliation import FencedMemberEpoch, reconcile
from kgroup.errors import IllegalStateTransition

M = MemberState


def member(state: MemberState, epoch: int, previous: int, assigned: dict,
           pending: dict = {}) -> ConsumerGroupMember:
    return ConsumerGroupMember("member", member_epoch=epoch, previous_member_epoch=previous, state=state,
                               assigned_partitions=tps(assigned), partitions_pending_revocation=tps(pending))


def free(tp) -> int:
    return -1


def held_at(epoch: int):
    return lambda tp: epoch


def test_stable_to_stable():
    """testStableToStable: the target of the member's own epoch leaves it as it is."""
    m = member(M.STABLE, 10, 9, {"a": [1, 2, 3], "b": [4, 5, 6]})
    assert reconcile(m, 10, tps({"a": [1, 2, 3], "b": [4, 5, 6]}), free, None) == m
    # A new epoch with the same partitions only moves the epoch (Kafka's second half of the test).
    assert reconcile(m, 11, tps({"a": [1, 2, 3], "b": [4, 5, 6]}), free, None) == member(
        M.STABLE, 11, 10, {"a": [1, 2, 3], "b": [4, 5, 6]})


def test_stable_to_stable_with_new_partitions():
    """testStableToStableWithNewPartitions."""
    m = member(M.STABLE, 10, 10, {"a": [1, 2, 3], "b": [4, 5, 6]})
    assert reconcile(m, 11, tps({"a": [1, 2, 3, 4], "b": [4, 5, 6, 7]}), free, None) == member(
        M.STABLE, 11, 10, {"a": [1, 2, 3, 4], "b": [4, 5, 6, 7]})


def test_stable_to_unrevoked_partitions():
    """testStableToUnrevokedPartitions: what leaves is pending revocation, the epoch stays."""
    m = member(M.STABLE, 10, 10, {"a": [1, 2, 3], "b": [4, 5, 6]})
    assert reconcile(m, 11, tps({"a": [2, 3, 4], "b": [5, 6, 7]}), free, None) == member(
        M.UNREVOKED_PARTITIONS, 10, 10, {"a": [2, 3], "b": [5, 6]}, {"a": [1], "b": [4]})


def test_stable_to_unreleased_partitions():
    """testStableToUnreleasedPartitions: new partitions still held elsewhere are withheld."""
    m = member(M.STABLE, 10, 10, {"a": [1, 2, 3], "b": [4, 5, 6]})
    assert reconcile(m, 11, tps({"a": [1, 2, 3, 4], "b": [4, 5, 6, 7]}), held_at(10), None) == member(
        M.UNRELEASED_PARTITIONS, 11, 10, {"a": [1, 2, 3], "b": [4, 5, 6]})


def test_stable_to_unreleased_partitions_with_owned_partitions_not_having_revoked_partitions():
    """testStableToUnreleasedPartitionsWithOwnedPartitionsNotHavingRevokedPartitions: a member that
    reports it no longer owns what it must give up goes on at once."""
    m = member(M.STABLE, 10, 10, {"a": [1, 2, 3], "b": [4, 5, 6]})
    epoch_of = lambda tp: 10 if tp.topic == "b" else -1  # noqa: E731
    assert reconcile(m, 11, tps({"a": [1, 2, 3], "b": [4, 5, 7]}), epoch_of, frozenset()) == member(
        M.UNRELEASED_PARTITIONS, 11, 10, {"a": [1, 2, 3], "b": [4, 5]})


def test_unrevoked_partitions_to_stable():
    """testUnrevokedPartitionsToStable."""
    m = member(M.UNREVOKED_PARTITIONS, 10, 10, {"a": [2, 3], "b": [5, 6]}, {"a": [1], "b": [4]})
    owned = tps({"a": [2, 3], "b": [5, 6]})
    assert reconcile(m, 11, tps({"a": [2, 3], "b": [5, 6]}), free, owned) == member(
        M.STABLE, 11, 10, {"a": [2, 3], "b": [5, 6]})


def test_remains_in_unrevoked_partitions():
    """testRemainsInUnrevokedPartitions: unknown ownership, or still owning a revoked partition."""
    m = member(M.UNREVOKED_PARTITIONS, 10, 10, {"a": [2, 3], "b": [5, 6]}, {"a": [1], "b": [4]})
    target = tps({"a": [3], "b": [6]})
    assert reconcile(m, 12, target, free, None) is m
    assert reconcile(m, 12, target, free, tps({"a": [1, 2, 3], "b": [5, 6]})) is m
    assert reconcile(m, 12, target, free, tps({"a": [2, 3], "b": [4, 5, 6]})) is m


def test_unrevoked_partitions_to_unrevoked_partitions():
    """testUnrevokedPartitionsToUnrevokedPartitions: revoked, then asked to revoke more at epoch + 1."""
    m = member(M.UNREVOKED_PARTITIONS, 10, 10, {"a": [2, 3], "b": [5, 6]}, {"a": [1], "b": [4]})
    owned = tps({"a": [2, 3], "b": [5, 6]})
    assert reconcile(m, 12, tps({"a": [3], "b": [6]}), free, owned) == member(
        M.UNREVOKED_PARTITIONS, 11, 10, {"a": [3], "b": [6]}, {"a": [2], "b": [5]})


def test_unrevoked_partitions_to_unreleased_partitions():
    """testUnrevokedPartitionsToUnreleasedPartitions."""
    m = member(M.UNREVOKED_PARTITIONS, 11, 10, {"a": [2, 3], "b": [5, 6]})
    owned = tps({"a": [2, 3], "b": [5, 6]})
    assert reconcile(m, 11, tps({"a": [2, 3, 4], "b": [5, 6, 7]}), held_at(10), owned) == member(
        M.UNRELEASED_PARTITIONS, 11, 11, {"a": [2, 3], "b": [5, 6]})


def test_unreleased_partitions_to_stable():
    """testUnreleasedPartitionsToStable."""
    m = member(M.UNRELEASED_PARTITIONS, 11, 11, {"a": [2, 3], "b": [5, 6]})
    assert reconcile(m, 12, tps({"a": [2, 3], "b": [5, 6]}), held_at(10), None) == member(
        M.STABLE, 12, 11, {"a": [2, 3], "b": [5, 6]})


def test_unreleased_partitions_to_stable_with_new_partitions():
    """testUnreleasedPartitionsToStableWithNewPartitions: the partitions were released meanwhile."""
    m = member(M.UNRELEASED_PARTITIONS, 11, 11, {"a": [2, 3], "b": [5, 6]})
    assert reconcile(m, 11, tps({"a": [2, 3, 4], "b": [5, 6, 7]}), free, None) == member(
        M.STABLE, 11, 11, {"a": [2, 3, 4], "b": [5, 6, 7]})


def test_unreleased_partitions_to_unreleased_partitions():
    """testUnreleasedPartitionsToUnreleasedPartitions: still held elsewhere, nothing changes."""
    m = member(M.UNRELEASED_PARTITIONS, 11, 11, {"a": [2, 3], "b": [5, 6]})
    assert reconcile(m, 11, tps({"a": [2, 3, 4], "b": [5, 6, 7]}), held_at(10), None) == m


def test_unreleased_partitions_to_unrevoked_partitions():
    """testUnreleasedPartitionsToUnrevokedPartitions."""
    m = member(M.UNRELEASED_PARTITIONS, 11, 11, {"a": [2, 3], "b": [5, 6]})
    assert reconcile(m, 12, tps({"a": [3], "b": [6]}), held_at(10), None) == member(
        M.UNREVOKED_PARTITIONS, 11, 11, {"a": [3], "b": [6]}, {"a": [2], "b": [5]})


def test_unknown_state():
    """testUnknownState: fenced while it may own anything; reconciled from scratch once it owns nothing."""
    m = member(M.UNKNOWN, 11, 11, {"a": [3], "b": [6]}, {"a": [2], "b": [5]})
    target = tps({"a": [3], "b": [6]})
    with pytest.raises(FencedMemberEpoch):
        reconcile(m, 12, target, held_at(10), None)
    with pytest.raises(FencedMemberEpoch):
        reconcile(m, 12, target, held_at(10), tps({"a": [3]}))
    expected = member(M.STABLE, 12, 11, {"a": [3], "b": [6]})
    assert reconcile(m, 12, target, held_at(10), frozenset()) == expected


def test_member_state_table_rejects_entering_unknown():
    """kgroup's table: no reconciliation step may produce UNKNOWN (only a newer coordinator's record)."""
    from kgroup.core.consumer_group.member import check_transition

    with pytest.raises(IllegalStateTransition, match="STABLE to UNKNOWN"):
        check_transition("m", M.STABLE, M.UNKNOWN)
    with pytest.raises(IllegalStateTransition):
        check_transition("m", M.UNKNOWN, M.UNREVOKED_PARTITIONS)
