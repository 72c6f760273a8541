"""kgroup values ↔ kafka-python 3.0 structs, at the versions whose layouts differ.

No broker: requests are encoded at a version and decoded with kafka-python's
own class; responses are built as kafka-python would decode them.
"""
from __future__ import annotations

import pytest
from kafka.protocol.consumer import (
    JoinGroupRequest as KJoin,
    JoinGroupResponse as KJoinResponse,
    LeaveGroupRequest as KLeave,
    LeaveGroupResponse as KLeaveResponse,
    OffsetCommitRequest as KCommit,
    OffsetCommitResponse as KCommitResponse,
    OffsetFetchRequest as KFetch,
    OffsetFetchResponse as KFetchResponse,
    SyncGroupRequest as KSync,
)
from kafka.protocol.metadata import FindCoordinatorRequest as KFind, FindCoordinatorResponse as KFindResponse

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.io.kafka_python.convert import error_code, from_struct, to_struct
from kgroup.values import TopicPartition

T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)


def wire(request, cls, version):
    """Encode with the negotiated ``version``, decode as the broker would."""
    return cls.decode(to_struct(request).encode(version=version), version=version)


@pytest.mark.parametrize("version", [0, 5, 7, 9])
def test_join_group_request(version):
    req = m.JoinGroupRequest(
        "g", member_id="m-1", session_timeout_ms=6000, rebalance_timeout_ms=9000, group_instance_id="i-1",
        protocols=[m.JoinGroupProtocol("range", b"\x01\x02"), m.JoinGroupProtocol("roundrobin", b"")],
        reason="because",
    )
    got = wire(req, KJoin, version)
    assert (got.group_id, got.member_id, got.session_timeout_ms) == ("g", "m-1", 6000)
    assert [(p.name, bytes(p.metadata)) for p in got.protocols] == \
        [("range", b"\x01\x02"), ("roundrobin", b"")]
    if version >= 1:
        assert got.rebalance_timeout_ms == 9000
    if version >= 5:
        assert got.group_instance_id == "i-1"
    if version >= 8:
        assert got.reason == "because"


def test_join_group_request_version_is_capped_by_the_value():
    assert to_struct(m.JoinGroupRequest("g", api_version=5))._max_version == 5


def test_join_group_response():
    resp = KJoinResponse(
        version=7, error_code=0, generation_id=4, protocol_type="consumer", protocol_name="range",
        leader="a", member_id="a",
        members=[KJoinResponse.JoinGroupResponseMember(member_id="a", group_instance_id=None, metadata=b"x")],
    )
    got = from_struct(m.JoinGroupRequest("g"), resp)
    assert got == m.JoinGroupResponse(
        ErrorCode.NONE, 4, "consumer", "range", "a", "a", [m.JoinGroupMember("a", None, b"x")], False
    )


def test_sync_group_request_carries_leader_assignments():
    req = m.SyncGroupRequest("g", 3, "a", protocol_name="range",
                             assignments=[m.SyncGroupAssignment("a", b"1"), m.SyncGroupAssignment("b", b"2")])
    got = wire(req, KSync, 5)
    assert (got.generation_id, got.member_id, got.protocol_name) == (3, "a", "range")
    assert [(a.member_id, bytes(a.assignment)) for a in got.assignments] == [("a", b"1"), ("b", b"2")]


@pytest.mark.parametrize("version", [0, 2, 3, 5])
def test_leave_group_request_layouts(version):
    got = wire(m.LeaveGroupRequest("g", [m.MemberIdentity("m-1", "i-1", "bye")]), KLeave, version)
    if version <= 2:
        assert got.member_id == "m-1"
    else:
        assert [(x.member_id, x.group_instance_id) for x in got.members] == [("m-1", "i-1")]


def test_batched_leave_needs_v3():
    struct = to_struct(m.LeaveGroupRequest("g", [m.MemberIdentity("a"), m.MemberIdentity("b")]))
    assert struct._min_version == 3


@pytest.mark.parametrize("version", [2, 3])
def test_leave_group_response(version):
    members = ([KLeaveResponse.MemberResponse(member_id="a", group_instance_id=None, error_code=25)]
               if version >= 3 else [])
    got = from_struct(m.LeaveGroupRequest("g", [m.MemberIdentity("a")]),
                      KLeaveResponse(version=version, error_code=0, members=members))
    assert got.error_code is ErrorCode.NONE
    if version >= 3:
        assert got.members == (m.LeaveGroupMemberResponse("a", None, ErrorCode.UNKNOWN_MEMBER_ID),)


