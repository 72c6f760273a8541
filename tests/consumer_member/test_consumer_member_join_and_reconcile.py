"""The KIP-848 member joining and reconciling, against a scripted coordinator.

Each test names the Kafka test it ports (org.apache.kafka.clients.consumer.internals).
"""
from __future__ import annotations

from kgroup.core import messages as m
from kgroup.core.consumer_group_messages import ConsumerGroupHeartbeatRequest
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member.consumer import ConsumerMemberState as S
from kgroup.core.member.consumer import ReconcileStep
from kgroup.values import TopicPartition

from consumer_member_script_harness import ScriptedMember, tps

OK = ErrorCode.NONE


def test_first_heartbeat_is_full_and_joins_with_epoch_zero():
    """Kafka ConsumerHeartbeatRequestManagerTest
    .testFirstHeartbeatIncludesRequiredInfoToJoinGroupAndGetAssignments"""
    sm = ScriptedMember(topics=("b", "a"), group_remote_assignor="uniform", max_poll_interval_ms=20_000)
    assert sm.member.state is S.UNSUBSCRIBED
    sm.find_coordinator()
    # Subscribing alone does not join: the next poll does (Kafka onConsumerPoll).
    assert [r for r in sm.pump() if isinstance(r, ConsumerGroupHeartbeatRequest)] == []
    sm.poll()
    assert sm.member.state is S.JOINING
    join = sm.heartbeat()
    assert join.member_epoch == 0
    assert len(join.member_id) == 22 and not join.member_id.startswith("-")  # KIP-1082 client-made id
    assert join.rebalance_timeout_ms == 20_000
    assert join.subscribed_topic_names == ("a", "b")
    assert join.server_assignor == "uniform"
    assert join.topic_partitions == ()
    assert join.api_version == 1 and join.group_id == "g"


def test_join_receive_assignment_reconcile_and_acknowledge():
    """ConsumerMembershipManagerTest.testReconcileNewPartitionsAssignedWhenNoPartitionOwned"""
    sm = ScriptedMember()
    sm.poll()
    sm.find_coordinator()
    sm.heartbeat()
    sm.answer_heartbeat(epoch=3, assignment=tps("t", 0, 1), interval_ms=2000)
    assert sm.member.state is S.RECONCILING
    assert sm.member.member_epoch == 3
    assert sm.member.assignment == frozenset()  # nothing is owned before the reconciliation runs
    assert sm.pump() == []  # RECONCILING waits for the interval; the ack comes after the callbacks
    sm.poll()  # the reconciliation starts: PartitionsAssigned is emitted
    assert sm.member.reconciliation_step is ReconcileStep.ASSIGNING
    assert sm.member.assignment == tps("t", 0, 1)
    sm.poll()  # the callback ran
    assert sm.callbacks == [("assigned", [TopicPartition("t", 0), TopicPartition("t", 1)])]
    assert sm.member.state is S.ACKNOWLEDGING
    ack = sm.heartbeat()  # at once, not after the interval
    assert ack.member_epoch == 3
    assert ack.topic_partitions == tuple(sorted(tps("t", 0, 1)))
    assert sm.member.state is S.STABLE and sm.member.settled


def test_member_joining_calls_listener_when_receiving_empty_assignment():
    """Kafka ConsumerMembershipManagerTest
    .testMemberJoiningCallsRebalanceListenerWhenReceivingEmptyAssignment
    and testMemberJoiningTransitionsToStableWhenReceivingEmptyAssignment"""
    sm = ScriptedMember()
    sm.join(assignment=())
    assert sm.callbacks == [("assigned", [])]
    assert sm.member.state is S.STABLE


def test_incremental_heartbeats_send_unchanged_fields_as_null():
    """ConsumerHeartbeatRequestManagerTest.testHeartbeatState and
    testValidateConsumerGroupHeartbeatRequestAssignmentSentWhenLocalEpochChanges"""
    sm = ScriptedMember(group_remote_assignor="range", rack_id="r1", group_instance_id="inst")
    join = sm.join(assignment=tps("t", 0), interval_ms=1000)
    assert (join.rack_id, join.instance_id) == ("r1", "inst")
    sm.answer_heartbeat(epoch=1, interval_ms=1000)  # the ack's answer: nothing new
    assert sm.pump() == []  # ConsumerHeartbeatRequestManagerTest.testTimerNotDue
    sm.advance(1000)
    hb = sm.heartbeat()
    assert (hb.member_epoch, hb.member_id, hb.instance_id) == (1, join.member_id, "inst")
    assert hb.rebalance_timeout_ms == -1
    assert hb.subscribed_topic_names is None
    assert hb.server_assignor is None
    assert hb.rack_id is None
    assert hb.topic_partitions is None
    sm.answer_heartbeat(epoch=1, interval_ms=1000)
    # A subscription change goes out in the next heartbeat, alone.
    sm.member.subscribe(["t", "u"], sm.now)
    sm.advance(1000)
    hb = sm.heartbeat()
    assert hb.subscribed_topic_names == ("t", "u")
    assert hb.topic_partitions is None and hb.rebalance_timeout_ms == -1


