"""kafka-python 3.0's ``test/consumer/test_coordinator.py``, ported to kgroup's drop-in.

dpkp/kafka-python pokes its coordinator's internals (``_on_join_prepare_async``,
``_handle_offset_commit_response``, ...) with mocked responses; each test
here ports the *intent* of one such test against kgroup's public
``ConsumerCoordinator`` surface (what ``KafkaConsumer`` calls), with kgroup's
in-memory group coordinator as the broker and scripted error answers
(``kafka_python_harness``).  Each test names its source test.  Where kgroup
deliberately behaves differently, the test asserts kgroup's behaviour and
``docs/kafka_python.md`` ("Departures from stock kafka-python") says why.
"""
from __future__ import annotations

import kafka.errors as Errors
import pytest
from kafka import ConsumerRebalanceListener
from kafka.consumer.subscription_state import SubscriptionState
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment
from kafka.structs import MemberState as KMemberState
from kafka.structs import OffsetAndMetadata, TopicPartition
from kafka_python_harness import RecordingListener, poll_until, poll_until_stable, subscribed_state

import kgroup.errors as kg
from kgroup.core import messages as m
from kgroup.io.kafka_python.convert import error_code

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
OFFSETS = {T0: OffsetAndMetadata(5, "", -1), T1: OffsetAndMetadata(6, "", -1)}


def once(response):
    """A scripted answer for the first request of its kind only; the coordinator answers the rest."""
    calls = []

    def answer(request):
        calls.append(request)
        return response if len(calls) == 1 else None

    return answer


def sent(coordinator, kind):
    return [r for r in coordinator.transport.sent if isinstance(r, kind)]


# -- group metadata, assignors ------------------------------------------------------


def test_group_metadata_unjoined(make_coordinator):
    """kafka-python test_group_metadata_unjoined."""
    gm = make_coordinator(group_instance_id=None).group_metadata()
    assert (gm.group_id, gm.member_id, gm.generation_id, gm.group_instance_id) == ("g", "", -1, None)
    assert gm.state == KMemberState.UNJOINED


def test_group_metadata_after_join(make_coordinator):
    """kafka-python test_group_metadata_after_join."""
    c = make_coordinator(group_instance_id="static-1")
    poll_until_stable(c)
    gm = c.group_metadata()
    assert gm.generation_id >= 0 and gm.member_id and gm.group_instance_id == "static-1"
    assert gm.state == KMemberState.STABLE


class SpyRoundRobin(RoundRobinPartitionAssignor):
    def __init__(self):
        self.on_assignment_calls = []

    def on_assignment(self, assignment, generation):
        self.on_assignment_calls.append((assignment, generation))
        super().on_assignment(assignment, generation)


def test_join_complete(make_coordinator):
    """kafka-python test_join_complete: on_assignment(assignment, generation) once per completed join."""
    spy = SpyRoundRobin()
    c = make_coordinator(assignors=[spy])
    poll_until_stable(c)
    assert len(spy.on_assignment_calls) == 1
    assignment, generation = spy.on_assignment_calls[0]
    assert isinstance(assignment, ConsumerProtocolAssignment)
    assert sorted(assignment.partitions()) == [T0, T1]
    assert generation == c.group_metadata().generation_id


def test_join_complete_with_sticky_assignor(make_coordinator):
    """kafka-python test_join_complete_with_sticky_assignor: covered with the state sticky keeps."""
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    sticky = StickyPartitionAssignor()
    c = make_coordinator(assignors=[sticky])
    poll_until_stable(c)
    assert sorted(sticky.member_assignment) == [T0, T1]
    assert sticky.generation == c.group_metadata().generation_id


class FixedAssignor(RoundRobinPartitionAssignor):
    """test_perform_assignment's patched assign(): a fixed answer
    (t-0 to the first member, t-1 to the last)."""

    name = "fixed"

    def __init__(self):
        self.members_seen = []

    def assign(self, cluster, members):
        self.members_seen.append([(mb.member_id, sorted(mb.metadata.topics)) for mb in members])
        ids = sorted(mb.member_id for mb in members)
        return {mid: ConsumerProtocolAssignment(0, [("t", [0])] if mid == ids[0] else [("t", [1])], b"")
                for mid in ids}


