"""Fencing, leaving, the poll timeout and heartbeat errors of the KIP-848 member (scripted coordinator).

Each test names the Kafka test it ports (org.apache.kafka.clients.consumer.internals).
"""
from __future__ import annotations

import pytest

from kgroup.core import messages as m
from kgroup.core.consumer_group_messages import ConsumerGroupHeartbeatRequest
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member.consumer import ConsumerMemberState as S
from kgroup.core.member.consumer import ReconcileStep
from kgroup.errors import (
    FencedInstanceIdError,
    GroupMaxSizeReachedError,
    GroupMemberError,
    MemberClosedError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
)
from kgroup.values import TopicPartition

from consumer_member_script_harness import ScriptedMember, tps

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def stable(**config) -> ScriptedMember:
    sm = ScriptedMember(**config)
    sm.join(assignment=tps("t", 0, 1), epoch=5)
    sm.answer_heartbeat(epoch=5)
    sm.callbacks.clear()
    return sm


@pytest.mark.parametrize("error", [ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID])
def test_fenced_member_loses_partitions_and_rejoins_with_epoch_zero(error):
    """ConsumerMembershipManagerTest.testFencingWhenStateIsStable / testMemberIdAndEpochResetOnFencedMembers,
    ConsumerHeartbeatRequestManagerTest.testFencedMemberStopHeartbeatUntilItReleasesAssignmentToRejoin"""
    sm = stable()
    member_id = sm.member.member_id
    sm.advance(3000)
    sm.heartbeat()
    sm.answer_heartbeat(epoch=5, error=error)
    assert sm.member.state is S.FENCED
    assert sm.member.member_epoch == 0
    assert sm.member.assignment == frozenset()  # the app must stop at once: someone else may own them
    assert sm.pump() == []  # no heartbeat until the lost callback ran
    sm.poll()
    assert sm.callbacks == [("lost", [T0, T1])]
    assert sm.member.state is S.JOINING
    join = sm.heartbeat()  # at once: fencing skips the backoff
    assert (join.member_epoch, join.member_id, join.topic_partitions) == (0, member_id, ())
    assert join.subscribed_topic_names == ("t",) and join.rebalance_timeout_ms == 10_000


def test_fenced_with_no_partitions_rejoins_at_once():
    """ConsumerMembershipManagerTest.testFencedWhenAssignmentEmpty"""
    sm = ScriptedMember()
    sm.join(assignment=())
    sm.answer_heartbeat(epoch=1, error=ErrorCode.FENCED_MEMBER_EPOCH)
    assert sm.member.state is S.JOINING
    assert sm.heartbeat().member_epoch == 0


def test_fenced_while_reconciling_aborts_the_reconciliation():
    """ConsumerMembershipManagerTest.testFencingWhenStateIsReconciling and
    testDelayedReconciliationResultDiscardedIfMemberNotInReconcilingStateAnymore"""
    sm = stable()
    sm.advance(3000)
    sm.heartbeat()
    sm.answer_heartbeat(epoch=6, assignment=tps("t", 1, 2), interval_ms=100)
    sm.poll()  # revocation of t-0 handed out
    sm.advance(100)
    sm.heartbeat()
    sm.answer_heartbeat(epoch=6, error=ErrorCode.FENCED_MEMBER_EPOCH)
    sm.poll_until_quiet()
    assert sm.callbacks == [("revoked", [T0]), ("lost", [T1])]  # t-2 was never handed out
    assert sm.member.state is S.JOINING
    assert sm.member.reconciliation_step is ReconcileStep.IDLE


@pytest.mark.parametrize("static, epoch", [(False, -1), (True, -2)])
def test_leave_epoch(static, epoch):
    """ConsumerMembershipManagerTest.testLeaveGroupEpoch and testLeaveGroupWhenMemberOwnsAssignment"""
    sm = stable(group_instance_id="i-1" if static else None)
    sm.member.unsubscribe(sm.now)
    assert sm.member.state is S.PREPARE_LEAVING
    assert not [r for r in sm.pump() if isinstance(r, ConsumerGroupHeartbeatRequest)]  # callbacks first
    sm.poll()
    assert sm.callbacks == [("revoked", [T0, T1])]
    assert sm.member.state is S.LEAVING
    leave = sm.heartbeat()
    assert leave.member_epoch == epoch
    assert leave.instance_id == ("i-1" if static else None)
    assert sm.member.state is S.UNSUBSCRIBED
    sm.answer_heartbeat(epoch=epoch)
    assert sm.member.state is S.UNSUBSCRIBED