def test_heartbeat_interval_comes_from_the_coordinator():
    """ConsumerHeartbeatRequestManagerTest.testSuccessfulHeartbeatTiming"""
    sm = ScriptedMember()
    sm.join(assignment=(), interval_ms=700)
    sm.answer_heartbeat(epoch=1, interval_ms=700)
    assert sm.member.heartbeat_interval_ms == 700
    sm.advance(699)
    assert sm.pump() == []
    sm.advance(1)
    sm.heartbeat()


def test_heartbeat_not_sent_if_another_one_in_flight():
    """ConsumerHeartbeatRequestManagerTest.testHeartbeatNotSentIfAnotherOneInFlight"""
    sm = ScriptedMember()
    sm.join(assignment=(), interval_ms=500)
    sm.advance(5000)  # the ack is still unanswered
    assert [r for r in sm.pump() if isinstance(r, ConsumerGroupHeartbeatRequest)] == []


def test_revoke_then_assign_in_that_order():
    """ConsumerMembershipManagerTest.testReconcileNewPartitionsAssignedAndRevoked"""
    sm = ScriptedMember()
    sm.join(assignment=tps("t", 0))
    sm.answer_heartbeat(epoch=1)
    sm.callbacks.clear()
    sm.advance(3000)
    sm.heartbeat()
    sm.answer_heartbeat(epoch=2, assignment=tps("t", 1, 2))
    assert sm.member.state is S.RECONCILING
    sm.poll()
    # Revoked first; t-0 is no longer the app's as soon as the revocation is handed over.
    assert sm.member.reconciliation_step is ReconcileStep.REVOKING
    assert sm.member.assignment == frozenset()
    sm.poll()
    assert sm.member.reconciliation_step is ReconcileStep.ASSIGNING
    sm.poll()
    assert sm.callbacks == [("revoked", [TopicPartition("t", 0)]),
                            ("assigned", [TopicPartition("t", 1), TopicPartition("t", 2)])]
    assert sm.member.state is S.ACKNOWLEDGING
    ack = sm.heartbeat()
    assert ack.topic_partitions == tuple(sorted(tps("t", 1, 2))) and ack.member_epoch == 2


def test_revocation_waits_for_the_auto_commit():
    """Kafka ConsumerMembershipManagerTest
    .testReconcilePartitionsRevokedWithSuccessfulAutoCommitNoCallbacks"""
    sm = ScriptedMember(enable_auto_commit=True)
    sm.join(assignment=tps("t", 0, 1))
    sm.answer_heartbeat(epoch=1)
    positions = {TopicPartition("t", 0): 42, TopicPartition("t", 1): 7}
    sm.poll(positions)
    sm.callbacks.clear()
    sm.advance(3000)
    sm.heartbeat()
    sm.answer_heartbeat(epoch=2, assignment=())
    sm.poll(positions)
    assert sm.member.reconciliation_step is ReconcileStep.COMMITTING
    commit = next(r for r in sm.pump() if isinstance(r, m.OffsetCommitRequest))
    assert commit.generation_id == 2 and commit.api_version == 9  # the member epoch, OffsetCommit v9
    assert {(p.topic_partition, p.committed.offset) for p in commit.offsets} == set(positions.items())
    sm.poll(positions)
    assert sm.member.state is S.RECONCILING and sm.member.assignment == tps("t", 0, 1)  # still owned
    sm.answer(m.OffsetCommitRequest, m.OffsetCommitResponse(
        tuple(m.PartitionError(tp, OK) for tp in positions)))
    sm.poll_until_quiet(positions)
    assert sm.callbacks == [("revoked", [TopicPartition("t", 0), TopicPartition("t", 1)]), ("assigned", [])]
    assert sm.member.state is S.ACKNOWLEDGING


