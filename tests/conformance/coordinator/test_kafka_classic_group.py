"""Kafka's ClassicGroupTest (group-coordinator, org.apache.kafka.coordinator.group.classic), ported.

The scenarios run against kgroup's :class:`~kgroup.core.coordinator.group.Group` (Kafka's ClassicGroup)
directly, as Kafka's do; where Kafka's check lives in a group method kgroup keeps in a handler
(validateOffsetCommit, validateOffsetDelete, validateDeleteGroup, isInStates), the port hands the
same hand-made group to that handler (OffsetHandler, TransactionalOffsets, AdminHandler).  Where
Kafka throws IllegalStateException, kgroup raises its typed IllegalStateTransition /
GroupInvariantViolation.  Twenty of the 57 tests were ported earlier, in
tests/coordinator/test_coordinator_group_invariants.py (Group's invariants, issue 10); they are not
repeated here.
"""
from __future__ import annotations

from typing import Optional

import pytest
from coordinator_kafka_gmm_harness import Ctx

from kgroup.core.consumer_group.group import ConsumerGroup
from kgroup.core.consumer_group.member import ClassicMemberMetadata, ConsumerGroupMember, MemberState
from kgroup.core.coordinator import GroupState
from kgroup.core.coordinator.admin import AdminHandler
from kgroup.core.coordinator.group import Group, Member
from kgroup.core.coordinator.migration import classic_group_from_consumer
from kgroup.core.coordinator.offsets import OffsetHandler
from kgroup.core.coordinator.pending_offsets import PendingOffsets
from kgroup.core.coordinator.txn_offsets import TransactionalOffsets
from kgroup.core.coordinator_common.errors import GroupInvariantViolation
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    DeleteGroupsRequest, JoinGroupProtocol, JoinGroupResponse, ListGroupsRequest, OffsetAndMetadata,
    OffsetCommitRequest, OffsetDeleteRequest, PartitionOffsetCommit, SyncGroupResponse,
    TxnOffsetCommitRequest,
)
from kgroup.errors import IllegalStateTransition
from kgroup.values import Assignment, Subscription, TopicPartition
from kgroup.wire.consumer_protocol import decode_assignment, encode_subscription

S = GroupState
E = ErrorCode
PROTOCOL_TYPE = "consumer"
GROUP_ID = "groupId"
MEMBER_ID = "memberId"
ROUNDROBIN = (JoinGroupProtocol("roundrobin", b""),)
ALL_STATES = (S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.DEAD)


def member(member_id: str = MEMBER_ID, instance_id: Optional[str] = None, protocols=ROUNDROBIN,
           rebalance_timeout_ms: int = 60_000, session_timeout_ms: int = 10_000) -> Member:
    return Member(GROUP_ID, member_id, instance_id, "clientId", "clientHost", session_timeout_ms,
                  rebalance_timeout_ms, protocols)


def subscribing(*topics: str, name: str = "range") -> tuple[JoinGroupProtocol, ...]:
    return (JoinGroupProtocol(name, encode_subscription(Subscription(topics))),)


def range_protocol(owned: TopicPartition) -> tuple[JoinGroupProtocol, ...]:
    """A "range" protocol subscribing to "foo" and owning ``owned`` (Kafka's createClassicProtocol)."""
    subscription = Subscription(("foo",), owned_partitions=(owned,))
    return (JoinGroupProtocol("range", encode_subscription(subscription)),)


@pytest.fixture
def group() -> Group:
    return Group(GROUP_ID)


def assert_state(group: Group, target: GroupState) -> None:
    """Kafka's assertState: the group is in ``target`` and in no other state."""
    assert all(not group.is_(other) for other in ALL_STATES if other is not target)
    assert group.is_(target)


# -- canRebalance (kgroup: whether PreparingRebalance may be entered, as Kafka defines it) ----------


def test_testCanRebalanceWhenStable(group):
    """Kafka's test starts from its fixture's Empty group, as here."""
    assert group.can_transition_to(S.PREPARING_REBALANCE)


def test_testCanRebalanceWhenCompletingRebalance(group):
    group.transition_to(S.PREPARING_REBALANCE)
    group.transition_to(S.COMPLETING_REBALANCE)
    assert group.can_transition_to(S.PREPARING_REBALANCE)


def test_testCannotRebalanceWhenPreparingRebalance(group):
    group.transition_to(S.PREPARING_REBALANCE)
    assert not group.can_transition_to(S.PREPARING_REBALANCE)