def test_leave_waits_for_a_commit_made_in_the_revocation_callback():
    """The commit made in on_partitions_revoked carries the member epoch; the leave goes after it
    (Kafka's leaveGroup completes the callback, with its commitSync, before the leave heartbeat)."""
    sm = stable()
    sm.member.unsubscribe(sm.now)
    sm.poll()
    sm.member.commit_offsets({T0: 11}, sm.now, deadline_ms=sm.now + 5000)  # made in the callback
    out = sm.pump()
    kinds = [type(r) for r in out]
    assert kinds == [m.OffsetCommitRequest, ConsumerGroupHeartbeatRequest]
    assert out[0].generation_id == 5 and out[1].member_epoch == -1


def test_close_leaves_and_finishes():
    """ConsumerHeartbeatRequestManagerTest.testPollOnCloseGeneratesRequestIfNeeded"""
    sm = stable()
    sm.member.close(sm.now)
    sm.poll()
    leave = sm.heartbeat()
    assert leave.member_epoch == -1
    assert not sm.member.closed  # its answer is still awaited
    sm.answer_heartbeat(epoch=-1)
    assert sm.member.closed
    with pytest.raises(MemberClosedError):
        sm.member.subscribe(["t"], sm.now)


def test_close_remaining_in_group_sends_no_leave():
    """KIP-1092 CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP"""
    sm = stable(group_instance_id="i-1")
    sm.member.close(sm.now, leave_group=False)
    sm.poll()
    assert sm.callbacks == [("revoked", [T0, T1])]
    assert not [r for r in sm.pump() if isinstance(r, ConsumerGroupHeartbeatRequest)]
    assert sm.member.closed


def test_fenced_while_preparing_to_leave_completes_the_leave():
    """ConsumerMembershipManagerTest.testFencingWhenStateIsPrepareLeavingCompletesTheLeaveOperation"""
    sm = stable()
    sm.advance(3000)
    sm.heartbeat()
    sm.member.unsubscribe(sm.now)
    sm.answer_heartbeat(epoch=5, error=ErrorCode.FENCED_MEMBER_EPOCH)
    assert sm.member.state is S.UNSUBSCRIBED
    sm.poll()
    assert not [r for r in sm.pump() if isinstance(r, ConsumerGroupHeartbeatRequest)]


def test_new_assignment_ignored_while_preparing_to_leave():
    """ConsumerMembershipManagerTest.testNewAssignmentIgnoredWhenStateIsPrepareLeaving"""
    sm = stable()
    sm.advance(3000)
    sm.heartbeat()
    sm.member.unsubscribe(sm.now)
    sm.answer_heartbeat(epoch=6, assignment=tps("t", 0, 1, 2))
    assert sm.member.state is S.PREPARE_LEAVING
    assert sm.member.target_assignment == tps("t", 0, 1)


def test_poll_timeout_leaves_then_rejoins_on_the_next_poll():
    """ConsumerHeartbeatRequestManagerTest.testPollTimerExpiration,
    ConsumerMembershipManagerTest.testTransitionToLeavingWhileStableDueToStaleMember and
    testStaleMemberWaitsForCallbackToRejoinWhenTimerReset"""
    sm = stable(max_poll_interval_ms=10_000)
    sm.advance(3000)
    sm.heartbeat()
    sm.answer_heartbeat(epoch=5)
    sm.advance(7000)  # 10 s since the last poll
    leave = sm.heartbeat()
    assert leave.member_epoch == -1
    assert sm.member.state is S.STALE
    assert sm.member.assignment == frozenset()
    sm.advance(60_000)
    assert sm.pump() == []  # a stale member sends nothing (ConsumerMembershipManagerTest.
    #                         testStaleMemberDoesNotSendHeartbeatAndAllowsTransitionToJoiningToRecover)
    sm.poll()  # the application is back: the lost callback runs, then the member rejoins
    assert sm.callbacks == [("lost", [T0, T1])]
    assert sm.member.state is S.JOINING
    join = sm.heartbeat()
    assert join.member_epoch == 0 and join.topic_partitions == ()


