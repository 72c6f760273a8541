"""The member against bad peers: a group member with garbage metadata, a broker answering nonsense,
and a static leader told to skip the assignment (KIP-814).  Issue 9, items 4, 5 and 8."""
import logging

import pytest

from kgroup.assignors import Assignor, RebalanceProtocol, get_assignor
from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member import ClassicMemberState
from kgroup.errors import ProtocolError
from kgroup.values import Subscription, TopicPartition
from kgroup.wire.consumer_protocol import decode_assignment, encode_subscription

from member_fakes import Harness

REAL_CODEC = True
OK = ErrorCode.NONE


def join_response(h, members, leader="m1", generation=1, skip_assignment=False):
    return m.JoinGroupResponse(
        OK, generation_id=generation, protocol_type="consumer",
        protocol_name=h.member.config.assignors[0].name, leader=leader, member_id="m1",
        members=tuple(members), skip_assignment=skip_assignment)


def prepared(h):
    h.find()
    h.member.update_metadata({"t": 4}, h.now)
    h.member.on_app_poll(h.now)
    h.member.take_events()
    h.member.on_app_poll(h.now)
    assert any(isinstance(r, m.JoinGroupRequest) for r in h.pump())


def good(member_id):
    return m.JoinGroupMember(member_id, None, encode_subscription(Subscription(topics=("t",))))


@pytest.mark.parametrize("garbage", [b"", b"\x00", b"\xff\xff\xff\xff", b"\x00\x01\x00\x00\x00\x05abc"])
def test_leader_assigns_nothing_to_a_member_whose_metadata_it_cannot_decode(garbage, caplog):
    # Another test's CLI run may have raised the "kgroup" logger's level for the whole process.
    caplog.set_level(logging.WARNING, logger="kgroup")
    h = Harness(assignors=(get_assignor("range"),))
    prepared(h)
    members = [good("m1"), m.JoinGroupMember("bad", None, garbage), good("m3")]
    h.reply(m.JoinGroupRequest, join_response(h, members))
    [sync] = [r for r in h.pump() if isinstance(r, m.SyncGroupRequest)]
    assert h.member.state is ClassicMemberState.COMPLETING_REBALANCE  # not FATAL
    given = {a.member_id: decode_assignment(a.assignment).partitions for a in sync.assignments}
    assert given["bad"] == ()
    assert sorted(given["m1"] + given["m3"]) == [TopicPartition("t", p) for p in range(4)]
    assert "bad" in caplog.text


def test_successful_join_response_without_a_generation_is_a_typed_protocol_error():
    h = Harness(assignors=(get_assignor("range"),))
    prepared(h)
    h.reply(m.JoinGroupRequest, join_response(h, [good("m1")], generation=-1))
    assert isinstance(h.member.last_error, ProtocolError)
    assert "JoinGroupResponse" in str(h.member.last_error) and "preparing" in str(h.member.last_error).lower()
    assert h.member.state is ClassicMemberState.PREPARING_REBALANCE and not h.member.generation.is_valid
    assert not any(isinstance(r, (m.SyncGroupRequest, m.HeartbeatRequest)) for r in h.pump())
    h.clock.advance(h.member.config.retry_backoff_ms)
    assert any(isinstance(r, m.JoinGroupRequest) for r in h.pump())  # it joins again


class MustNotAssign(Assignor):
    name = "must-not-assign"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def assign(self, partitions_per_topic, subscriptions, partition_racks=None):
        raise AssertionError("a leader told to skip the assignment ran its assignor")


def test_static_leader_told_to_skip_assignment_sends_an_empty_sync_and_keeps_watching_metadata():
    h = Harness(assignors=(MustNotAssign(),), group_instance_id="i1")
    prepared(h)
    h.reply(m.JoinGroupRequest, join_response(h, [good("m1"), good("m2")], skip_assignment=True))
    [sync] = [r for r in h.pump() if isinstance(r, m.SyncGroupRequest)]
    assert sync.assignments == ()
    assert h.member.is_leader and h.member.metadata_topics() == frozenset({"t"})


def test_static_leader_that_skipped_the_assignment_adopts_counts_it_learns_after_the_join():
    """KIP-814: the returning static leader assigned nothing, so a partition count it did not know
    when the join was answered is a baseline, not a change (Java's onLeaderElected: assignmentSnapshot
    = metadataSnapshot); a count that changes afterwards still makes it rejoin.  Found by the wire
    server's client matrix: a kgroup static leader bounce rebalanced the group."""
    h = Harness(assignors=(MustNotAssign(),), group_instance_id="i1")
    h.find()
    h.member.on_app_poll(h.now)
    h.member.take_events()
    h.member.on_app_poll(h.now)
    assert any(isinstance(r, m.JoinGroupRequest) for r in h.pump())
    h.reply(m.JoinGroupRequest, join_response(h, [good("m1"), good("m2")], skip_assignment=True))
    assert any(isinstance(r, m.SyncGroupRequest) for r in h.pump())
    h.reply(m.SyncGroupRequest, m.SyncGroupResponse(OK, "consumer", "must-not-assign", b""))
    assert h.member.state is ClassicMemberState.STABLE and h.member.is_leader
    h.member.update_metadata({"t": 4}, h.now)
    assert not h.member.rejoin_needed
    h.member.update_metadata({"t": 6}, h.now)
    assert h.member.rejoin_needed
