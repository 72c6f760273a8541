"""Kafka's ClassicGroupMemberTest (group-coordinator, org.apache.kafka.coordinator.group.classic), ported.

kgroup's :class:`~kgroup.core.coordinator.classic_member.Member` is Kafka's ClassicGroupMember; its
describe / describeNoMetadata are what kgroup's AdminHandler answers for a member of a Stable / not
Stable group.  Kafka's IllegalArgumentException is kgroup's typed GroupInvariantViolation.
"""
from __future__ import annotations

import pytest

from kgroup.core.coordinator import GroupState
from kgroup.core.coordinator.admin import AdminHandler
from kgroup.core.coordinator.group import Group, Member
from kgroup.core.coordinator_common.errors import GroupInvariantViolation
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import DescribedMember, DescribeGroupsRequest, JoinGroupProtocol

S = GroupState
RANGE_ROUNDROBIN = (JoinGroupProtocol("range", b"\x00"), JoinGroupProtocol("roundrobin", b"\x01"))


def member(protocols=RANGE_ROUNDROBIN, *, is_new: bool = False) -> Member:
    """Kafka's test member: rebalance timeout 10 ms, session timeout 4500 ms, protocol type "generic"
    (a group's, in kgroup)."""
    return Member("group-id", "member", "group-instance-id", "client-id", "client-host", 4_500, 10, protocols,
                  is_new=is_new)


def test_testMatchesSupportedProtocols():
    m = member((JoinGroupProtocol("range", b"\x00"),))
    assert m.matches((JoinGroupProtocol("range", b"\x00"),))
    assert not m.matches((JoinGroupProtocol("range", b"\x01"),))
    assert not m.matches((JoinGroupProtocol("range", b""),))
    assert not m.matches((JoinGroupProtocol("range", b""), JoinGroupProtocol("roundrobin", b"")))
    assert m.matches(m.protocols)


def test_testVoteForPreferredProtocol():
    m = member()
    assert m.vote({"range", "roundrobin"}) == "range"
    assert m.vote({"unknown", "roundrobin"}) == "roundrobin"


def test_testMetadata():
    m = member()
    assert m.metadata_for("range") == b"\x00"
    assert m.metadata_for("roundrobin") == b"\x01"


def test_testMetadataRaisesOnUnsupportedProtocol():
    """Departure (docs/conformance/coordinator.md): Kafka's metadata() throws for a protocol the
    member does not support; kgroup answers b"" because it reads members' subscriptions during a
    rebalance too (OffsetDelete's subscribed-topic check), when a new member may not support the
    previous generation's protocol, and empty bytes then read as "subscriptions unknown"."""
    assert member(()).metadata_for("unknown") == b""


def test_testVoteRaisesOnNoSupportedProtocols():
    with pytest.raises(GroupInvariantViolation, match="supports none of the candidate protocols"):
        member().vote({"unknown"})


def test_testPlainProtocolSet():
    """ClassicGroupMember.plainProtocolSet is kgroup's Member.protocol_names, in preference order."""
    assert member().protocol_names == ("range", "roundrobin")


def test_testHasHeartbeatSatisfied():
    """Kafka sets isNew and the awaiting futures on the member; kgroup's member is new when created so
    and its parked requests are set through its Group (two members, as a parked key is per member)."""
    group = Group("group-id")
    old, new = member(), Member("group-id", "new", None, "c", "h", 4_500, 10, RANGE_ROUNDROBIN, is_new=True)
    group.add(old, protocol_type="generic")
    group.add(new)
    assert not old.has_satisfied_heartbeat()
    group.park_join(new, "join")
    assert not new.has_satisfied_heartbeat()  # a new member awaiting its join is not kept alive
    group.park_join(old, "join")
    assert old.has_satisfied_heartbeat()
    assert group.take_join_key(old) == "join"
    group.park_sync(old, "sync")
    assert old.has_satisfied_heartbeat()


def _described(stable: bool) -> DescribedMember:
    group = Group("group-id")
    group.add(member((JoinGroupProtocol("range", b"\x00"),)), "join", protocol_type="generic")
    group.transition_to(S.PREPARING_REBALANCE)
    group.init_next_generation()
    if stable:
        group.transition_to(S.STABLE)
    admin = AdminHandler({"group-id": group}, lambda g: None, lambda record: None)
    (described,) = admin.describe(DescribeGroupsRequest(("group-id",))).groups
    assert described.error_code is ErrorCode.NONE
    (described_member,) = described.members
    return described_member


def test_testDescribeNoMetadata():
    """describeNoMetadata: what DescribeGroups shows outside Stable (here: CompletingRebalance)."""
    expected = DescribedMember("member", "group-instance-id", "client-id", "client-host", b"", b"")
    assert _described(stable=False) == expected


def test_testDescribe():
    """describe(protocol): a Stable group's member with its metadata for the selected protocol."""
    expected = DescribedMember("member", "group-instance-id", "client-id", "client-host", b"\x00", b"")
    assert _described(stable=True) == expected