def test_poll_timeout_does_not_fire_while_leaving():
    """Kafka ConsumerHeartbeatRequestManagerTest
    .testPollTimerExpirationShouldNotMarkMemberStaleIfMemberAlreadyLeaving"""
    sm = stable(max_poll_interval_ms=10_000)
    sm.member.unsubscribe(sm.now)
    sm.advance(20_000)
    # Still preparing (the revocation callback has not run): a regular heartbeat, no leave.
    assert [r.member_epoch for r in sm.pump() if isinstance(r, ConsumerGroupHeartbeatRequest)] == [5]
    assert sm.member.state is S.PREPARE_LEAVING


@pytest.mark.parametrize("error, error_class", [
    (ErrorCode.UNSUPPORTED_ASSIGNOR, UnsupportedAssignorError),
    (ErrorCode.GROUP_MAX_SIZE_REACHED, GroupMaxSizeReachedError),
    (ErrorCode.UNRELEASED_INSTANCE_ID, UnreleasedInstanceIdError),
    (ErrorCode.FENCED_INSTANCE_ID, FencedInstanceIdError),
    (ErrorCode.GROUP_AUTHORIZATION_FAILED, GroupMemberError),
    (ErrorCode.INVALID_REQUEST, GroupMemberError),
    (ErrorCode.UNSUPPORTED_VERSION, GroupMemberError),
])
def test_fatal_heartbeat_errors(error, error_class):
    """ConsumerHeartbeatRequestManagerTest.testHeartbeatResponseOnErrorHandling (fatal rows),
    ConsumerMembershipManagerTest.testTransitionToFailedWhenTryingToJoin"""
    sm = ScriptedMember(group_instance_id="i-1")
    sm.poll()
    sm.find_coordinator()
    sm.heartbeat()
    sm.answer_heartbeat(epoch=0, error=error, message="said the coordinator")
    assert sm.member.state is S.FATAL
    sm.poll()
    assert len(sm.fatal) == 1
    raised = sm.fatal[0].error
    assert type(raised) is error_class and raised.error_code is error
    assert "said the coordinator" in str(raised)
    assert sm.pump() == [] and sm.member.get_timer() is None
    with pytest.raises(MemberClosedError):
        sm.member.commit_offsets({T0: 1}, sm.now)


def test_fatal_error_while_stable_loses_the_partitions():
    """ConsumerMembershipManagerTest.testFatalFailureWhenStateIsStable"""
    sm = stable()
    sm.advance(3000)
    sm.heartbeat()
    sm.answer_heartbeat(epoch=5, error=ErrorCode.GROUP_MAX_SIZE_REACHED)
    sm.poll()
    assert sm.callbacks == [("lost", [T0, T1])]
    assert sm.member.assignment == frozenset()


@pytest.mark.parametrize("error", [ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE])
def test_coordinator_moved_rediscovers_and_sends_a_full_heartbeat(error):
    """ConsumerHeartbeatRequestManagerTest.testHeartbeatResponseOnErrorHandling (retriable rows)"""
    sm = stable()
    sm.advance(3000)
    sm.heartbeat()
    sm.answer_heartbeat(epoch=5, error=error)
    assert sm.member.coordinator_id is None and sm.member.state is S.STABLE
    sm.find_coordinator(node_id=8)
    hb = sm.heartbeat()  # at once, no backoff
    assert hb.member_epoch == 5
    assert hb.topic_partitions == (T0, T1) and hb.subscribed_topic_names == ("t",)
    assert sm.member.coordinator_id == 8