def test_testCannotRebalanceWhenDead(group):
    group.transition_to(S.PREPARING_REBALANCE)
    group.transition_to(S.EMPTY)
    group.transition_to(S.DEAD)
    assert not group.can_transition_to(S.PREPARING_REBALANCE)


# -- state transitions ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [
    pytest.param((S.PREPARING_REBALANCE,), id="testStableToPreparingRebalanceTransition"),
    pytest.param((S.DEAD,), id="testStableToDeadTransition"),
    pytest.param((S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE),
                 id="testAwaitingRebalanceToPreparingRebalanceTransition"),
    pytest.param((S.PREPARING_REBALANCE, S.DEAD), id="testPreparingRebalanceToDeadTransition"),
    pytest.param((S.PREPARING_REBALANCE, S.EMPTY), id="testPreparingRebalanceToEmptyTransition"),
    pytest.param((S.PREPARING_REBALANCE, S.EMPTY, S.DEAD), id="testEmptyToDeadTransition"),
    pytest.param((S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE),
                 id="testAwaitingRebalanceToStableTransition"),
    pytest.param((S.PREPARING_REBALANCE, S.DEAD, S.DEAD), id="testDeadToDeadIllegalTransition"),
])
def test_legal_transitions(group, path):
    """Kafka's legal-transition tests (Dead to Dead is legal despite its test's name)."""
    for state in path:
        group.transition_to(state)
    assert_state(group, path[-1])


@pytest.mark.parametrize("path, illegal", [
    pytest.param((), S.STABLE, id="testEmptyToStableIllegalTransition"),
    pytest.param((S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE), S.STABLE,
                 id="testStableToStableIllegalTransition"),
    pytest.param((), S.COMPLETING_REBALANCE, id="testEmptyToAwaitingRebalanceIllegalTransition"),
    pytest.param((S.PREPARING_REBALANCE,), S.PREPARING_REBALANCE,
                 id="testPreparingRebalanceToPreparingRebalanceIllegalTransition"),
    pytest.param((S.PREPARING_REBALANCE,), S.STABLE, id="testPreparingRebalanceToStableIllegalTransition"),
    pytest.param((S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE), S.COMPLETING_REBALANCE,
                 id="testAwaitingRebalanceToAwaitingRebalanceIllegalTransition"),
    pytest.param((S.PREPARING_REBALANCE, S.DEAD), S.STABLE, id="testDeadToStableIllegalTransition"),
    pytest.param((S.PREPARING_REBALANCE, S.DEAD), S.PREPARING_REBALANCE,
                 id="testDeadToPreparingRebalanceIllegalTransition"),
    pytest.param((S.PREPARING_REBALANCE, S.DEAD), S.COMPLETING_REBALANCE,
                 id="testDeadToAwaitingRebalanceIllegalTransition"),
])
def test_illegal_transitions(group, path, illegal):
    """Kafka's IllegalStateException is kgroup's typed IllegalStateTransition; the state is kept."""
    for state in path:
        group.transition_to(state)
    before = group.state
    with pytest.raises(IllegalStateTransition):
        group.transition_to(illegal)
    assert group.state is before


# -- protocols ----------------------------------------------------------------------------------------


def test_testSelectProtocol(group):
    group.add(member(protocols=(JoinGroupProtocol("range", b""), JoinGroupProtocol("roundrobin", b""))),
              protocol_type=PROTOCOL_TYPE)
    member2_protocols = (JoinGroupProtocol("roundrobin", b""), JoinGroupProtocol("range", b""))
    group.add(member("member2", protocols=member2_protocols))
    # No majority preference: either.
    assert group.select_protocol() in ("range", "roundrobin")
    group.add(member("member3", protocols=member2_protocols))
    assert group.select_protocol() == "roundrobin"


def test_testSelectProtocolChoosesCompatibleProtocol(group):
    group.add(member(protocols=(JoinGroupProtocol("range", b""), JoinGroupProtocol("roundrobin", b""))),
              protocol_type=PROTOCOL_TYPE)
    member2_protocols = (JoinGroupProtocol("roundrobin", b""), JoinGroupProtocol("foo", b""))
    group.add(member("member2", protocols=member2_protocols))
    assert group.select_protocol() == "roundrobin"


