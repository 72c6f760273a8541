import pickle

import pytest

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member import (
    CommitCompleted, CommittedFetched, FatalError, ClassicMemberState, PartitionsAssigned, PartitionsLost,
    PartitionsRevoked,
)
from kgroup.errors import (
    CommitFailedError, FencedInstanceIdError, MemberClosedError, RetriableCommitFailedError,
)
from kgroup.values import Assignment, Subscription, TopicPartition as TP

from member_fakes import OK, EagerOnly, Harness, SplitAssignor

T0, T1, T2 = TP("t", 0), TP("t", 1), TP("t", 2)


def types(requests):
    return [type(r) for r in requests]


def stable(**kw):
    h = Harness(**kw)
    events = h.join([T0, T1])
    assert h.member.state is ClassicMemberState.STABLE
    return h, events


def test_join_sync_reaches_stable_and_reports_assignment():
    h, events = stable()
    assert h.member.assignment == {T0, T1}
    assert [type(e) for e in events] == [PartitionsAssigned]
    assert events[0].partitions == {T0, T1} and events[0].generation.generation_id == 1
    assert h.member.generation.member_id == "m1"


def test_join_request_carries_subscription_and_static_id():
    h = Harness(group_instance_id="inst-1", assignors=(SplitAssignor(), EagerOnly()))
    h.find()
    h.member.on_app_poll(h.now)
    [join] = h.pump()
    assert join.group_instance_id == "inst-1" and join.member_id == ""
    assert [p.name for p in join.protocols] == ["split", "eager-only"]
    assert pickle.loads(join.protocols[0].metadata).topics == ("t",)


def test_no_join_before_the_app_polls():
    h = Harness()
    h.find()
    assert h.pump() == []
    h.member.on_app_poll(h.now)
    assert types(h.pump()) == [m.JoinGroupRequest]
    assert h.member.state is ClassicMemberState.PREPARING_REBALANCE


def test_member_id_required_rejoins_with_given_id():
    h = Harness()
    h.find()
    h.member.on_app_poll(h.now)
    h.pump()
    h.reply(m.JoinGroupRequest, m.JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id="given"))
    [join] = h.pump()
    assert join.member_id == "given"


def _leader_of_two_sent_its_sync():
    """Member "a" leads a group of "a" and "b" on topic "t" (4 partitions): its SyncGroup is out."""
    h = Harness()
    h.member.update_metadata({"t": 4}, h.now)
    h.find()
    h.member.on_app_poll(h.now)
    h.pump()
    sub = pickle.dumps(Subscription(["t"]))
    h.reply(m.JoinGroupRequest, m.JoinGroupResponse(
        OK, 3, "consumer", "split", leader="a", member_id="a",
        members=[m.JoinGroupMember("a", None, sub), m.JoinGroupMember("b", None, sub)]))
    [sync] = h.pump()
    return h, sync


def test_leader_runs_assignor_with_members_metadata():
    h, sync = _leader_of_two_sent_its_sync()
    got = {a.member_id: set(pickle.loads(a.assignment).partitions) for a in sync.assignments}
    assert got == {"a": {TP("t", 0), TP("t", 2)}, "b": {TP("t", 1), TP("t", 3)}}
    assert h.member.is_leader
    h.reply(m.SyncGroupRequest, m.SyncGroupResponse(OK, "consumer", "split", dict(
        (a.member_id, a.assignment) for a in sync.assignments)["a"]))
    # leader rejoins when a subscribed topic's partition count changes
    h.member.update_metadata({"t": 4, "other": 1}, h.now)
    assert not h.member.rejoin_needed
    h.member.update_metadata({"t": 6}, h.now)
    assert h.member.rejoin_needed