def test_revocation_completes_even_if_the_auto_commit_fails():
    """Kafka ConsumerMembershipManagerTest
    .testReconcilePartitionsRevokedWithFailedAutoCommitCompletesRevocationAnyway"""
    sm = ScriptedMember(enable_auto_commit=True)
    sm.join(assignment=tps("t", 0))
    sm.answer_heartbeat(epoch=1)
    positions = {TopicPartition("t", 0): 5}
    sm.poll(positions)
    sm.callbacks.clear()
    sm.advance(3000)
    sm.heartbeat()
    sm.answer_heartbeat(epoch=2, assignment=())
    sm.poll(positions)
    sm.pump()
    sm.answer(m.OffsetCommitRequest, m.OffsetCommitResponse(
        (m.PartitionError(TopicPartition("t", 0), ErrorCode.OFFSET_METADATA_TOO_LARGE),)))
    sm.poll_until_quiet(positions)
    assert sm.callbacks == [("revoked", [TopicPartition("t", 0)]), ("assigned", [])]
    assert sm.member.state is S.ACKNOWLEDGING
    failed = [c for c in sm.commits.values() if c.error is not None]
    assert len(failed) == 1


def test_assignment_arriving_mid_reconciliation_waits_for_the_next_one():
    """Kafka ConsumerMembershipManagerTest
    .testDelayedReconciliationResultAppliedWhenTargetChangedWithNewAssignment"""
    sm = ScriptedMember()
    sm.poll()
    sm.find_coordinator()
    sm.heartbeat()
    sm.answer_heartbeat(epoch=1, assignment=tps("t", 0), interval_ms=100)
    sm.poll()  # PartitionsAssigned(t-0) emitted, not yet run
    assert sm.member.reconciliation_step is ReconcileStep.ASSIGNING
    sm.advance(100)
    sm.heartbeat()  # a regular heartbeat while reconciling
    sm.answer_heartbeat(epoch=2, assignment=tps("t", 0, 1))
    assert sm.member.target_assignment == tps("t", 0, 1)
    sm.poll()  # the first reconciliation completes with what it started with
    assert sm.member.assignment == tps("t", 0)
    assert sm.member.state is S.ACKNOWLEDGING
    ack = sm.heartbeat()
    # Kafka's client reports (t-0) here; kgroup also reports t-1, assigned and not yet reconciled, so
    # that a newer target cannot hand it on before this member revokes it (see the next test).
    assert ack.topic_partitions == (TopicPartition("t", 0), TopicPartition("t", 1))
    assert sm.member.state is S.RECONCILING  # the newer target is still to do
    sm.poll_until_quiet()
    assert sm.callbacks == [("assigned", [TopicPartition("t", 0)]), ("assigned", [TopicPartition("t", 1)])]
    sm.answer_heartbeat(epoch=2)
    assert sm.heartbeat().topic_partitions == tuple(sorted(tps("t", 0, 1)))
    assert sm.member.state is S.STABLE


def test_partitions_received_but_not_reconciled_are_reported_as_owned():
    """kgroup's departure from Kafka's client, found by the simulator (seed 83 of ``kgroup campaign
    --group-protocol consumer --assignor range``): a member that joined with nothing is answered t-0
    while its regular heartbeat reports what it reconciled, nothing.  Were that report "owns
    nothing", a coordinator whose newer target moves t-0 elsewhere would take it as revoked
    (``CurrentAssignmentBuilder.ownsRevokedPartitions``) and hand it on while this member starts
    consuming it."""
    sm = ScriptedMember()
    sm.poll()
    sm.find_coordinator()
    sm.heartbeat()
    sm.answer_heartbeat(epoch=9, assignment=(), interval_ms=100)
    sm.advance(100)
    regular = sm.heartbeat()  # the empty assignment is not reconciled yet: nothing to report
    assert regular.topic_partitions is None
    sm.poll()
    sm.poll()  # the (empty) assignment is reconciled: the acknowledgement waits for the answer
    assert sm.member.state is S.ACKNOWLEDGING
    sm.answer_heartbeat(epoch=9, assignment=tps("t", 0), interval_ms=100)
    assert sm.member.state is S.RECONCILING and sm.member.assignment == frozenset()
    sm.advance(100)
    report = sm.heartbeat()  # the regular heartbeat, t-0's reconciliation not yet begun
    assert report.topic_partitions == (TopicPartition("t", 0),)  # Kafka's client would send ()
    sm.poll_until_quiet()
    assert sm.member.assignment == tps("t", 0)