def test_testSupportsProtocols(group):
    # By default (no member) the group supports everything.
    assert group.supports_protocols(PROTOCOL_TYPE, ("range", "roundrobin"))
    group.add(member(protocols=(JoinGroupProtocol("range", b""), JoinGroupProtocol("roundrobin", b""))),
              protocol_type=PROTOCOL_TYPE)
    group.transition_to(S.PREPARING_REBALANCE)
    assert group.supports_protocols(PROTOCOL_TYPE, ("roundrobin", "foo"))
    assert group.supports_protocols(PROTOCOL_TYPE, ("range", "bar"))
    assert not group.supports_protocols(PROTOCOL_TYPE, ("foo", "bar"))


# -- subscribed topics --------------------------------------------------------------------------------


def test_testSubscribedTopics(group):
    assert group.subscribed_topics() is None  # a new group: not known
    group.transition_to(S.PREPARING_REBALANCE)
    group.add(member(protocols=subscribing("foo")), "join", protocol_type=PROTOCOL_TYPE)
    group.init_next_generation()
    assert group.subscribed_topics() == {"foo"}

    group.transition_to(S.PREPARING_REBALANCE)
    group.remove(MEMBER_ID)
    group.init_next_generation()
    assert group.subscribed_topics() == frozenset()

    # Metadata that is no ConsumerProtocol subscription: not known.
    group.transition_to(S.PREPARING_REBALANCE)
    group.add(member(protocols=(JoinGroupProtocol("range", b""),)), "join", protocol_type=PROTOCOL_TYPE)
    group.init_next_generation()
    assert group.subscribed_topics() is None


def test_testSubscribedTopicsNonConsumerGroup(group):
    assert group.subscribed_topics() is None
    group.transition_to(S.PREPARING_REBALANCE)
    group.add(member(protocols=(JoinGroupProtocol("range", b""),)), "join", protocol_type="My Protocol")
    group.init_next_generation()
    assert group.subscribed_topics() is None


def test_testIsSubscribedToTopic(group):
    # 1. No protocol type: not subscribed.
    assert not group.is_subscribed_to_topic("topic")
    # 2. Another protocol type: not subscribed.
    group.add(member("memberWithNonConsumerProtocol", protocols=subscribing("topic")), "join",
              protocol_type="My Protocol")
    group.transition_to(S.PREPARING_REBALANCE)
    group.init_next_generation()
    assert group.is_(S.COMPLETING_REBALANCE)
    assert group.subscribed_topics() is None and not group.is_subscribed_to_topic("topic")
    # 3. The consumer protocol, no members: not subscribed.  (Kafka's test swaps the protocol type of
    # its emptied group by adding a member of the other type; kgroup keeps the first member's type, so
    # this part starts a new group of type "consumer" that loses its only member.)
    group = Group(GROUP_ID)
    consumer = member("memberWithConsumerProtocol", protocols=subscribing("topic"))
    group.add(consumer, protocol_type=PROTOCOL_TYPE)
    group.remove(consumer.member_id)
    group.transition_to(S.PREPARING_REBALANCE)
    group.init_next_generation()
    assert group.is_(S.EMPTY)
    assert group.subscribed_topics() == frozenset() and group.uses_consumer_protocol()
    assert not group.is_subscribed_to_topic("topic")
    # 4. The consumer protocol with a member's subscription: subscribed.
    group.add(member("memberWithConsumerProtocol", protocols=subscribing("topic")), "join",
              protocol_type=PROTOCOL_TYPE)
    group.transition_to(S.PREPARING_REBALANCE)
    group.init_next_generation()
    assert group.is_(S.COMPLETING_REBALANCE)
    assert group.subscribed_topics() == {"topic"} and group.uses_consumer_protocol()
    assert group.is_subscribed_to_topic("topic")


# -- pending syncs ------------------------------------------------------------------------------------


def test_testCannotAddPendingSyncOfUnknownMember(group):
    """Kafka adds one pending-sync member at a time; kgroup's await_syncs owes a SyncGroup from every
    member of the new generation, so an unknown member can never be made to owe one: removing it is
    refused (the other half of Kafka's check) and nobody owes a sync."""
    group.await_syncs()
    assert not group.pending_sync_members
    with pytest.raises(GroupInvariantViolation):
        group.remove_pending_sync_member(MEMBER_ID)


# -- offset commit / delete and group delete validation -------------------------------------------