def test_perform_assignment(make_coordinator):
    """kafka-python test_perform_assignment: the leader's assignor sees every member's decoded
    subscription and its answer is what the members get."""
    assignors = [FixedAssignor(), FixedAssignor()]
    a, b = (make_coordinator(assignors=[x]) for x in assignors)
    poll_until(lambda: a.poll(timeout_ms=0) and b.poll(timeout_ms=0)
               and len(a._subscription.assigned_partitions()) == 1
               and len(b._subscription.assigned_partitions()) == 1, a, b, what="both members assigned")
    seen = [s for x in assignors for s in x.members_seen]
    assert any(len(s) == 2 for s in seen) and all(topics == ["t"] for s in seen for _, topics in s)
    first = min((a, b), key=lambda c: c.group_metadata().member_id)
    assert first._subscription.assigned_partitions() == {T0}


def test_rejects_mixed_protocols():
    """kafka-python TestKip429RebalanceProtocolValidation.test_rejects_mixed_protocols."""
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    from kgroup.io.kafka_python.consumer import KafkaConsumer

    class CooperativeOnly(CooperativeStickyAssignor):
        name = "cooperative-only"

    with pytest.raises(Errors.KafkaConfigurationError):
        KafkaConsumer(bootstrap_servers="127.0.0.1:1", api_version=(2, 5, 0), group_id="g",
                      partition_assignment_strategy=[RangePartitionAssignor, CooperativeOnly])


# -- rebalance listener ------------------------------------------------------------


def test_on_join_prepare_async_invokes_sync_listener(make_coordinator):
    """kafka-python test_on_join_prepare_async_invokes_sync_listener / TestKip429OnJoinPrepare.
    test_eager_revokes_everything: an eager rejoin revokes everything owned first."""
    listener = RecordingListener()
    c = make_coordinator(subscription=subscribed_state(listener=listener))
    poll_until_stable(c)
    c.request_rejoin()
    poll_until(lambda: len(listener.calls) == 4, c, what="the second rebalance")
    assert listener.calls[2:] == [("revoked", {T0, T1}), ("assigned", {T0, T1})]


def test_cooperative_skips_global_revoke(make_coordinator):
    """kafka-python TestKip429OnJoinPrepare.test_cooperative_skips_global_revoke /
    TestKip429OnJoinComplete.test_cooperative_stable_assignment_no_listener_calls (Java: assigned(∅))."""
    listener = RecordingListener()
    c = make_coordinator(subscription=subscribed_state(listener=listener), assignors=("cooperative-sticky",))
    poll_until_stable(c)
    assert listener.calls == [("assigned", {T0, T1})]
    c.request_rejoin()
    poll_until(lambda: len(listener.calls) == 2, c, what="the second rebalance")
    # Nothing revoked; Java calls onPartitionsAssigned with the (empty) additions.
    assert listener.calls[1] == ("assigned", set())
    assert c._subscription.assigned_partitions() == {T0, T1}


def test_cooperative_revokes_unsubscribed_topic_partitions_early(make_coordinator):
    """kafka-python TestKip429OnJoinPrepare.test_cooperative_revokes_unsubscribed_topic_partitions_early."""
    listener = RecordingListener()
    state = subscribed_state(topics=("t", "u"), listener=listener)
    c = make_coordinator(subscription=state, partitions={"t": 2, "u": 1}, assignors=("cooperative-sticky",))
    poll_until_stable(c)
    state.change_subscription(["t"])
    poll_until(lambda: ("revoked", {TopicPartition("u", 0)}) in listener.calls
               and c._subscription.assigned_partitions() == {T0, T1}, c, what="u revoked")
    assert all(parts == {TopicPartition("u", 0)} for kind, parts in listener.calls if kind == "revoked")