def test_same_assignment_again_is_not_reconciled():
    """ConsumerMembershipManagerTest.testReconciliationSkippedWhenSameAssignmentReceived"""
    sm = ScriptedMember()
    sm.join(assignment=tps("t", 0))
    sm.answer_heartbeat(epoch=1, assignment=tps("t", 0))
    assert sm.member.state is S.STABLE
    sm.poll()
    assert sm.callbacks == [("assigned", [TopicPartition("t", 0)])]


def test_ack_lost_resends_the_owned_partitions():
    """ConsumerHeartbeatRequestManagerTest.testConsumerAcksReconciledAssignmentAfterAckLost"""
    sm = ScriptedMember(retry_backoff_ms=50)
    sm.join(assignment=tps("t", 3))
    sm.fail(ConsumerGroupHeartbeatRequest)  # the ack timed out: the coordinator is suspected too
    assert sm.member.coordinator_id is None
    sm.advance(50)
    sm.find_coordinator()
    hb = sm.heartbeat()
    assert hb.topic_partitions == (TopicPartition("t", 3),)
    assert hb.subscribed_topic_names == ("t",) and hb.rebalance_timeout_ms == 10_000  # a full heartbeat


def test_v0_member_takes_the_coordinator_made_member_id():
    """ConsumerGroupHeartbeat v0: the coordinator names the member in its first answer."""
    sm = ScriptedMember(heartbeat_api_version=0)
    sm.poll()
    sm.find_coordinator()
    assert sm.heartbeat().member_id == ""
    sm.answer_heartbeat(epoch=1, assignment=(), member_id="from-coordinator")
    assert sm.member.member_id == "from-coordinator"
    sm.poll_until_quiet()
    assert sm.heartbeat().member_id == "from-coordinator"


def test_reconciliation_discarded_when_the_member_is_fenced_during_its_commit():
    """ConsumerMembershipManagerTest.testDelayedReconciliationResultDiscardedAfterCommitIfMemberRejoins"""
    sm = ScriptedMember(enable_auto_commit=True)
    sm.join(assignment=tps("t", 0, 1))
    sm.answer_heartbeat(epoch=1)
    positions = {TopicPartition("t", 0): 3}
    sm.poll(positions)
    sm.callbacks.clear()
    sm.advance(3000)
    sm.heartbeat()
    sm.answer_heartbeat(epoch=2, assignment=tps("t", 1), interval_ms=100)
    sm.poll(positions)
    assert sm.member.reconciliation_step is ReconcileStep.COMMITTING
    sm.pump()  # the pre-revocation commit goes out
    sm.advance(100)
    sm.heartbeat()
    sm.answer_heartbeat(epoch=2, error=ErrorCode.FENCED_MEMBER_EPOCH)
    sm.answer(m.OffsetCommitRequest, m.OffsetCommitResponse(
        (m.PartitionError(TopicPartition("t", 0), ErrorCode.UNKNOWN_MEMBER_ID),)))
    sm.poll_until_quiet(positions)
    # No revocation and no assignment of the abandoned reconciliation: only the loss.
    assert sm.callbacks == [("lost", [TopicPartition("t", 0), TopicPartition("t", 1)])]
    assert sm.member.state is S.JOINING and sm.member.reconciliation_step is ReconcileStep.IDLE


def test_same_assignment_is_reconciled_again_after_fencing():
    """ConsumerMembershipManagerTest.testSameAssignmentReconciledAgainWhenFenced"""
    sm = ScriptedMember()
    sm.join(assignment=tps("t", 0))
    sm.answer_heartbeat(epoch=1, error=ErrorCode.FENCED_MEMBER_EPOCH)
    sm.poll()  # lost, then rejoin
    sm.heartbeat()
    sm.answer_heartbeat(epoch=3, assignment=tps("t", 0))
    assert sm.member.state is S.RECONCILING
    sm.poll_until_quiet()
    assert sm.callbacks == [("assigned", [TopicPartition("t", 0)]), ("lost", [TopicPartition("t", 0)]),
                            ("assigned", [TopicPartition("t", 0)])]
    assert sm.heartbeat().topic_partitions == (TopicPartition("t", 0),)