@pytest.mark.parametrize("version", [2, 6, 8])
def test_offset_commit_request_groups_by_topic(version):
    req = m.OffsetCommitRequest("g", [
        m.PartitionOffsetCommit(T0, m.OffsetAndMetadata(5, "a", 2)),
        m.PartitionOffsetCommit(U0, m.OffsetAndMetadata(7)),
        m.PartitionOffsetCommit(T1, m.OffsetAndMetadata(6)),
    ], generation_id=3, member_id="m")
    got = wire(req, KCommit, version)
    assert (got.generation_id_or_member_epoch, got.member_id) == (3, "m")
    flat = {(t.name, p.partition_index): (p.committed_offset, p.committed_metadata)
            for t in got.topics for p in t.partitions}
    assert flat == {("t", 0): (5, "a"), ("t", 1): (6, ""), ("u", 0): (7, "")}


def test_offset_commit_never_asks_for_kip_848_versions():
    assert to_struct(m.OffsetCommitRequest("g", []))._max_version == 8
    assert to_struct(m.OffsetFetchRequest("g"))._max_version == 8


def test_offset_commit_response():
    topic = KCommitResponse.OffsetCommitResponseTopic
    part = topic.OffsetCommitResponsePartition
    partitions = [part(partition_index=0, error_code=0), part(partition_index=1, error_code=22)]
    resp = KCommitResponse(version=8, topics=[topic(name="t", partitions=partitions)])
    got = from_struct(m.OffsetCommitRequest("g", []), resp)
    assert got.partitions == (m.PartitionError(T0, ErrorCode.NONE),
                              m.PartitionError(T1, ErrorCode.ILLEGAL_GENERATION))


@pytest.mark.parametrize("version", [1, 7, 8])
def test_offset_fetch_request_layouts(version):
    got = wire(m.OffsetFetchRequest("g", [T1, T0, U0]), KFetch, version)
    if version < 8:
        assert got.group_id == "g"
        assert {t.name: sorted(t.partition_indexes) for t in got.topics} == {"t": [0, 1], "u": [0]}
    else:
        [group] = got.groups
        assert group.group_id == "g"
        assert {t.name: sorted(t.partition_indexes) for t in group.topics} == {"t": [0, 1], "u": [0]}


def test_offset_fetch_of_everything_needs_v2():
    assert to_struct(m.OffsetFetchRequest("g", None))._min_version == 2


@pytest.mark.parametrize("version", [1, 5, 8])
def test_offset_fetch_response_layouts(version):
    def partitions(cls):
        return [cls(partition_index=0, committed_offset=9, committed_leader_epoch=3, metadata="x",
                    error_code=0),
                cls(partition_index=1, committed_offset=-1, committed_leader_epoch=-1, metadata="",
                    error_code=0)]

    if version >= 8:
        g = KFetchResponse.OffsetFetchResponseGroup
        t = g.OffsetFetchResponseTopics
        resp = KFetchResponse(version=version, groups=[g(group_id="g", error_code=0, topics=[
            t(name="t", partitions=partitions(t.OffsetFetchResponsePartitions))])])
    else:
        t = KFetchResponse.OffsetFetchResponseTopic
        resp = KFetchResponse(version=version, error_code=0, topics=[
            t(name="t", partitions=partitions(t.OffsetFetchResponsePartition))])
    resp = KFetchResponse.decode(resp.encode(version=version), version=version)  # as it comes off the wire
    got = from_struct(m.OffsetFetchRequest("g", [T0, T1]), resp)
    assert got.error_code is ErrorCode.NONE
    epoch = 3 if version >= 5 else -1
    assert got.partitions == (m.PartitionOffset(T0, m.OffsetAndMetadata(9, "x", epoch)),
                              m.PartitionOffset(T1, None))


@pytest.mark.parametrize("version", [0, 3, 4, 6])
def test_find_coordinator_layouts(version):
    got = wire(m.FindCoordinatorRequest("grp"), KFind, version)
    if version <= 3:
        assert got.key == "grp"
    else:
        assert list(got.coordinator_keys) == ["grp"]
    if version >= 4:
        resp = KFindResponse(version=version, coordinators=[
            KFindResponse.Coordinator(key="grp", node_id=2, host="h", port=9, error_code=0)])
    else:
        resp = KFindResponse(version=version, error_code=15, node_id=-1, host="", port=-1)
    answer = from_struct(m.FindCoordinatorRequest("grp"), resp)
    if version >= 4:
        assert answer == m.FindCoordinatorResponse(ErrorCode.NONE, 2, "h", 9)
    else:
        assert answer.error_code is ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_unnamed_error_codes_become_unknown_server_error():
    assert error_code(30) is ErrorCode.GROUP_AUTHORIZATION_FAILED  # named as in Kafka's Errors enum
    assert error_code(9_999) is ErrorCode.UNKNOWN_SERVER_ERROR     # a code Kafka does not define
    assert error_code(27) is ErrorCode.REBALANCE_IN_PROGRESS