def _offset_handlers(group: Group) -> tuple[OffsetHandler, TransactionalOffsets]:
    groups = {group.group_id: group}

    def refuse_create(group_id: str) -> Group:
        raise AssertionError(f"group {group_id!r} created")

    pending = PendingOffsets()
    offsets = OffsetHandler(groups, refuse_create, lambda member, now_ms: None, lambda record: None,
                            pending=pending)
    txn = TransactionalOffsets(groups, refuse_create, {}, lambda record: None, pending, 4096)
    return offsets, txn


def _commit(handler: OffsetHandler, member_id: str, instance_id: Optional[str], generation_id: int,
            version: int) -> ErrorCode:
    commit = PartitionOffsetCommit(TopicPartition("foo", 0), OffsetAndMetadata(1))
    request = OffsetCommitRequest(GROUP_ID, (commit,), generation_id, member_id, instance_id, version)
    return handler.commit(request, 0).partitions[0].error_code


def _txn_commit(handler: TransactionalOffsets, member_id: str, instance_id: Optional[str],
                generation_id: int) -> ErrorCode:
    commit = PartitionOffsetCommit(TopicPartition("foo", 0), OffsetAndMetadata(1))
    request = TxnOffsetCommitRequest("txn", GROUP_ID, 1, 0, (commit,), generation_id, member_id, instance_id)
    return handler.commit(request).partitions[0].error_code


@pytest.mark.parametrize("version", range(0, 10))
def test_testValidateOffsetCommit(group, version):
    """ClassicGroup.validateOffsetCommit is kgroup's OffsetHandler (and TransactionalOffsets for
    isTransactional=true), given the same hand-made group; every OffsetCommit version answers alike."""
    offsets, txn = _offset_handlers(group)
    # The admin client, without any parameters.
    assert _commit(offsets, "", "", -1, version) is E.NONE
    group.add(Member(GROUP_ID, "member-id", "instance-id", "", "", 100, 100, ROUNDROBIN),
              protocol_type=PROTOCOL_TYPE)
    group.transition_to(S.PREPARING_REBALANCE)
    group.init_next_generation()
    # No parameters, and the group is not empty.
    assert _commit(offsets, "", "", -1, version) is E.UNKNOWN_MEMBER_ID
    # A transactional commit without any parameters is accepted in a non-empty group.
    assert _txn_commit(txn, "", None, -1) is E.NONE
    assert _commit(offsets, "unknown", "unknown", -1, version) is E.UNKNOWN_MEMBER_ID
    assert _commit(offsets, "member-id", "unknown", -1, version) is E.UNKNOWN_MEMBER_ID
    assert _commit(offsets, "member-id", "instance-id", 0, version) is E.ILLEGAL_GENERATION
    # CompletingRebalance (Kafka's comment says "prepare rebalance"; initNextGeneration completed it).
    assert _commit(offsets, "member-id", "instance-id", 1, version) is E.REBALANCE_IN_PROGRESS
    group.transition_to(S.STABLE)
    assert _commit(offsets, "member-id", "instance-id", 1, version) is E.NONE
    replacement = Member(GROUP_ID, "new-member-id", "instance-id", "", "", 100, 100, ROUNDROBIN)
    group.replace_static_member("instance-id", "member-id", replacement)
    assert _commit(offsets, "member-id", "instance-id", 1, version) is E.FENCED_INSTANCE_ID
    # Kafka removes "new-instance-id" (no such member: a no-op) and goes Dead with the member still in:
    # the Dead check comes first, whatever the members.
    group.remove("new-instance-id")
    group.transition_to(S.DEAD)
    assert _commit(offsets, "member-id", "new-instance-id", 1, version) is E.COORDINATOR_NOT_AVAILABLE


def _offset_delete(group: Group) -> ErrorCode:
    offsets, _ = _offset_handlers(group)
    return offsets.delete(OffsetDeleteRequest(GROUP_ID, (TopicPartition("foo", 0),))).error_code


def test_testValidateOffsetDelete(group):
    """ClassicGroup.validateOffsetDelete is the group check of kgroup's OffsetHandler.delete (the
    request's top-level error code)."""
    assert not group.uses_consumer_protocol()
    for state in (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE):
        group.transition_to(state)
        assert _offset_delete(group) is E.NON_EMPTY_GROUP
    group.add(member(instance_id="groupInstanceId"), protocol_type=PROTOCOL_TYPE)
    assert group.uses_consumer_protocol()
    for state in (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE, S.PREPARING_REBALANCE, S.EMPTY):
        group.transition_to(state)
        assert _offset_delete(group) is E.NONE
    group.transition_to(S.DEAD)
    assert _offset_delete(group) is E.GROUP_ID_NOT_FOUND