def test_cooperative_revoke_then_assign_diff(make_coordinator):
    """kafka-python TestKip429OnJoinComplete.test_cooperative_revoke_then_assign_diff: a joining member
    takes one partition; the owner revokes only it, the newcomer is assigned only it."""
    owner_listener, newcomer_listener = RecordingListener(), RecordingListener()
    owner = make_coordinator(subscription=subscribed_state(listener=owner_listener),
                             assignors=("cooperative-sticky",))
    poll_until_stable(owner)
    newcomer = make_coordinator(subscription=subscribed_state(listener=newcomer_listener),
                                assignors=("cooperative-sticky",))
    poll_until(lambda: len(newcomer._subscription.assigned_partitions()) == 1
               and owner.poll(timeout_ms=0) and newcomer.poll(timeout_ms=0), owner, newcomer,
               what="the newcomer to get one partition")
    moved = newcomer._subscription.assigned_partitions()
    assert [parts for kind, parts in owner_listener.calls if kind == "revoked"] == [moved]
    assert [p for kind, parts in newcomer_listener.calls if kind == "assigned" for p in parts] == list(moved)


def test_on_join_prepare_async_listener_exception_propagates(make_coordinator):
    """kafka-python test_on_join_prepare_async_listener_exception_propagates."""
    listener = RecordingListener(fail_on="revoked")
    c = make_coordinator(subscription=subscribed_state(listener=listener))
    with pytest.raises(Errors.KafkaError, match="User rebalance callback throws an error") as info:
        poll_until_stable(c)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_on_join_complete_async_listener_exception_propagates(make_coordinator):
    """kafka-python test_on_join_complete_async_listener_exception_propagates: raised after the
    assignment was applied."""
    listener = RecordingListener(fail_on="assigned")
    c = make_coordinator(subscription=subscribed_state(listener=listener))
    with pytest.raises(Errors.KafkaError, match="User rebalance callback throws an error"):
        poll_until_stable(c)
    assert c._subscription.assigned_partitions() == {T0, T1}


def test_cooperative_both_listeners_called_even_if_revoked_throws(make_coordinator):
    """kafka-python TestListenerExceptionPropagation.
    test_cooperative_both_listeners_called_even_if_revoked_throws."""
    owner_listener = RecordingListener(fail_on="revoked")
    owner = make_coordinator(subscription=subscribed_state(listener=owner_listener),
                             assignors=("cooperative-sticky",))
    poll_until_stable(owner)
    newcomer = make_coordinator(assignors=("cooperative-sticky",))
    raised = []

    def settled():
        try:
            owner.poll(timeout_ms=0)
        except Errors.KafkaError as exc:
            raised.append(exc)
        return bool(raised) and len(owner._subscription.assigned_partitions()) == 1

    poll_until(settled, newcomer, what="the owner to revoke one partition")
    kinds = [kind for kind, _ in owner_listener.calls]
    revoked_at = kinds.index("revoked")
    assert "assigned" in kinds[revoked_at + 1:]           # assigned still ran after revoked threw
    assert isinstance(raised[0].__cause__, RuntimeError)