def test_eager_revokes_all_before_join_and_join_waits_for_callbacks_and_commit():
    h, _ = stable(assignors=(EagerOnly(),), enable_auto_commit=True)
    h.clock.advance(300)
    assert types(h.pump()) == [m.HeartbeatRequest]
    h.reply(m.HeartbeatRequest, m.HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS))
    assert h.member.rejoin_needed and h.member.state is ClassicMemberState.STABLE
    h.member.on_app_poll(h.now, positions={T0: 5, T1: 7})
    # the pre-join auto-commit goes out; the JoinGroup does not yet
    assert types(h.pump()) == [m.OffsetCommitRequest]
    events = h.member.take_events()
    assert events == [PartitionsRevoked({T0, T1})]
    assert h.member.assignment == frozenset()
    h.member.on_app_poll(h.now)
    assert h.pump() == []  # still waiting for the commit
    commit = h.reply(m.OffsetCommitRequest,
                     m.OffsetCommitResponse([m.PartitionError(T0, OK), m.PartitionError(T1, OK)]))
    assert commit.generation_id == 1 and commit.member_id == "m1"
    assert types(h.pump()) == [m.JoinGroupRequest]


def test_join_waits_until_revocation_was_taken_and_app_polled_again():
    h, _ = stable(assignors=(EagerOnly(),))
    h.member.request_rejoin("test")
    h.member.on_app_poll(h.now)
    assert h.pump() == []           # revocation not taken yet
    h.member.take_events()
    assert h.pump() == []           # taken but the callbacks have not finished (no poll yet)
    h.member.on_app_poll(h.now)
    assert types(h.pump()) == [m.JoinGroupRequest]


def test_heartbeat_keeps_going_after_rebalance_in_progress():
    h, _ = stable()
    h.clock.advance(300)
    h.pump()
    h.reply(m.HeartbeatRequest, m.HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS))
    h.clock.advance(300)
    assert types(h.pump()) == [m.HeartbeatRequest]


def test_cooperative_revokes_only_dropped_then_rejoins():
    h, _ = stable()
    assert h.member.protocol.name == "COOPERATIVE"
    h.member.request_rejoin("test")
    h.member.on_app_poll(h.now)
    assert h.member.take_events() == []      # nothing revoked before the join
    h.member.on_app_poll(h.now)
    [join] = h.pump()
    sub = pickle.loads(join.protocols[0].metadata)
    assert set(sub.owned_partitions) == {T0, T1} and sub.generation_id == 1
    h.reply(m.JoinGroupRequest, m.JoinGroupResponse(OK, 2, "consumer", "split", "other", "m1"))
    h.pump()
    h.reply(m.SyncGroupRequest,
            m.SyncGroupResponse(OK, "consumer", "split", pickle.dumps(Assignment([T1, T2]))))
    events = h.member.take_events()
    assert events[0] == PartitionsRevoked({T0})
    assert events[1].partitions == {T2} and events[1].assignment == {T1, T2}
    assert h.member.rejoin_needed and h.member.assignment == {T1, T2}
    h.member.on_app_poll(h.now)
    [join] = [r for r in h.pump() if isinstance(r, m.JoinGroupRequest)]
    assert set(pickle.loads(join.protocols[0].metadata).owned_partitions) == {T1, T2}


def test_cooperative_revokes_unsubscribed_topic_before_join():
    h, _ = stable(topics=("t", "u"))
    h.member.subscribe(["u"], h.now)
    h.member.on_app_poll(h.now)
    assert h.member.take_events() == [PartitionsRevoked({T0, T1})]


@pytest.mark.parametrize("code", [ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION])
def test_lost_generation_reports_lost_not_revoked(code):
    h, _ = stable()
    h.clock.advance(300)
    h.pump()
    h.reply(m.HeartbeatRequest, m.HeartbeatResponse(code))
    assert h.member.state is ClassicMemberState.UNJOINED
    assert h.member.member_id == ("" if code is ErrorCode.UNKNOWN_MEMBER_ID else "m1")
    h.member.on_app_poll(h.now)
    assert h.member.take_events() == [PartitionsLost({T0, T1})]
    h.member.on_app_poll(h.now)
    [join] = h.pump()
    assert pickle.loads(join.protocols[0].metadata).owned_partitions == ()