def test_testValidateDeleteGroup(group):
    """ClassicGroup.validateDeleteGroup is the group check of kgroup's AdminHandler.delete.  The Empty
    group's check passes, so kgroup deletes it (Dead) where Kafka's test transitions it by hand."""
    admin = AdminHandler({GROUP_ID: group}, lambda g: None, lambda record: None)

    def delete() -> ErrorCode:
        return admin.delete(DeleteGroupsRequest((GROUP_ID,))).results[0].error_code

    for state in (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE):
        group.transition_to(state)
        assert delete() is E.NON_EMPTY_GROUP
    group.transition_to(S.PREPARING_REBALANCE)
    group.transition_to(S.EMPTY)
    assert delete() is E.NONE
    assert group.is_(S.DEAD)
    assert delete() is E.GROUP_ID_NOT_FOUND


def test_testIsInStates(group):
    """ClassicGroup.isInStates is ListGroups' state filter (kgroup's AdminHandler.list).  Kafka's
    GroupMetadataManager.listGroups lower-cases the filter before asking isInStates, so on the wire
    "PreparingRebalance" matches too (KIP-518: case-insensitive); Kafka's unit-level false for the
    mixed-case name is not reachable through the request.  A Dead group is a deleted one, listed by
    neither Kafka nor kgroup."""
    admin = AdminHandler({GROUP_ID: group}, lambda g: None, lambda record: None)

    def listed(*states: str) -> bool:
        return [g.group_id for g in admin.list(ListGroupsRequest(states)).groups] == [GROUP_ID]

    assert listed("empty")
    group.transition_to(S.PREPARING_REBALANCE)
    assert listed("preparingrebalance")
    assert listed("PreparingRebalance")
    group.transition_to(S.COMPLETING_REBALANCE)
    assert listed("completingrebalance")
    group.transition_to(S.STABLE)
    assert listed("stable")
    assert not listed("empty")
    group.transition_to(S.DEAD)
    assert not listed("dead", " ")


# -- completing every parked request ------------------------------------------------------------------


def test_testCompleteAllJoinFutures():
    """ClassicGroup.completeAllJoinFutures answers every parked JoinGroup; kgroup's coordinator does it
    when it resigns (ClassicGroupManager.resign, Kafka's onUnloaded), with the code it is given.  The
    three members are parked by JoinGroup v3 requests waiting out the initial delay."""
    ctx = Ctx()
    keys = [ctx.join(api_version=3) for _ in range(3)]
    assert all(ctx.result(k) is None for k in keys)
    group = ctx.group()
    assert group.num_awaiting_join == 3
    member_ids = list(group.members)
    answers = {d.request_key: d.response for d in ctx.coordinator.resign(E.REBALANCE_IN_PROGRESS).deliveries}
    assert [answers[k] for k in keys] == [JoinGroupResponse(E.REBALANCE_IN_PROGRESS, member_id=m)
                                          for m in member_ids]
    assert all(group.members[m].join_key is None for m in member_ids)
    assert group.num_awaiting_join == 0


def test_testCompleteAllSyncFutures():
    """ClassicGroup.completeAllSyncFutures, reached as above: three members complete a join and the
    followers' SyncGroups wait for the leader's.  (Kafka parks all three by hand; a leader's SyncGroup
    never waits in kgroup, so two are parked.)"""
    ctx = Ctx()
    joined = ctx.join_with_n_members(3)
    leader = joined[0].leader
    followers = [r.member_id for r in joined if r.member_id != leader]
    keys = [ctx.sync(m, joined[0].generation_id) for m in followers]
    assert all(ctx.result(k) is None for k in keys)
    group = ctx.group()
    answers = {d.request_key: d.response for d in ctx.coordinator.resign(E.REBALANCE_IN_PROGRESS).deliveries}
    assert [answers[k] for k in keys] == [SyncGroupResponse(E.REBALANCE_IN_PROGRESS)] * 2
    assert all(group.members[m].sync_key is None for m in followers)


# -- a consumer group becomes a classic group ----------------------------------------------------------


