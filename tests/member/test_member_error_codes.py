"""Each error code's reaction, request by request."""
import pickle

import pytest

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode as E
from kgroup.core.member import CommittedFetched, FatalError, ClassicMemberState
from kgroup.errors import GroupMemberError
from kgroup.values import Assignment, TopicPartition as TP

from member_fakes import OK, Harness


def joining():
    h = Harness()
    h.find()
    h.member.on_app_poll(h.now)
    [join] = h.pump()
    assert isinstance(join, m.JoinGroupRequest)
    return h


def syncing():
    h = joining()
    h.reply(m.JoinGroupRequest, m.JoinGroupResponse(OK, 4, "consumer", "split", "x", "m1"))
    [sync] = h.pump()
    assert isinstance(sync, m.SyncGroupRequest) and sync.generation_id == 4
    return h


@pytest.mark.parametrize("code", [E.INCONSISTENT_GROUP_PROTOCOL, E.INVALID_SESSION_TIMEOUT,
                                  E.GROUP_MAX_SIZE_REACHED, E.INVALID_GROUP_ID, E.FENCED_INSTANCE_ID])
def test_join_fatal_codes(code):
    h = joining()
    h.reply(m.JoinGroupRequest, m.JoinGroupResponse(code))
    assert h.member.state is ClassicMemberState.FATAL
    [event] = h.member.take_events()
    assert isinstance(event, FatalError) and event.error.error_code is code


@pytest.mark.parametrize("code", [E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE])
def test_join_coordinator_moved_rediscovers_then_rejoins(code):
    h = joining()
    h.reply(m.JoinGroupRequest, m.JoinGroupResponse(code))
    assert h.member.coordinator_id is None
    h.find()
    h.clock.advance(50)
    assert [type(r) for r in h.pump()] == [m.JoinGroupRequest]


def test_join_unknown_member_id_resets_member_id():
    h = joining()
    h.reply(m.JoinGroupRequest, m.JoinGroupResponse(E.MEMBER_ID_REQUIRED, member_id="m9"))
    h.pump()
    h.reply(m.JoinGroupRequest, m.JoinGroupResponse(E.UNKNOWN_MEMBER_ID))
    [join] = h.pump()
    assert join.member_id == ""


@pytest.mark.parametrize("code,member_id", [(E.UNKNOWN_MEMBER_ID, ""), (E.ILLEGAL_GENERATION, "m1")])
def test_sync_generation_gone_resets_and_rejoins(code, member_id):
    h = syncing()
    h.reply(m.SyncGroupRequest, m.SyncGroupResponse(code))
    assert h.member.state is ClassicMemberState.UNJOINED and h.member.generation.generation_id == -1
    [join] = h.pump()
    assert join.member_id == member_id


def test_sync_coordinator_moved_rediscovers_and_rejoins():
    h = syncing()
    h.reply(m.SyncGroupRequest, m.SyncGroupResponse(E.NOT_COORDINATOR))
    h.find()
    [join] = h.pump()
    assert join.member_id == "m1"


def test_sync_with_a_different_protocol_is_fatal():
    h = syncing()
    h.reply(m.SyncGroupRequest, m.SyncGroupResponse(OK, "consumer", "range", pickle.dumps(Assignment([]))))
    assert h.member.state is ClassicMemberState.FATAL


def test_heartbeat_in_completing_rebalance_ignores_rebalance_in_progress():
    h = syncing()
    h.clock.advance(300)
    [hb] = h.pump()
    assert isinstance(hb, m.HeartbeatRequest) and hb.generation_id == 4
    h.reply(m.HeartbeatRequest, m.HeartbeatResponse(E.REBALANCE_IN_PROGRESS))
    h.reply(m.SyncGroupRequest, m.SyncGroupResponse(OK, "consumer", "split", pickle.dumps(Assignment([]))))
    assert h.member.state is ClassicMemberState.STABLE and not h.member.rejoin_needed


def test_stale_heartbeat_error_from_an_old_generation_is_ignored():
    h, = [Harness()]
    h.join([TP("t", 0)], generation=1)
    h.clock.advance(300)
    h.pump()                                   # heartbeat for generation 1 in flight
    h.member.request_rejoin("test")
    h.member.on_app_poll(h.now)
    h.member.take_events()
    h.member.on_app_poll(h.now)
    h.pump()
    h.reply(m.JoinGroupRequest, m.JoinGroupResponse(OK, 2, "consumer", "split", "x", "m1"))
    h.reply(m.HeartbeatRequest, m.HeartbeatResponse(E.ILLEGAL_GENERATION))
    assert h.member.state is ClassicMemberState.COMPLETING_REBALANCE
    assert h.member.generation.generation_id == 2


def test_heartbeat_unexpected_error_retries_after_backoff():
    h = Harness()
    h.join([TP("t", 0)])
    h.clock.advance(300)
    h.pump()
    h.reply(m.HeartbeatRequest, m.HeartbeatResponse(E.UNKNOWN_SERVER_ERROR))
    assert isinstance(h.member.last_error, GroupMemberError)
    h.clock.advance(49)
    assert h.pump() == []
    h.clock.advance(1)
    assert [type(r) for r in h.pump()] == [m.HeartbeatRequest]


def test_offset_fetch_retries_then_reports():
    h = Harness()
    h.join([TP("t", 0)])
    token = h.member.fetch_committed([TP("t", 0)], h.now)
    h.pump()
    h.reply(m.OffsetFetchRequest, m.OffsetFetchResponse(E.COORDINATOR_LOAD_IN_PROGRESS))
    assert h.member.take_events() == []
    h.clock.advance(50)
    h.pump()
    h.reply(m.OffsetFetchRequest, m.OffsetFetchResponse(OK, [m.PartitionOffset(TP("t", 0), None)]))
    assert h.member.take_events() == [CommittedFetched(token, {TP("t", 0): None})]