def test_default_listener_falls_through_to_revoked(make_coordinator):
    """kafka-python TestKip429OnPartitionsLost.test_default_listener_falls_through_to_revoked /
    test_on_join_prepare_fires_lost_and_clears_assignment: a member evicted for not polling
    reports its partitions lost; a listener without on_partitions_lost gets them as revoked."""
    calls = []

    class RevokeOnly(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            calls.append(("revoked", set(revoked)))

        def on_partitions_assigned(self, assigned):
            calls.append(("assigned", set(assigned)))

    c = make_coordinator(subscription=subscribed_state(listener=RevokeOnly()), max_poll_interval_ms=300,
                         session_timeout_ms=3_000)
    poll_until_stable(c)
    poll_until(lambda: not c._member.generation.is_valid, timeout_s=10, what="eviction")
    poll_until_stable(c)
    assert calls[2] == ("revoked", {T0, T1})       # the loss, through the default on_partitions_lost
    assert calls[-1] == ("assigned", {T0, T1})


# -- offsets ------------------------------------------------------------------------


def test_need_rejoin(make_coordinator):
    """kafka-python test_need_rejoin: manual assignment never rejoins; a subscription does.
    kgroup learns of a new subscription at the next poll (departure: need_rejoin() is False until then)."""
    state = SubscriptionState()
    state.assign_from_user([T0])
    manual = make_coordinator(subscription=state)
    manual.poll(timeout_ms=0)
    assert manual.need_rejoin() is False
    subscribed = make_coordinator()
    assert subscribed.need_rejoin() is False        # kgroup: not yet polled
    assert subscribed.poll(timeout_ms=0) is False
    assert subscribed.need_rejoin() is True          # until the join completes
    poll_until_stable(subscribed)
    assert subscribed.need_rejoin() is False


def test_refresh_committed_offsets_if_needed(make_coordinator):
    """kafka-python test_refresh_committed_offsets_if_needed: partitions without a position are
    positioned at their committed offsets."""
    state = SubscriptionState()
    state.assign_from_user([T0, T1])
    c = make_coordinator(subscription=state)
    c.commit_offsets_sync(OFFSETS)
    assert set(state.missing_fetch_positions()) == {T0, T1}
    assert c.refresh_committed_offsets_if_needed(timeout_ms=3_000) is True
    assert state.assignment[T0].position.offset == 5 and state.assignment[T1].position.offset == 6
    assert not state.missing_fetch_positions()


def test_fetch_committed_offsets(make_coordinator):
    """kafka-python test_fetch_committed_offsets: {} for no partitions; committed values otherwise."""
    c = make_coordinator()
    poll_until_stable(c)
    assert c.fetch_committed_offsets([]) == {}
    assert c.fetch_committed_offsets([T0]) == {}          # nothing committed: left out
    c.commit_offsets_sync({T0: OffsetAndMetadata(9, "meta", -1)})
    fetched = c.fetch_committed_offsets([T0, T1])
    assert list(fetched) == [T0] and fetched[T0].offset == 9 and fetched[T0].metadata == "meta"


def test_commit_offsets_async(make_coordinator):
    """kafka-python test_commit_offsets_async: a future that succeeds; the callback runs on a later call."""
    c = make_coordinator()
    poll_until_stable(c)
    results = []
    future = c.commit_offsets_async(OFFSETS,
                                    callback=lambda offsets, result: results.append((offsets, result)))
    poll_until(lambda: future.is_done, c, what="the commit")
    assert future.succeeded()
    c.poll(timeout_ms=0)                             # callbacks run on the polling thread
    assert results == [(OFFSETS, None)]


def test_commit_offsets_sync(make_coordinator):
    """kafka-python test_commit_offsets_sync: returns on success, raises a non-retriable error."""
    c = make_coordinator(answers={m.OffsetCommitRequest: once(
        m.OffsetCommitResponse([m.PartitionError(T0, error_code(12))]))})
    poll_until_stable(c)
    with pytest.raises(Errors.OffsetMetadataTooLargeError):
        c.commit_offsets_sync(OFFSETS)
    assert c.commit_offsets_sync(OFFSETS) is None
    assert c.fetch_committed_offsets([T0])[T0].offset == 5


def test_commit_offsets_sync_retries_retriable_errors(make_coordinator):
    """kafka-python test_commit_offsets_sync (retriable branch): retried until success."""
    c = make_coordinator(answers={m.OffsetCommitRequest: once(
        m.OffsetCommitResponse([m.PartitionError(T0, error_code(14))]))})
    poll_until_stable(c)
    c.commit_offsets_sync(OFFSETS, timeout_ms=3_000)
    assert len(sent(c, m.OffsetCommitRequest)) == 2


@pytest.mark.parametrize("enabled", [True, False])
def test_maybe_auto_commit_offsets_sync(make_coordinator, enabled):
    """kafka-python test_maybe_auto_commit_offsets_sync: commits consumed positions only when enabled."""
    c = make_coordinator(enable_auto_commit=enabled)
    poll_until_stable(c)
    c._subscription.seek(T0, 11)
    c.maybe_auto_commit_offsets_now()
    poll_until(lambda: not enabled or c.fetch_committed_offsets([T0]), c, what="the auto-commit")
    assert bool(c.fetch_committed_offsets([T0])) is enabled


@pytest.mark.parametrize("code, kafka_class", [
    (30, Errors.GroupAuthorizationFailedError),
    (12, Errors.OffsetMetadataTooLargeError),
    (28, Errors.InvalidCommitOffsetSizeError),
    (14, Errors.CoordinatorLoadInProgressError),
    (15, Errors.CoordinatorNotAvailableError),
    (16, Errors.NotCoordinatorError),
    (7, Errors.RequestTimedOutError),
    (25, Errors.CommitFailedError),
    (22, Errors.CommitFailedError),
    (27, Errors.CommitFailedError),
    (17, Errors.InvalidTopicError),
    (29, Errors.TopicAuthorizationFailedError),
    (0, None),
])
def test_handle_offset_commit_response(make_coordinator, code, kafka_class):
    """kafka-python test_handle_offset_commit_response: the async future fails with the code's class."""
    c = make_coordinator(answers={m.OffsetCommitRequest: once(
        m.OffsetCommitResponse([m.PartitionError(T0, error_code(code)),
                                m.PartitionError(T1, error_code(code))]))})
    poll_until_stable(c)
    future = c.commit_offsets_async(OFFSETS)
    poll_until(lambda: future.is_done, c, what="the commit")
    if kafka_class is None:
        assert future.succeeded()
    else:
        assert future.failed() and isinstance(future.exception, kafka_class)
        assert isinstance(future.exception, kg.GroupMemberError)
        assert future.retriable() is kafka_class.retriable


@pytest.mark.parametrize("code, kafka_class", [
    (25, Errors.UnknownMemberIdError),
    (22, Errors.IllegalGenerationError),
    (29, Errors.TopicAuthorizationFailedError),
    (30, Errors.GroupAuthorizationFailedError),
])
def test_handle_offset_fetch_response(make_coordinator, code, kafka_class):
    """kafka-python test_handle_offset_fetch_response: non-retriable partition errors raise
    the code's class."""
    c = make_coordinator(answers={m.OffsetFetchRequest: once(m.OffsetFetchResponse(
        error_code(0), [m.PartitionOffset(T0, m.OffsetAndMetadata(123), error_code(code))]))})
    with pytest.raises(kafka_class):
        c.fetch_committed_offsets([T0], timeout_ms=3_000)


@pytest.mark.parametrize("code", [14, 16])
def test_handle_offset_fetch_response_retriable(make_coordinator, code):
    """kafka-python test_handle_offset_fetch_response (CoordinatorLoadInProgress / NotCoordinator):
    retried, then answered."""
    c = make_coordinator(answers={m.OffsetFetchRequest: once(m.OffsetFetchResponse(
        error_code(0), [m.PartitionOffset(T0, m.OffsetAndMetadata(123), error_code(code))]))})
    assert c.fetch_committed_offsets([T0], timeout_ms=3_000) == {}
    assert len(sent(c, m.OffsetFetchRequest)) == 2


# -- join and sync errors -----------------------------------------------------------


@pytest.mark.parametrize("code, kafka_class", [
    (23, Errors.InconsistentGroupProtocolError),
    (26, Errors.InvalidSessionTimeoutError),
    (24, Errors.InvalidGroupIdError),
    (30, Errors.GroupAuthorizationFailedError),
    (81, Errors.GroupMaxSizeReachedError),
    (82, Errors.FencedInstanceIdError),
])
def test_process_join_group_response_fatal(make_coordinator, code, kafka_class):
    """kafka-python test_process_join_group_response: non-retriable join errors escape poll()."""
    c = make_coordinator(answers={m.JoinGroupRequest: lambda request: m.JoinGroupResponse(error_code(code))})
    with pytest.raises(kafka_class):
        poll_until(lambda: False, c, timeout_s=3.0)


@pytest.mark.parametrize("code", [14, 25, 15, 16, 79, 27, -1])
def test_process_join_group_response_recovers(make_coordinator, code):
    """kafka-python test_process_join_group_response: retriable / membership errors rejoin and the
    member settles.  (-1 UnknownError: stock raises it from poll; kgroup retries, see departures.)"""
    scripted = m.JoinGroupResponse(error_code(code), member_id="scripted-id")
    c = make_coordinator(answers={m.JoinGroupRequest: once(scripted)})
    poll_until_stable(c)
    assert c._subscription.assigned_partitions() == {T0, T1}
    assert len(sent(c, m.JoinGroupRequest)) >= 2


@pytest.mark.parametrize("code", [27, 25, 22, 15, 16])
def test_process_sync_group_response_rejoins(make_coordinator, code):
    """kafka-python test_process_sync_group_response: these sync errors request a rejoin."""
    c = make_coordinator(answers={m.SyncGroupRequest: once(m.SyncGroupResponse(error_code(code)))})
    poll_until_stable(c)
    assert len(sent(c, m.JoinGroupRequest)) >= 2 and c._subscription.assigned_partitions() == {T0, T1}


@pytest.mark.parametrize("code, kafka_class", [(30, Errors.GroupAuthorizationFailedError),
                                               (82, Errors.FencedInstanceIdError),
                                               (-1, Errors.UnknownError)])
def test_process_sync_group_response_fatal(make_coordinator, code, kafka_class):
    """kafka-python test_process_sync_group_response: these escape poll() with the code's class."""
    c = make_coordinator(answers={m.SyncGroupRequest: lambda request: m.SyncGroupResponse(error_code(code))})
    with pytest.raises(kafka_class):
        poll_until(lambda: False, c, timeout_s=3.0)


def test_lookup_coordinator_failure(make_coordinator):
    """kafka-python test_lookup_coordinator_failure: a failed FindCoordinator is retried."""
    c = make_coordinator(answers={m.FindCoordinatorRequest: once(m.FindCoordinatorResponse(error_code(15)))})
    poll_until_stable(c)
    assert len(sent(c, m.FindCoordinatorRequest)) >= 2


# -- close ----------------------------------------------------------------------------


def test_close_revokes_for_live_group(make_coordinator):
    """kafka-python TestOnCloseRevokesPartitions.test_close_revokes_for_live_group / test_close:
    revoked once, assignment cleared, LeaveGroup sent."""
    listener = RecordingListener()
    c = make_coordinator(subscription=subscribed_state(listener=listener))
    poll_until_stable(c)
    c.close(autocommit=False, timeout_ms=2_000)
    assert listener.calls[-1] == ("revoked", {T0, T1})
    assert c._subscription.assigned_partitions() == set()
    assert len(sent(c, m.LeaveGroupRequest)) == 1


def test_close_autocommits(make_coordinator):
    """kafka-python test_close: with auto-commit the consumed positions are committed on close."""
    c = make_coordinator(enable_auto_commit=True)
    poll_until_stable(c)
    c._subscription.seek(T0, 42)
    c.close(autocommit=True, timeout_ms=2_000)
    commits = sent(c, m.OffsetCommitRequest)
    assert commits and commits[-1].offsets[0].committed.offset == 42


def test_close_manual_assignment_fires_nothing(make_coordinator):
    """kafka-python TestOnCloseRevokesPartitions.test_close_manual_assignment_fires_nothing."""
    listener = RecordingListener()
    state = SubscriptionState()
    state.assign_from_user([T0])
    state.rebalance_listener = listener
    c = make_coordinator(subscription=state)
    c.poll(timeout_ms=0)
    c.close(autocommit=False, timeout_ms=1_000)
    assert listener.calls == []


def test_close_empty_assignment_fires_nothing(make_coordinator):
    """kafka-python TestOnCloseRevokesPartitions.test_close_empty_assignment_fires_nothing."""
    listener = RecordingListener()
    c = make_coordinator(subscription=subscribed_state(listener=listener))
    c.close(autocommit=False, timeout_ms=1_000)
    assert listener.calls == []


def test_close_listener_exception_still_leaves_group(make_coordinator):
    """kafka-python TestOnCloseRevokesPartitions.test_close_listener_exception_still_leaves_group."""
    listener = RecordingListener(fail_on="revoked")
    c = make_coordinator(subscription=subscribed_state(listener=listener))
    with pytest.raises(Errors.KafkaError):
        poll_until_stable(c)               # the first rebalance's revoked(set()) throws too
    poll_until_stable(c)
    with pytest.raises(Errors.KafkaError, match="User rebalance callback throws an error") as info:
        c.close(autocommit=False, timeout_ms=2_000)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert c._subscription.assigned_partitions() == set()
    assert len(sent(c, m.LeaveGroupRequest)) == 1


# -- metadata-driven rejoins ------------------------------------------------------------


def test_mock_group_single_member_join_assigns_all_partitions(make_coordinator):
    """kafka-python test_mock_group_single_member_join_assigns_all_partitions."""
    c = make_coordinator(partitions={"t": 4})
    poll_until_stable(c)
    assert c._subscription.assigned_partitions() == {TopicPartition("t", p) for p in range(4)}


def test_metadata_growth_triggers_rejoin_end_to_end(make_coordinator):
    """kafka-python test_metadata_growth_triggers_rejoin_end_to_end / test_leader_rejoins_when_metadata_
    changes_after_assignment: the leader rejoins when a subscribed topic grows, and gets the new partition."""
    counts = {"t": 2}
    c = make_coordinator(partitions=counts)
    poll_until_stable(c)
    counts["t"] = 3
    c._handle_metadata_update(c._cluster)
    poll_until(lambda: TopicPartition("t", 2) in c._subscription.assigned_partitions(), c,
               what="the new partition")
    assert len(sent(c, m.JoinGroupRequest)) >= 2


# -- membership errors after the group is stable (KIP-429 ports) -----------------------


def _answer_next(coordinator, kind, response):
    """From now on, answer the next ``kind`` request with ``response`` (once); return its index in sent."""
    mark = len(coordinator.transport.sent)
    coordinator.transport.answers[kind] = once(response)
    return mark


def _next_join_after(coordinator, mark):
    scripted = next(i for i, r in enumerate(coordinator.transport.sent) if i >= mark
                    and type(r) in coordinator.transport.answers)
    return next(r for r in coordinator.transport.sent[scripted:] if isinstance(r, m.JoinGroupRequest))


@pytest.mark.parametrize("code, keeps_member_id", [(22, True), (25, False)])
def test_heartbeat_membership_error_marks_generation_lost(make_coordinator, code, keeps_member_id):
    """kafka-python TestKip429OnPartitionsLost.test_heartbeat_illegal_generation_marks_generation_lost /
    test_heartbeat_unknown_member_id_marks_generation_lost and TestKip429MemberIdPreservation.
    test_heartbeat_illegal_generation_preserves_member_id / test_heartbeat_unknown_member_id_resets_member_id:
    the partitions are reported lost; ILLEGAL_GENERATION rejoins with the same member id,
    UNKNOWN_MEMBER_ID with none."""
    listener = RecordingListener()
    c = make_coordinator(subscription=subscribed_state(listener=listener))
    poll_until_stable(c)
    member_id = c.group_metadata().member_id
    mark = _answer_next(c, m.HeartbeatRequest, m.HeartbeatResponse(error_code(code)))
    poll_until(lambda: ("lost", {T0, T1}) in listener.calls and c.poll(timeout_ms=0), c,
               what="the loss and the rejoin")
    assert _next_join_after(c, mark).member_id == (member_id if keeps_member_id else "")
    assert listener.calls[-1] == ("assigned", {T0, T1})


def test_heartbeat_rebalance_in_progress_keeps_generation(make_coordinator):
    """kafka-python TestKip429OnPartitionsLost.test_heartbeat_rebalance_in_progress_keeps_generation:
    a rejoin that revokes (eager), never reports a loss."""
    listener = RecordingListener()
    c = make_coordinator(subscription=subscribed_state(listener=listener))
    poll_until_stable(c)
    mark = _answer_next(c, m.HeartbeatRequest, m.HeartbeatResponse(error_code(27)))
    poll_until(lambda: len(listener.calls) >= 4 and c.poll(timeout_ms=0), c, what="the rejoin")
    assert listener.calls[2:4] == [("revoked", {T0, T1}), ("assigned", {T0, T1})]
    assert _next_join_after(c, mark).member_id == c.group_metadata().member_id


@pytest.mark.parametrize("code, keeps_member_id", [(22, True), (25, False)])
def test_commit_response_membership_error(make_coordinator, code, keeps_member_id):
    """kafka-python TestKip429OnPartitionsLost.test_commit_response_illegal_generation_marks_generation_lost
    and TestKip429MemberIdPreservation.test_commit_response_illegal_generation_preserves_member_id /
    test_commit_response_unknown_member_id_resets_member_id."""
    c = make_coordinator()
    poll_until_stable(c)
    member_id = c.group_metadata().member_id
    mark = _answer_next(c, m.OffsetCommitRequest,
                        m.OffsetCommitResponse([m.PartitionError(T0, error_code(code))]))
    with pytest.raises(Errors.CommitFailedError):
        c.commit_offsets_sync(OFFSETS)
    assert c.group_metadata().generation_id == -1
    poll_until_stable(c)
    assert _next_join_after(c, mark).member_id == (member_id if keeps_member_id else "")


@pytest.mark.parametrize("code, keeps_member_id", [(22, True), (25, False)])
def test_sync_group_membership_error(make_coordinator, code, keeps_member_id):
    """kafka-python TestKip429OnPartitionsLost.test_sync_group_illegal_generation_marks_generation_lost and
    TestKip429MemberIdPreservation.test_sync_group_illegal_generation_preserves_member_id /
    test_sync_group_unknown_member_id_resets_member_id."""
    c = make_coordinator()
    poll_until_stable(c)
    member_id = c.group_metadata().member_id
    mark = _answer_next(c, m.SyncGroupRequest, m.SyncGroupResponse(error_code(code)))
    c.request_rejoin()
    poll_until(lambda: len([r for r in c.transport.sent[mark:] if isinstance(r, m.JoinGroupRequest)]) >= 2
               and c.poll(timeout_ms=0), c, what="the rejoin after the failed sync")
    joins = [r for r in c.transport.sent[mark:] if isinstance(r, m.JoinGroupRequest)]
    assert joins[1].member_id == (member_id if keeps_member_id else "")


def test_send_heartbeat_transport_failure_marks_coordinator_dead(make_coordinator):
    """kafka-python test_send_heartbeat_transport_failure_marks_coordinator_dead /
    test_heartbeat_coordinator_not_available_recovers: the coordinator is looked up again and the
    member stays in its generation."""
    from kgroup.io.transport import TransportError

    c = make_coordinator()
    poll_until_stable(c)
    generation = c.group_metadata().generation_id
    finds = len(sent(c, m.FindCoordinatorRequest))
    c.transport.answers[m.HeartbeatRequest] = once(TransportError("connection lost"))
    poll_until(lambda: len(sent(c, m.FindCoordinatorRequest)) > finds and not c.coordinator_unknown()
               and c.poll(timeout_ms=0), c, what="the coordinator to be found again")
    assert c.group_metadata().generation_id == generation


def test_leader_and_follower_on_metadata_change(make_coordinator):
    """kafka-python test_leader_rejoins_when_metadata_changes_after_assignment /
    test_follower_does_not_rejoin_on_metadata_change: only the leader watches partition counts."""
    counts_a, counts_b = {"t": 2}, {"t": 2}
    a = make_coordinator(partitions=counts_a)
    b = make_coordinator(partitions=counts_b)
    poll_until(lambda: a.poll(timeout_ms=0) and b.poll(timeout_ms=0)
               and a.group_metadata().generation_id == b.group_metadata().generation_id,
               a, b, what="a stable group of two")
    leader, follower = (a, b) if a._member.is_leader else (b, a)
    follower_counts = counts_b if follower is b else counts_a
    follower_counts["t"] = 3
    follower._handle_metadata_update(follower._cluster)
    assert follower.need_rejoin() is False
    leader_counts = counts_a if leader is a else counts_b
    leader_counts["t"] = 3
    leader._handle_metadata_update(leader._cluster)
    assert leader.need_rejoin() is True


@pytest.mark.parametrize("field", ["protocol_name", "protocol_type"])
def test_do_join_and_sync_async_sync_protocol_mismatch(make_coordinator, field):
    """kafka-python test_do_join_and_sync_async_sync_protocol_name_mismatch /
    test_do_join_and_sync_async_sync_protocol_type_mismatch (KIP-559)."""
    answer = {"protocol_name": "roundrobin", "protocol_type": "consumer"}
    if field == "protocol_type":
        answer = {"protocol_name": "range", "protocol_type": "not-consumer"}
    c = make_coordinator(answers={m.SyncGroupRequest: lambda request: m.SyncGroupResponse(
        error_code(0), assignment=b"", **answer)})
    with pytest.raises(Errors.InconsistentGroupProtocolError):
        poll_until(lambda: False, c, timeout_s=3.0)


def test_do_join_and_sync_async_join_protocol_type_mismatch(make_coordinator):
    """kafka-python test_do_join_and_sync_async_join_protocol_type_mismatch (KIP-559)."""
    c = make_coordinator(answers={m.JoinGroupRequest: lambda request: m.JoinGroupResponse(
        error_code(0), 1, "not-consumer", "range", "member-1", "member-1", ())})
    with pytest.raises(Errors.InconsistentGroupProtocolError):
        poll_until(lambda: False, c, timeout_s=3.0)