def test_testFromConsumerGroupWithoutJoiningMember():
    """ClassicGroup.fromConsumerGroup is kgroup's migration.classic_group_from_consumer: member 2 (a
    consumer-protocol member) leaves, member 1 (a classic-protocol member) stays with its target
    assignment, the group is Stable at the group epoch with the voted protocol."""
    foo0, foo1 = TopicPartition("foo", 0), TopicPartition("foo", 1)
    protocols1 = range_protocol(foo0)
    consumer_group = ConsumerGroup("group-id", lambda record: None)
    consumer_group.set_epochs(10, {"foo": 2})
    consumer_group.set_target_assignment(10, {"member-1": frozenset({foo0}), "member-2": frozenset({foo1})})
    consumer_group.update_member(ConsumerGroupMember(
        "member-1", member_epoch=10, previous_member_epoch=9, state=MemberState.STABLE, client_id="client-id",
        client_host="client-host", subscribed_topic_names=("foo",), server_assignor="range",
        rebalance_timeout_ms=45_000, assigned_partitions=frozenset({foo0}),
        classic_member_metadata=ClassicMemberMetadata(5_000, protocols1)))
    consumer_group.update_member(ConsumerGroupMember(
        "member-2", instance_id="instance-id-2", member_epoch=10, previous_member_epoch=9,
        state=MemberState.STABLE, client_id="client-id", client_host="client-host",
        subscribed_topic_names=("foo",), server_assignor="range", rebalance_timeout_ms=45_000,
        assigned_partitions=frozenset({foo1})))

    header, members = classic_group_from_consumer(consumer_group, "member-2")

    assert (header.group_id, header.state, header.generation_id) == ("group-id", "Stable", 10)
    assert (header.protocol_type, header.protocol_name, header.leader_id) == ("consumer", "range", "member-1")
    assert [m.member_id for m in members] == ["member-1"]
    (member1,) = members
    assert (member1.group_instance_id, member1.client_id, member1.client_host) == (
        None, "client-id", "client-host")
    assert (member1.rebalance_timeout_ms, member1.session_timeout_ms) == (45_000, 5_000)
    assert member1.protocols == protocols1
    assert decode_assignment(member1.assignment) == Assignment((foo0,))


def test_testFromConsumerGroupWithJoiningMember():
    """Kafka converts with the joining member (a classic-protocol static member replacing member 2,
    the last consumer-protocol member) passed alongside; kgroup's ConsumerGroupManager first replaces
    the static member in the consumer group (its target assignment moves to the new id) and then
    converts with no member leaving (consumer_group/classic_members.py).  The classic group is the same:
    member 1 and the new member 2, each with its target assignment, Stable at epoch 10."""
    foo0, foo1 = TopicPartition("foo", 0), TopicPartition("foo", 1)

    consumer_group = ConsumerGroup("group-id", lambda record: None)
    consumer_group.set_epochs(10, {"foo": 2})
    target = {"member-1": frozenset({foo0}), "new-member-2": frozenset({foo1})}
    consumer_group.set_target_assignment(10, target)
    common = dict(member_epoch=10, state=MemberState.STABLE, client_id="client-id", client_host="client-host",
                  subscribed_topic_names=("foo",), server_assignor="range", rebalance_timeout_ms=45_000)
    consumer_group.update_member(ConsumerGroupMember(
        "member-1", previous_member_epoch=9, assigned_partitions=frozenset({foo0}),
        classic_member_metadata=ClassicMemberMetadata(5_000, range_protocol(foo0)), **common))
    consumer_group.update_member(ConsumerGroupMember(
        "new-member-2", instance_id="instance-id-2", previous_member_epoch=0,
        assigned_partitions=frozenset({foo1}),
        classic_member_metadata=ClassicMemberMetadata(5_000, range_protocol(foo1)), **common))

    header, members = classic_group_from_consumer(consumer_group, None)

    assert (header.group_id, header.state, header.generation_id) == ("group-id", "Stable", 10)
    assert (header.protocol_type, header.protocol_name, header.leader_id) == ("consumer", "range", "member-1")
    by_id = {m.member_id: m for m in members}
    assert set(by_id) == {"member-1", "new-member-2"}
    expected = (("member-1", None, foo0), ("new-member-2", "instance-id-2", foo1))
    for member_id, instance_id, partition in expected:
        record = by_id[member_id]
        assert (record.group_instance_id, record.client_id, record.client_host) == (
            instance_id, "client-id", "client-host")
        assert (record.rebalance_timeout_ms, record.session_timeout_ms) == (45_000, 5_000)
        assert record.protocols == range_protocol(partition)
        assert decode_assignment(record.assignment) == Assignment((partition,))