def test_sync_rebalance_in_progress_rejoins_keeping_generation():
    h = Harness()
    h.find()
    h.member.on_app_poll(h.now)
    h.pump()
    h.reply(m.JoinGroupRequest, m.JoinGroupResponse(OK, 1, "consumer", "split", "x", "m1"))
    h.pump()
    h.reply(m.SyncGroupRequest, m.SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS))
    [join] = h.pump()
    assert join.member_id == "m1" and h.member.state is ClassicMemberState.PREPARING_REBALANCE


@pytest.mark.parametrize("code", [ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE])
def test_coordinator_errors_trigger_rediscovery(code):
    h, _ = stable()
    h.clock.advance(300)
    h.pump()
    h.reply(m.HeartbeatRequest, m.HeartbeatResponse(code))
    assert h.member.coordinator_id is None
    assert types(h.pump()) == [m.FindCoordinatorRequest]
    h.reply(m.FindCoordinatorRequest, m.FindCoordinatorResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    assert h.pump() == []                         # backoff
    assert h.member.get_timer() == h.now + 50
    h.clock.advance(50)
    assert types(h.pump()) == [m.FindCoordinatorRequest]
    h.reply(m.FindCoordinatorRequest, m.FindCoordinatorResponse(OK, node_id=2))
    assert h.member.coordinator_id == 2


def test_transport_error_marks_coordinator_unknown_and_abandons_in_flight():
    h, _ = stable()
    h.clock.advance(300)
    h.pump()
    h.fail(m.HeartbeatRequest)
    assert h.member.coordinator_id is None and not h.member.has_in_flight()
    assert types(h.pump()) == [m.FindCoordinatorRequest]


def test_join_load_in_progress_retries_after_backoff():
    h = Harness()
    h.find()
    h.member.on_app_poll(h.now)
    h.pump()
    h.reply(m.JoinGroupRequest, m.JoinGroupResponse(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
    assert h.pump() == []
    h.clock.advance(50)
    assert types(h.pump()) == [m.JoinGroupRequest]


def test_session_expiry_without_response_marks_coordinator_unknown():
    h, _ = stable()
    h.clock.advance(300)
    h.pump()                      # heartbeat sent, never answered
    h.clock.advance(700)
    assert h.member.get_timer() == h.now
    h.pump()
    assert h.member.coordinator_id is None


def test_poll_timeout_dynamic_member_leaves():
    h, _ = stable()
    for _ in range(20):           # heartbeats keep the session alive, the app never polls
        h.clock.advance(300)
        for r in h.pump():
            if isinstance(r, m.HeartbeatRequest):
                h.reply(m.HeartbeatRequest, m.HeartbeatResponse(OK))
            if isinstance(r, m.LeaveGroupRequest):
                assert r.members[0].member_id == "m1"
                assert h.member.state is ClassicMemberState.UNJOINED
                h.member.on_app_poll(h.now)
                assert h.member.take_events() == [PartitionsLost({T0, T1})]
                return
    pytest.fail("the member never left")


def test_poll_timeout_static_member_stops_heartbeating_without_leaving():
    h, _ = stable(group_instance_id="i1")
    sent = []
    for _ in range(20):
        h.clock.advance(300)
        for r in h.pump():
            sent.append(type(r))
            if isinstance(r, m.HeartbeatRequest):
                h.reply(m.HeartbeatRequest, m.HeartbeatResponse(OK))
    assert m.LeaveGroupRequest not in sent
    assert h.member.state is ClassicMemberState.UNJOINED and h.member.rejoin_needed
    assert sent.count(m.HeartbeatRequest) < 20


def test_static_close_does_not_leave_dynamic_close_does():
    h, _ = stable(group_instance_id="i1")
    h.member.close(h.now)
    assert h.pump() == [] and h.member.closed
    assert h.member.take_events()[-1] == PartitionsRevoked({T0, T1})
    h, _ = stable()
    h.member.close(h.now)
    [leave] = h.pump()
    assert isinstance(leave, m.LeaveGroupRequest) and leave.members[0].member_id == "m1"
    assert not h.member.closed
    h.reply(m.LeaveGroupRequest, m.LeaveGroupResponse(OK))
    assert h.member.closed
    with pytest.raises(MemberClosedError):
        h.member.subscribe(["x"], h.now)


def test_close_auto_commits_with_the_generation_it_had():
    h, _ = stable(enable_auto_commit=True)
    h.member.close(h.now, positions={T0: 3})
    commit, leave = h.pump()
    assert commit.generation_id == 1 and commit.member_id == "m1"
    assert isinstance(leave, m.LeaveGroupRequest)


@pytest.mark.parametrize("request_type", ["heartbeat", "sync"])
def test_fenced_is_fatal_and_surfaced(request_type):
    if request_type == "heartbeat":
        h, _ = stable(group_instance_id="i1")
        h.clock.advance(300)
        h.pump()
        h.reply(m.HeartbeatRequest, m.HeartbeatResponse(ErrorCode.FENCED_INSTANCE_ID))
        expected_lost = [PartitionsLost({T0, T1})]
    else:
        h = Harness(group_instance_id="i1")
        h.find()
        h.member.on_app_poll(h.now)
        h.pump()
        h.reply(m.JoinGroupRequest, m.JoinGroupResponse(OK, 1, "consumer", "split", "x", "m1"))
        h.pump()
        h.reply(m.SyncGroupRequest, m.SyncGroupResponse(ErrorCode.FENCED_INSTANCE_ID))
        expected_lost = []
    assert h.member.state is ClassicMemberState.FATAL
    events = h.member.take_events()
    assert events[:-1] == expected_lost
    assert isinstance(events[-1], FatalError) and isinstance(events[-1].error, FencedInstanceIdError)
    assert h.pump() == [] and h.member.get_timer() is None
    with pytest.raises(MemberClosedError):
        h.member.commit_offsets({T0: 1}, h.now)


def test_commit_failed_when_generation_gone():
    h, _ = stable()
    token = h.member.commit_offsets({T0: 10}, h.now)
    h.pump()
    h.reply(m.OffsetCommitRequest,
            m.OffsetCommitResponse([m.PartitionError(T0, ErrorCode.ILLEGAL_GENERATION)]))
    [event] = h.member.take_events()
    assert event.token == token and isinstance(event.error, CommitFailedError)
    assert h.member.state is ClassicMemberState.UNJOINED and h.member.rejoin_needed
    # a commit with no generation fails at once
    token = h.member.commit_offsets({T0: 11}, h.now)
    assert h.pump() == []
    [event] = h.member.take_events()
    assert isinstance(event.error, CommitFailedError)


def test_commit_retries_retriable_errors_until_deadline():
    h, _ = stable()
    token = h.member.commit_offsets({T0: 10}, h.now, deadline_ms=h.now + 1000)
    h.pump()
    h.reply(m.OffsetCommitRequest,
            m.OffsetCommitResponse([m.PartitionError(T0, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)]))
    assert h.member.take_events() == []
    h.clock.advance(50)
    assert types(h.pump()) == [m.OffsetCommitRequest]
    h.reply(m.OffsetCommitRequest, m.OffsetCommitResponse([m.PartitionError(T0, OK)]))
    assert h.member.take_events() == [CommitCompleted(token, {T0: m.OffsetAndMetadata(10)}, None)]
    h.member.commit_offsets({T0: 11}, h.now)   # async: no deadline, fails on the first retriable error
    h.pump()
    h.reply(m.OffsetCommitRequest,
            m.OffsetCommitResponse([m.PartitionError(T0, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)]))
    assert isinstance(h.member.take_events()[0].error, RetriableCommitFailedError)


def test_auto_commit_on_interval_and_fetch_on_assignment():
    h = Harness(enable_auto_commit=True, auto_commit_interval_ms=200, fetch_committed_on_assignment=True)
    h.find()
    h.member.on_app_poll(h.now)
    h.pump()
    h.reply(m.JoinGroupRequest, m.JoinGroupResponse(OK, 1, "consumer", "split", "x", "m1"))
    h.pump()
    h.reply(m.SyncGroupRequest, m.SyncGroupResponse(OK, "consumer", "split", pickle.dumps(Assignment([T0]))))
    [fetch] = h.pump()
    assert isinstance(fetch, m.OffsetFetchRequest) and fetch.partitions == (T0,)
    h.reply(m.OffsetFetchRequest, m.OffsetFetchResponse(OK, [m.PartitionOffset(T0, m.OffsetAndMetadata(42))]))
    fetched = h.member.take_events()[-1]
    assert isinstance(fetched, CommittedFetched) and fetched.offsets == {T0: m.OffsetAndMetadata(42)}
    h.member.on_app_poll(h.now, positions={T0: 50})
    assert h.pump() == []
    h.clock.advance(200)
    h.member.on_app_poll(h.now, positions={T0: 60})
    [commit] = [r for r in h.pump() if isinstance(r, m.OffsetCommitRequest)]
    assert commit.offsets == (m.PartitionOffsetCommit(T0, m.OffsetAndMetadata(60)),)


def test_positions_accept_kafka_python_offset_and_metadata():
    from kafka.structs import OffsetAndMetadata as KafkaOAM

    h, _ = stable(enable_auto_commit=True)
    h.member.close(h.now, positions={T0: KafkaOAM(9, "meta", None)})
    commit = h.pump()[0]
    assert commit.offsets == (m.PartitionOffsetCommit(T0, m.OffsetAndMetadata(9, "meta", -1)),)


def test_subscription_change_rejoins_and_unsubscribe_leaves():
    h, _ = stable()
    h.member.subscribe(["t"], h.now)
    assert not h.member.rejoin_needed        # same topics: nothing to do
    h.member.subscribe(["t", "u"], h.now)
    assert h.member.rejoin_needed
    h.member.unsubscribe(h.now)
    assert h.member.take_events() == [PartitionsRevoked({T0, T1})]
    [leave] = h.pump()
    assert isinstance(leave, m.LeaveGroupRequest) and h.member.state is ClassicMemberState.UNJOINED
    assert not h.member.rejoin_needed


def test_subscription_changed_during_rebalance_rejoins_after_sync():
    h = Harness()
    h.find()
    h.member.on_app_poll(h.now)
    h.pump()
    h.member.subscribe(["t", "u"], h.now)
    h.reply(m.JoinGroupRequest, m.JoinGroupResponse(OK, 1, "consumer", "split", "x", "m1"))
    h.pump()
    h.reply(m.SyncGroupRequest, m.SyncGroupResponse(OK, "consumer", "split", pickle.dumps(Assignment([T0]))))
    assert h.member.state is ClassicMemberState.STABLE and h.member.rejoin_needed


def test_leader_rejoins_after_the_sync_when_a_partition_count_changed_during_the_rebalance():
    """Java's ConsumerCoordinator.rejoinNeededOrPending compares the assignment's metadata snapshot
    with the current metadata whenever it is asked, not only when metadata arrives while Stable.  Found
    by the simulator (kgroup simulate --seed 956 --members 3 --partitions 6 --duration-ms 10000
    --max-faults 5): partitions added mid-rebalance stayed unowned."""
    h, sync = _leader_of_two_sent_its_sync()
    h.member.update_metadata({"t": 6}, h.now)  # while the SyncGroup is in flight
    h.reply(m.SyncGroupRequest, m.SyncGroupResponse(OK, "consumer", "split", dict(
        (a.member_id, a.assignment) for a in sync.assignments)["a"]))
    assert h.member.state is ClassicMemberState.STABLE
    assert h.member.rejoin_needed