def test_coordinator_loading_retries_after_an_exponential_backoff():
    """ConsumerHeartbeatRequestManagerTest.testHeartbeatResponseOnErrorHandling
    (COORDINATOR_LOAD_IN_PROGRESS); HeartbeatRequestState's backoff (RequestState's exponential
    backoff, without jitter)"""
    sm = stable(retry_backoff_ms=100, retry_backoff_max_ms=300)
    for backoff in (100, 200, 300, 300):
        sm.advance(3000 if backoff == 100 else 0)
        sm.heartbeat()
        sm.answer_heartbeat(epoch=5, error=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        sm.advance(backoff - 1)
        assert sm.pump() == []
        sm.advance(1)
    hb = sm.heartbeat()
    assert hb.topic_partitions == (T0, T1)  # full after an error
    sm.answer_heartbeat(epoch=5)
    assert sm.member.state is S.STABLE


def test_heartbeat_answer_from_before_a_rejoin_is_ignored():
    """A heartbeat of the previous membership answered after the member rejoined changes nothing."""
    sm = stable(max_poll_interval_ms=10_000)
    sm.advance(3000)
    sm.heartbeat()  # in flight when the poll timeout fires
    sm.advance(7000)
    assert [r.member_epoch for r in sm.pump()] == [-1]  # the leave; the heartbeat in flight is dropped
    sm.poll()
    assert sm.member.state is S.JOINING
    stale = sm.pending[ConsumerGroupHeartbeatRequest].pop(0)
    sm.member.on_response(stale.token, sm.member_response(epoch=9, assignment=tps("t", 7)), sm.now)
    assert sm.member.state is S.JOINING and sm.member.member_epoch == 0
    assert sm.heartbeat().member_epoch == 0


def test_subscribing_again_after_leaving_joins_on_the_next_poll():
    """ConsumerMembershipManagerTest.testOnSubscriptionUpdatedTransitionsToJoiningOnPollIfNotInGroup and
    testOnSubscriptionUpdatedDoesNotTransitionToJoiningIfInGroup"""
    sm = stable()
    sm.member.subscribe(["t", "u"], sm.now)
    sm.poll()
    assert sm.member.state is S.STABLE  # in the group: the next heartbeat carries the new topics
    sm.member.unsubscribe(sm.now)
    sm.poll()
    sm.heartbeat()  # the leave
    assert sm.member.state is S.UNSUBSCRIBED
    sm.member.subscribe(["t"], sm.now)
    assert sm.member.state is S.UNSUBSCRIBED
    sm.poll()
    assert sm.member.state is S.JOINING
    join = sm.heartbeat()
    assert join.member_epoch == 0 and join.subscribed_topic_names == ("t",)


def test_a_leave_right_after_a_commit_goes_in_the_same_round():
    sm = stable()
    sm.member.unsubscribe(sm.now)
    sm.poll()
    sm.member.commit_offsets({T0: 1}, sm.now, deadline_ms=sm.now + 5000)
    assert [type(r).__name__ for r in sm.pump()] == ["OffsetCommitRequest", "ConsumerGroupHeartbeatRequest"]


def test_a_leave_waits_for_a_commit_queued_behind_another():
    """The leave holds while a commit of the last callback still waits (behind an in-flight commit of
    the same partition), asking for no wake-up of its own meanwhile (no busy loop)."""
    sm = stable()
    sm.member.commit_offsets({T0: 1}, sm.now, deadline_ms=sm.now + 5000)
    assert [type(r).__name__ for r in sm.pump()] == ["OffsetCommitRequest"]  # in flight
    sm.member.unsubscribe(sm.now)
    sm.poll()
    sm.member.commit_offsets({T0: 2}, sm.now, deadline_ms=sm.now + 5000)  # made in the callback
    assert sm.pump() == []
    assert sm.member.state is S.LEAVING
    deadline = sm.member.get_timer()
    assert deadline is None or deadline > sm.now
    sm.answer(m.OffsetCommitRequest, m.OffsetCommitResponse((m.PartitionError(T0, ErrorCode.NONE),)))
    out = sm.pump()
    assert [type(r).__name__ for r in out] == ["OffsetCommitRequest", "ConsumerGroupHeartbeatRequest"]
    assert out[0].generation_id == 5 and out[1].member_epoch == -1
