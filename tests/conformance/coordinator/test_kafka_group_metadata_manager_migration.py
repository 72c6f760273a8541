"""Online migration between classic and consumer groups, ported from Kafka's GroupMetadataManagerTest
(group-coordinator, org.apache.kafka.coordinator.group; apache/kafka at 1eb7644349c, the 4.0 line).

Each test names the Kafka test it ports.  Kafka's tests build a group by replaying records; so do these
(``Ctx(records=...)``).  Kafka's records are per field (subscription, current assignment, target, epochs)
where kgroup's are merged (one member record, one header), so record lists are compared by what they
mean: the conversion's records are checked by kind and order where Kafka's order matters, and every test
that writes records replays them (``ctx.assert_replays()``): a coordinator that takes over the offsets
partition rebuilds the same groups, which is what Kafka's record assertions guard.

Deliberate departure (docs/coordinator.md, "Online migration"): a downgraded classic group writes its
header after the rebalance it starts (PreparingRebalance), where Kafka writes it Stable first; both
replay to a classic group whose members must rejoin.
"""
from __future__ import annotations

from typing import Iterable, Optional

import pytest

from kgroup.core.consumer_group.member_timers import (
    classic_join_timer_key, classic_sync_timer_key, session_timer_key,
)
from kgroup.core.consumer_group.member import ClassicMemberMetadata, ConsumerGroupMember, MemberState
from kgroup.core.consumer_group.records import (
    ConsumerGroupMemberRecord, ConsumerGroupMemberTombstone, ConsumerGroupMetadataRecord,
    ConsumerGroupTargetAssignmentRecord,
)
from kgroup.core.consumer_group_messages import (
    LEAVE_GROUP_MEMBER_EPOCH, MEMBER_TYPE_CLASSIC, MEMBER_TYPE_CONSUMER, ConsumerGroupDescribeRequest,
)
from kgroup.core.coordinator import GroupMetadataRecord, MemberMetadataRecord
from kgroup.core.coordinator_common.config import ConsumerGroupMigrationPolicy as Policy
from kgroup.core.messages import (
    HeartbeatRequest, JoinGroupProtocol, LeaveGroupRequest, MemberIdentity, SyncGroupRequest,
)
from kgroup.values import Assignment, Subscription, TopicPartition
from kgroup.wire.consumer_protocol import decode_assignment, encode_assignment, encode_subscription

from coordinator_kafka_gmm_harness import GROUP, Ctx, E, MockPartitionAssignor, S

CONSUMER = "consumer"


def tps(spec: dict[str, Iterable[int]]) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(topic, p) for topic, parts in spec.items() for p in parts)


def subscription(topics: Iterable[str], owned: Iterable[TopicPartition] = (), version: int = 3) -> bytes:
    return encode_subscription(Subscription(tuple(topics), owned_partitions=tuple(sorted(owned))), version)


def assignment(partitions: Iterable[TopicPartition], version: int = 3) -> bytes:
    return encode_assignment(Assignment(tuple(sorted(partitions))), version)


def range_protocols(topics: Iterable[str], owned: Iterable[TopicPartition] = (),
                    version: int = 3) -> tuple[JoinGroupProtocol, ...]:
    return (JoinGroupProtocol("range", subscription(topics, owned, version)),)


def classic_member(member_id: str, protocols: tuple[JoinGroupProtocol, ...], *, session_ms: int = 5000,
                   **fields) -> ConsumerGroupMember:
    """A consumer group member of the classic protocol (Kafka's Builder.setClassicMemberMetadata)."""
    return ConsumerGroupMember(member_id, classic_member_metadata=ClassicMemberMetadata(session_ms,
                                                                                        protocols),
                               **fields)


def consumer_group_records(group_id: str, epoch: int, members: Iterable[ConsumerGroupMember],
                           targets: dict, *, assignment_epoch: Optional[int] = None,
                           metadata: Optional[dict[str, int]] = None) -> list:
    """Kafka's ConsumerGroupBuilder(...).withMember(...).withAssignment(...).build() records."""
    header = ConsumerGroupMetadataRecord(group_id, epoch,
                                         epoch if assignment_epoch is None else assignment_epoch,
                                         tuple(sorted((metadata or {}).items())))
    return ([header] + [ConsumerGroupMemberRecord(group_id, m) for m in members]
            + [ConsumerGroupTargetAssignmentRecord(group_id, mid, frozenset(p)) for mid,
               p in targets.items()])


def classic_group_records(group_id: str, state: S, generation: int, members: list[MemberMetadataRecord],
                          *, protocol_type: Optional[str] = CONSUMER,
                          protocol_name: Optional[str] = "range") -> list:
    """A classic group as Kafka's tests replay it (newGroupMetadataRecord)."""
    leader = members[0].member_id if members else None
    header = GroupMetadataRecord(group_id=group_id, state=state.value, generation_id=generation,
                                 protocol_type=protocol_type,
                                 protocol_name=protocol_name if members else None,
                                 leader_id=leader)
    return [header, *members]


def classic_member_record(member_id: str, protocols, member_assignment: bytes, *, instance_id=None,
                          session_ms: int = 5000, rebalance_ms: int = 10_000,
                          group_id: str = GROUP) -> MemberMetadataRecord:
    return MemberMetadataRecord(group_id=group_id, member_id=member_id, group_instance_id=instance_id,
                                client_id="client-id", client_host="client-host",
                                session_timeout_ms=session_ms,
                                rebalance_timeout_ms=rebalance_ms, protocols=protocols,
                                assignment=member_assignment)


def new_records(ctx: Ctx, before: int) -> list:
    return ctx.records[before:]


# -- upgrade: classic -> consumer ---------------------------------------------------------


def test_consumer_group_heartbeat_with_non_empty_classic_group():
    """testConsumerGroupHeartbeatWithNonEmptyClassicGroup: a classic group that is not Empty and does not
    use the consumer embedded protocol is not upgraded: GROUP_ID_NOT_FOUND."""
    records = classic_group_records(GROUP, S.PREPARING_REBALANCE, 0, [], protocol_type=None)
    ctx = Ctx(records=records, topics={"foo": 1, "bar": 1})
    response = ctx.consumer_heartbeat(member_id="m", member_epoch=0, rebalance_timeout_ms=5000,
                                      subscribed_topic_names=("foo", "bar"), topic_partitions=())
    assert response.error_code is E.GROUP_ID_NOT_FOUND
    assert ctx.state() is S.PREPARING_REBALANCE and ctx.consumer_group() is None


def test_consumer_group_heartbeat_with_empty_classic_group():
    """testConsumerGroupHeartbeatWithEmptyClassicGroup: an Empty classic group's id becomes a consumer
    group's; the member joins at epoch 2 (Kafka 4.4 creates the consumer group at epoch 1: KAFKA-20268)."""
    ctx = Ctx(records=classic_group_records(GROUP, S.EMPTY, 0, []), topics={"foo": 1, "bar": 1})
    response = ctx.consumer_heartbeat(member_id="m", member_epoch=0, rebalance_timeout_ms=5000,
                                      subscribed_topic_names=("foo", "bar"), topic_partitions=())
    assert (response.error_code, response.member_epoch) == (E.NONE, 2)
    member = ctx.consumer_group().members["m"]
    assert (member.state, member.member_epoch, member.previous_member_epoch) == (MemberState.STABLE, 2, 0)
    assert ctx.state() is None
    ctx.assert_replays()


def test_classic_group_join_with_empty_consumer_group():
    """testClassicGroupJoinWithEmptyConsumerGroup: an empty consumer group's id becomes a classic group's."""
    ctx = Ctx(records=consumer_group_records(GROUP, 10, [], {}))
    response = ctx.call(ctx.join_request(protocols=range_protocols(["foo"])))
    assert response.error_code is E.MEMBER_ID_REQUIRED
    assert ctx.consumer_group() is None and ctx.state() is S.EMPTY


def _stable_classic_group(policy: Policy = Policy.UPGRADE, **ctx_fields) -> tuple[Ctx, bytes]:
    """testConsumerGroupHeartbeatWithStableClassicGroup's set-up: a Stable classic group (generation 0)
    with member-id-1 owning foo-0 and bar-0; the assignor will give foo-0 to member 1, bar-0 to member 2."""
    protocols = range_protocols(["foo", "bar"], owned=tps({"foo": [0], "bar": [0]}))
    member1 = classic_member_record("member-id-1", protocols, assignment(tps({"foo": [0], "bar": [0]})),
                                    session_ms=5000, rebalance_ms=10_000)
    assignor = MockPartitionAssignor("range")
    assignor.prepare({"member-id-1": tps({"foo": [0]}), "member-id-2": tps({"bar": [0]})})
    ctx = Ctx(records=classic_group_records(GROUP, S.STABLE, 0, [member1]), topics={"foo": 1, "bar": 1},
              migration_policy=policy, assignor=assignor, **ctx_fields)
    return ctx, protocols[0].metadata


def test_consumer_group_heartbeat_with_stable_classic_group():
    """testConsumerGroupHeartbeatWithStableClassicGroup: the first ConsumerGroupHeartbeat converts the
    Stable classic group.  Member 1 keeps its last assignment at epoch 0 (it is asked to rejoin through its
    heartbeat), the new member 2 is at epoch 1 waiting for bar-0, and member 1's session keeps its classic
    session timeout."""
    ctx, _ = _stable_classic_group()
    before = len(ctx.records)
    response = ctx.consumer_heartbeat(member_id="member-id-2", member_epoch=0, rebalance_timeout_ms=5000,
                                      server_assignor="range", subscribed_topic_names=("foo", "bar"),
                                      topic_partitions=())
    assert (response.error_code, response.member_epoch, response.assignment) == (E.NONE, 1, ())
    group = ctx.consumer_group()
    assert ctx.state() is None and group is not None
    member1, member2 = group.members["member-id-1"], group.members["member-id-2"]
    assert (member1.member_epoch, member1.previous_member_epoch, member1.state) == (0, 0, MemberState.STABLE)
    assert member1.assigned_partitions == tps({"foo": [0], "bar": [0]})
    assert member1.classic_member_metadata.session_timeout_ms == 5000
    assert member1.rebalance_timeout_ms == 10_000
    assert (member1.client_id, member1.client_host) == ("client-id", "client-host")
    assert member1.subscribed_topic_names == ("bar", "foo")
    assert (member2.member_epoch, member2.state) == (1, MemberState.UNRELEASED_PARTITIONS)
    assert group.target_assignment == {"member-id-1": tps({"foo": [0]}), "member-id-2": tps({"bar": [0]})}
    assert (group.group_epoch, group.assignment_epoch) == (1, 1)
    # The conversion's records come first: the group as converted (epoch 0, member 1 and its target), then
    # member 2's join (its member record, the epoch bump with the computed subscription metadata, targets).
    written = new_records(ctx, before)
    assert written[0] == ConsumerGroupMetadataRecord(GROUP, 0, 0, ())
    assert written[1] == ConsumerGroupMemberRecord(GROUP, ctx.assert_replays().consumer_group(GROUP)
                                                   .members["member-id-1"])
    assert written[2] == ConsumerGroupTargetAssignmentRecord(GROUP, "member-id-1", tps({"foo": [0],
                                                                                        "bar": [0]}))
    assert ConsumerGroupMetadataRecord(GROUP, 1, 0, (("bar", 1), ("foo", 1))) in written[3:]
    assert ctx.timer_deadline(session_timer_key(GROUP, "member-id-1")) == ctx.now_ms + 5000
    assert ctx.timer_deadline(session_timer_key(GROUP, "member-id-2")) == ctx.now_ms + 45_000


def test_upgrade_refused_when_the_policy_does_not_allow_it():
    """validateOnlineUpgrade: with the policy disabled (or downgrade only) the classic group stays."""
    for policy in (Policy.DISABLED, Policy.DOWNGRADE):
        ctx, _ = _stable_classic_group(policy)
        response = ctx.consumer_heartbeat(member_id="member-id-2", member_epoch=0, rebalance_timeout_ms=5000,
                                          subscribed_topic_names=("foo",), topic_partitions=())
        assert response.error_code is E.GROUP_ID_NOT_FOUND
        assert ctx.state() is S.STABLE and ctx.consumer_group() is None and ctx.records == ctx.records[:2]


def test_upgrade_refused_when_the_classic_group_is_larger_than_the_consumer_group_max_size():
    """validateOnlineUpgrade: numMembers > consumerGroupMaxSize refuses the upgrade."""
    protocols = range_protocols(["foo"])
    members = [classic_member_record("a", protocols, assignment(tps({"foo": [0]}))),
               classic_member_record("b", protocols, assignment(()))]
    ctx = Ctx(records=classic_group_records(GROUP, S.STABLE, 1, members), topics={"foo": 1},
              consumer_max_size=1)
    response = ctx.consumer_heartbeat(member_id="c", member_epoch=0, rebalance_timeout_ms=5000,
                                      subscribed_topic_names=("foo",), topic_partitions=())
    assert response.error_code is E.GROUP_ID_NOT_FOUND
    assert ctx.state() is S.STABLE and ctx.consumer_group() is None and len(ctx.records) == 3


def test_a_heartbeat_refused_after_the_conversion_leaves_the_classic_group():
    """The group fits but the joining member would not (throwIfConsumerGroupIsFull): refused, nothing
    converted or written."""
    ctx, _ = _stable_classic_group(consumer_max_size=1)
    ctx_records = list(ctx.records)
    response = ctx.consumer_heartbeat(member_id="member-id-2", member_epoch=0, rebalance_timeout_ms=5000,
                                      subscribed_topic_names=("foo",), topic_partitions=())
    assert response.error_code is E.GROUP_MAX_SIZE_REACHED
    assert ctx.state() is S.STABLE and ctx.consumer_group() is None and ctx.records == ctx_records


def test_upgrade_refused_when_the_embedded_protocol_is_malformed():
    """convertToConsumerGroup: ConsumerProtocol bytes that do not parse refuse the upgrade."""
    member = classic_member_record("m1", (JoinGroupProtocol("range", b"\x00"),), b"")
    ctx = Ctx(records=classic_group_records(GROUP, S.STABLE, 1, [member]), topics={"foo": 1})
    response = ctx.consumer_heartbeat(member_id="m2", member_epoch=0, rebalance_timeout_ms=5000,
                                      subscribed_topic_names=("foo",), topic_partitions=())
    assert response.error_code is E.GROUP_ID_NOT_FOUND and ctx.state() is S.STABLE


def test_a_refused_heartbeat_leaves_the_classic_group_as_it_was():
    """Kafka's rollback in testConsumerGroupHeartbeatWithStableClassicGroup: if the converting heartbeat
    fails (here the assignor throws), the group is still the classic one and nothing is written."""
    ctx, _ = _stable_classic_group()

    def failing(members, partitions_per_topic):
        raise RuntimeError("assignor failure")

    ctx.assignor.assign = failing
    before = list(ctx.records)
    response = ctx.consumer_heartbeat(member_id="member-id-2", member_epoch=0, rebalance_timeout_ms=5000,
                                      subscribed_topic_names=("foo",), topic_partitions=())
    assert response.error_code is E.UNKNOWN_SERVER_ERROR
    assert ctx.state() is S.STABLE and ctx.consumer_group() is None and ctx.records == before
    assert set(ctx.group().members) == {"member-id-1"}


def test_consumer_group_heartbeat_to_classic_group_from_existing_static_member():
    """testConsumerGroupHeartbeatToClassicGroupFromExistingStaticMember: a classic group's static member
    restarts with the consumer protocol: the group converts, the new incarnation replaces the classic one
    at once, takes its assignment and drops its classic metadata."""
    protocols = range_protocols(["foo"], owned=tps({"foo": [0]}))
    member = classic_member_record("member-id", protocols, assignment(tps({"foo": [0]})),
                                   instance_id="instance-id")
    assignor = MockPartitionAssignor("range")
    ctx = Ctx(records=classic_group_records(GROUP, S.STABLE, 0, [member]), topics={"foo": 1},
              migration_policy=Policy.UPGRADE, assignor=assignor)
    assignor.prepare({"new-id": tps({"foo": [0]})})
    response = ctx.consumer_heartbeat(member_id="new-id", member_epoch=0, instance_id="instance-id",
                                      rebalance_timeout_ms=5000, server_assignor="range",
                                      subscribed_topic_names=("foo",), topic_partitions=())
    assert (response.error_code, response.member_epoch) == (E.NONE, 1)
    assert frozenset(response.assignment) == tps({"foo": [0]})
    group = ctx.consumer_group()
    assert set(group.members) == {"new-id"}
    new = group.members["new-id"]
    assert (new.instance_id, new.state, new.classic_member_metadata) == ("instance-id", MemberState.STABLE,
                                                                         None)
    assert ctx.timer_deadline(session_timer_key(GROUP, "new-id")) == ctx.now_ms + 45_000
    assert ctx.timer_deadline(session_timer_key(GROUP, "member-id")) is None
    ctx.assert_replays()


def test_consumer_group_heartbeat_from_existing_classic_static_member():
    """testConsumerGroupHeartbeatFromExistingClassicStaticMember: in a consumer group, a classic static
    member's instance is taken over by a consumer-protocol member without leaving first (a consumer-protocol
    static member would be UNRELEASED_INSTANCE_ID)."""
    protocols = range_protocols(["foo"])
    classic = classic_member("m1", protocols, instance_id="i1", member_epoch=10, previous_member_epoch=9,
                             subscribed_topic_names=("foo",), rebalance_timeout_ms=5000,
                             assigned_partitions=tps({"foo": [0]}))
    modern = ConsumerGroupMember("m2", instance_id="i2", member_epoch=10, previous_member_epoch=9,
                                 subscribed_topic_names=("foo",), rebalance_timeout_ms=5000,
                                 assigned_partitions=tps({"foo": [1]}))
    targets = {"m1": tps({"foo": [0]}), "m2": tps({"foo": [1]})}
    records = consumer_group_records(GROUP, 10, [classic, modern], targets, metadata={"foo": 2})
    ctx = Ctx(records=records, topics={"foo": 2})
    ctx.assignor.prepare({"m3": tps({"foo": [0]}), "m2": tps({"foo": [1]})})
    response = ctx.consumer_heartbeat(member_id="m3", member_epoch=0, instance_id="i1",
                                      rebalance_timeout_ms=5000,
                                      subscribed_topic_names=("foo",), topic_partitions=())
    assert response.error_code is E.NONE
    group = ctx.consumer_group()
    assert set(group.members) == {"m2", "m3"} and not group.members["m3"].uses_classic_protocol
    assert group.members["m3"].assigned_partitions == tps({"foo": [0]})
    again = ctx.consumer_heartbeat(member_id="m4", member_epoch=0, instance_id="i2",
                                   rebalance_timeout_ms=5000,
                                   subscribed_topic_names=("foo",), topic_partitions=())
    assert again.error_code is E.UNRELEASED_INSTANCE_ID
    ctx.assert_replays()


def test_consumer_group_heartbeat_with_preparing_rebalance_classic_group():
    """testConsumerGroupHeartbeatWithPreparingRebalanceClassicGroup: the classic members' parked JoinGroups
    are answered REBALANCE_IN_PROGRESS when the group converts, so they rejoin the consumer group."""
    ctx = Ctx(topics={"foo": 2}, migration_policy=Policy.UPGRADE)
    protocols = range_protocols(["foo"])
    leader = ctx.join_dynamic_and_complete_rebalance(protocols=protocols, rebalance_ms=10_000,
                                                     session_ms=5000)
    # A new member's JoinGroup waits for the leader to rejoin.
    parked = ctx.join(api_version=3, protocols=protocols, rebalance_ms=10_000, session_ms=5000)
    assert ctx.result(parked) is None and ctx.state() is S.PREPARING_REBALANCE
    response = ctx.consumer_heartbeat(member_id="m2", member_epoch=0, rebalance_timeout_ms=5000,
                                      subscribed_topic_names=("foo",), topic_partitions=())
    assert response.error_code is E.NONE
    assert ctx.result(parked).error_code is E.REBALANCE_IN_PROGRESS
    assert ctx.state() is None and leader.member_id in ctx.consumer_group().members
    assert len(ctx.consumer_group().members) == 3
    ctx.assert_replays()


def test_consumer_group_heartbeat_with_completing_rebalance_classic_group():
    """testConsumerGroupHeartbeatWithCompletingRebalanceClassicGroup: a parked SyncGroup is answered
    REBALANCE_IN_PROGRESS when the group converts."""
    ctx = Ctx(topics={"foo": 2}, migration_policy=Policy.UPGRADE)
    protocols = range_protocols(["foo"])
    first = ctx.join_dynamic_and_complete_rebalance(protocols=protocols, rebalance_ms=10_000, session_ms=5000)
    assert ctx.result(ctx.sync(first.member_id, 1, assignments={first.member_id: assignment(
        tps({"foo": [0, 1]}))})).error_code is E.NONE
    follower_key = ctx.join(api_version=3, protocols=protocols, rebalance_ms=10_000, session_ms=5000)
    leader_key = ctx.join(member_id=first.member_id, protocols=protocols, rebalance_ms=10_000,
                          session_ms=5000)
    follower = ctx.result(follower_key)
    assert follower.error_code is E.NONE and ctx.result(leader_key).error_code is E.NONE
    assert ctx.state() is S.COMPLETING_REBALANCE
    parked_sync = ctx.sync(follower.member_id, follower.generation_id)
    assert ctx.result(parked_sync) is None
    response = ctx.consumer_heartbeat(member_id="m3", member_epoch=0, rebalance_timeout_ms=5000,
                                      subscribed_topic_names=("foo",), topic_partitions=())
    assert response.error_code is E.NONE
    assert ctx.result(parked_sync).error_code is E.REBALANCE_IN_PROGRESS
    assert ctx.state() is None
    assert set(ctx.consumer_group().members) == {first.member_id, follower.member_id, "m3"}
    ctx.assert_replays()


# -- downgrade: consumer -> classic -------------------------------------------------------


def _mixed_consumer_group(policy: Policy = Policy.DOWNGRADE, **ctx_fields) -> tuple[Ctx, tuple]:
    """testLastConsumerProtocolMemberLeavingConsumerGroup's set-up: member 1 (classic protocol) owns
    foo-0..2 and bar-0..1, member 2 (consumer protocol) owns foo-3..5 and bar-2; group epoch 10."""
    protocols = range_protocols(["foo", "bar"], owned=tps({"foo": [0, 1, 2], "bar": [0, 1]}))
    member1 = classic_member("m1", protocols, member_epoch=10, previous_member_epoch=9,
                             subscribed_topic_names=("foo", "bar"), server_assignor="range",
                             rebalance_timeout_ms=45_000, assigned_partitions=tps({"foo": [0, 1, 2],
                                                                                   "bar": [0, 1]}))
    member2 = ConsumerGroupMember("m2", member_epoch=10, previous_member_epoch=9,
                                  subscribed_topic_names=("foo", "bar"), server_assignor="range",
                                  rebalance_timeout_ms=45_000, assigned_partitions=tps({"foo": [3, 4, 5],
                                                                                        "bar": [2]}))
    records = consumer_group_records(GROUP, 10, [member1, member2],
                                     {"m1": member1.assigned_partitions, "m2": member2.assigned_partitions},
                                     metadata={"foo": 6, "bar": 3})
    ctx = Ctx(records=records, topics={"foo": 6, "bar": 3}, migration_policy=policy, **ctx_fields)
    return ctx, protocols


def _assert_downgraded(ctx: Ctx, before: int, protocols) -> None:
    """The consumer group is gone (its members' tombstones first), a classic group of member 1 holding its
    target as its assignment rebalances, with a session for member 1 and a join deadline."""
    assert ctx.consumer_group() is None
    group = ctx.group()
    assert ctx.state() is S.PREPARING_REBALANCE
    assert group.generation_id == 10 and group.protocol_type == CONSUMER and group.protocol_name == "range"
    (member,) = group.members.values()
    assert member.member_id == "m1" and member.protocols == protocols
    assert (member.session_timeout_ms, member.rebalance_timeout_ms) == (5000, 45_000)
    expected = tuple(sorted(tps({"foo": [0, 1, 2], "bar": [0, 1]})))
    assert decode_assignment(member.assignment).partitions == expected
    written = new_records(ctx, before)
    assert set(written[:2]) == {ConsumerGroupMemberTombstone(GROUP, "m1"),
                                ConsumerGroupMemberTombstone(GROUP, "m2")}
    assert isinstance(written[2], GroupMetadataRecord) and written[2].generation_id == 10
    assert ctx.coordinator.session_deadline_ms(GROUP, "m1") == ctx.now_ms + 5000
    assert ctx.timer_deadline(group.join_key) is not None
    ctx.assert_replays()


def test_last_consumer_protocol_member_leaving_consumer_group():
    """testLastConsumerProtocolMemberLeavingConsumerGroup: the last consumer-protocol member leaves, the
    group becomes classic and rebalances."""
    ctx, protocols = _mixed_consumer_group()
    before = len(ctx.records)
    response = ctx.consumer_heartbeat(member_id="m2", member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                      rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"),
                                      topic_partitions=())
    assert (response.error_code, response.member_epoch) == (E.NONE, LEAVE_GROUP_MEMBER_EPOCH)
    _assert_downgraded(ctx, before, protocols)


def test_last_consumer_protocol_member_session_timeout_in_consumer_group():
    """testLastConsumerProtocolMemberSessionTimeoutInConsumerGroup: the same through a session expiry."""
    ctx, protocols = _mixed_consumer_group()
    for _ in range(11):  # the classic member heartbeats within its 5 s session up to t = 44 s
        ctx.sleep(4000)
        assert ctx.heartbeat("m1", 10) is E.NONE
    before = len(ctx.records)
    ctx.sleep(4000)  # t = 48 s: member 2's 45 s session (from t = 0) has expired
    _assert_downgraded_after_timer(ctx, before, protocols)


def _assert_downgraded_after_timer(ctx: Ctx, before: int, protocols) -> None:
    assert ctx.consumer_group() is None and ctx.state() is S.PREPARING_REBALANCE
    (member,) = ctx.group().members.values()
    assert member.member_id == "m1" and member.protocols == protocols
    ctx.assert_replays()


def test_last_consumer_protocol_member_rebalance_timeout_in_consumer_group():
    """testLastConsumerProtocolMemberRebalanceTimeoutInConsumerGroup: member 2 must revoke foo-3 for the
    new target; it does not within its rebalance timeout, is fenced, and the group downgrades."""
    ctx, protocols = _mixed_consumer_group()
    ctx.assignor.prepare({"m1": tps({"foo": [0, 1, 2, 3], "bar": [0, 1]}), "m2": tps({"foo": [4, 5],
                                                                                      "bar": [2]})})
    # Member 2 changes its subscription (bumps the epoch) and is asked to revoke foo-3.
    response = ctx.consumer_heartbeat(member_id="m2", member_epoch=10, rebalance_timeout_ms=5000,
                                      subscribed_topic_names=("foo", "bar", "baz"),
                                      topic_partitions=tuple(sorted(tps({"foo": [3, 4, 5], "bar": [2]}))))
    assert response.error_code is E.NONE
    assert ctx.consumer_group().members["m2"].state is MemberState.UNREVOKED_PARTITIONS
    ctx.sleep(4000)
    assert ctx.heartbeat("m1", 10) is E.REBALANCE_IN_PROGRESS  # m1's 5 s session now ends at t = 9 s
    before = len(ctx.records)
    ctx.sleep(1000)  # t = 5 s: member 2's rebalance timeout
    _assert_downgraded_after_timer(ctx, before, protocols)


def test_last_static_consumer_protocol_member_replaced_by_classic_protocol_member():
    """testLastStaticConsumerProtocolMemberReplacedByClassicProtocolMember: a classic static member takes
    over the instance of the last consumer-protocol member: the group becomes classic at once, Stable at
    the group epoch, the new member holding the replaced one's assignment; it syncs it with the classic
    group."""
    protocols1 = range_protocols(["foo", "bar"], owned=tps({"foo": [0, 1, 2], "bar": [0]}))
    member1 = classic_member("m1", protocols1, member_epoch=10, previous_member_epoch=9,
                             subscribed_topic_names=("foo", "bar"), server_assignor="range",
                             rebalance_timeout_ms=45_000, assigned_partitions=tps({"foo": [0, 1, 2],
                                                                                   "bar": [0]}))
    old2 = ConsumerGroupMember("old2", instance_id="instance-id", member_epoch=10, previous_member_epoch=9,
                               subscribed_topic_names=("foo",), server_assignor="range",
                               rebalance_timeout_ms=45_000,
                               assigned_partitions=tps({"foo": [3, 4, 5], "bar": [1]}))
    targets = {"m1": member1.assigned_partitions, "old2": old2.assigned_partitions}
    records = consumer_group_records(GROUP, 10, [member1, old2], targets, metadata={"foo": 6, "bar": 2})
    ctx = Ctx(records=records, topics={"foo": 6, "bar": 2}, migration_policy=Policy.DOWNGRADE)
    ctx.assignor.prepare(targets)
    before = len(ctx.records)
    # The same subscription as the replaced member: the group epoch stays 10.
    joined = ctx.call(ctx.join_request(instance_id="instance-id", protocols=range_protocols(["foo"])))
    assert (joined.error_code, joined.generation_id, joined.protocol_name) == (E.NONE, 10, "range")
    assert ctx.consumer_group() is None and ctx.state() is S.STABLE
    group = ctx.group()
    assert group.generation_id == 10 and group.leader_id == "m1"
    assert set(group.members) == {"m1", joined.member_id}
    new = group.members[joined.member_id]
    assert new.group_instance_id == "instance-id"
    assert decode_assignment(new.assignment).partitions == tuple(sorted(tps({"foo": [3, 4, 5], "bar": [1]})))
    synced = ctx.result(ctx.sync(joined.member_id, 10, instance_id="instance-id"))
    assert synced.error_code is E.NONE and synced.assignment == new.assignment
    assert any(isinstance(r, GroupMetadataRecord) and r.state == "Stable" for r in new_records(ctx, before))
    assert ctx.coordinator.session_deadline_ms(GROUP, joined.member_id) is not None
    ctx.assert_replays()


def test_no_downgrade_when_the_policy_does_not_allow_it():
    """validateOnlineDowngradeWithFencedMember: with the policy upgrade-only the consumer group stays, with
    only its classic member."""
    ctx, _ = _mixed_consumer_group(Policy.UPGRADE)
    ctx.consumer_heartbeat(member_id="m2", member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
    group = ctx.consumer_group()
    assert group is not None and set(group.members) == {"m1"} and group.group_epoch == 11
    assert ctx.state() is None
    ctx.assert_replays()


def test_no_conversion_when_size_exceeds_classic_max_group_size():
    """testNoConversionWhenSizeExceedsClassicMaxGroupSize: the classic members left exceed
    group.max.size: the group stays a consumer group."""
    protocols = range_protocols(["foo"])
    members = [classic_member("a", protocols), classic_member("b", protocols), ConsumerGroupMember("c")]
    ctx = Ctx(records=consumer_group_records(GROUP, 10, members, {}), max_size=1, topics={"foo": 1})
    ctx.consumer_heartbeat(member_id="c", member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
    assert set(ctx.consumer_group().members) == {"a", "b"} and ctx.state() is None


def test_the_last_member_leaving_a_consumer_group_does_not_downgrade_it():
    """validateOnlineDowngradeWithFencedMember: numMembers <= 1 skips the downgrade (the group is empty)."""
    ctx = Ctx(records=consumer_group_records(GROUP, 10, [ConsumerGroupMember("c", member_epoch=10)], {}))
    ctx.consumer_heartbeat(member_id="c", member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
    assert ctx.consumer_group() is not None and not ctx.consumer_group().members and ctx.state() is None


# -- JoinGroup of a classic member to a consumer group ------------------------------------


def _consumer_group_with_one_member(**ctx_fields) -> Ctx:
    member = ConsumerGroupMember("c", member_epoch=10, previous_member_epoch=9,
                                 subscribed_topic_names=("foo",),
                                 rebalance_timeout_ms=5000, assigned_partitions=tps({"foo": [0, 1]}))
    records = consumer_group_records(GROUP, 10, [member], {"c": member.assigned_partitions},
                                     metadata={"foo": 2})
    return Ctx(records=records, topics={"foo": 2}, **ctx_fields)


def test_joining_consumer_group_throws_exception_if_group_over_max_size():
    """testJoiningConsumerGroupThrowsExceptionIfGroupOverMaxSize: GROUP_MAX_SIZE_REACHED."""
    ctx = _consumer_group_with_one_member(consumer_max_size=1)
    response = ctx.call(ctx.join_request(protocols=range_protocols(["foo"])))
    assert response.error_code is E.GROUP_MAX_SIZE_REACHED


def test_joining_consumer_group_throws_exception_if_protocol_is_not_supported():
    """testJoiningConsumerGroupThrowsExceptionIfProtocolIsNotSupported: a protocol type other than
    "consumer", or no protocol, is INCONSISTENT_GROUP_PROTOCOL."""
    ctx = _consumer_group_with_one_member()
    connect = ctx.join_request(protocol_type="connect", protocols=range_protocols(["foo"]))
    assert ctx.call(connect).error_code is E.INCONSISTENT_GROUP_PROTOCOL
    assert ctx.call(ctx.join_request(protocols=())).error_code is E.INCONSISTENT_GROUP_PROTOCOL


def test_joining_consumer_group_with_protocols_the_classic_members_do_not_share():
    """ConsumerGroup.supportsClassicProtocols: a new classic member must share a protocol with the classic
    members already in the group."""
    ctx = _consumer_group_with_one_member()
    joined = _join_dynamic(ctx, range_protocols(["foo"]))
    assert joined.error_code is E.NONE
    roundrobin = (JoinGroupProtocol("roundrobin", subscription(["foo"])),)
    assert ctx.call(ctx.join_request(protocols=roundrobin)).error_code is E.INCONSISTENT_GROUP_PROTOCOL


def _join_dynamic(ctx: Ctx, protocols, **fields):
    """MEMBER_ID_REQUIRED, then the JoinGroup with the id: answered at once by a consumer group."""
    first = ctx.call(ctx.join_request(protocols=protocols, **fields))
    assert first.error_code is E.MEMBER_ID_REQUIRED and first.member_id
    return ctx.call(ctx.join_request(member_id=first.member_id, protocols=protocols, **fields))


def test_joining_consumer_group_with_new_dynamic_member():
    """testJoiningConsumerGroupWithNewDynamicMember: the member joins at once with the new group epoch as
    generation, gets the protocol of its JoinGroup, and must sync within its rebalance timeout; its session
    is its JoinGroup's."""
    ctx = _consumer_group_with_one_member()
    ctx.assignor.prepare({"c": tps({"foo": [0]}), "new": tps({"foo": [1]})})
    first = ctx.call(ctx.join_request(protocols=range_protocols(["foo"]), session_ms=5000,
                                      rebalance_ms=10_000))
    assert first.error_code is E.MEMBER_ID_REQUIRED
    ctx.assignor.prepare({"c": tps({"foo": [0]}), first.member_id: tps({"foo": [1]})})
    joined = ctx.call(ctx.join_request(member_id=first.member_id, protocols=range_protocols(["foo"]),
                                       session_ms=5000, rebalance_ms=10_000))
    assert (joined.error_code, joined.generation_id) == (E.NONE, 11)
    assert (joined.protocol_type, joined.protocol_name) == (CONSUMER, "range")
    assert (joined.leader, joined.members) == ("", ())
    member = ctx.consumer_group().members[first.member_id]
    assert member.uses_classic_protocol and member.state is MemberState.UNRELEASED_PARTITIONS
    assert member.assigned_partitions == frozenset()
    assert ctx.timer_deadline(session_timer_key(GROUP, first.member_id)) == ctx.now_ms + 5000
    assert ctx.timer_deadline(classic_sync_timer_key(GROUP, first.member_id)) == ctx.now_ms + 10_000
    ctx.assert_replays()


def test_joining_consumer_group_with_new_static_member():
    """testJoiningConsumerGroupWithNewStaticMember: a static member joins without MEMBER_ID_REQUIRED."""
    ctx = _consumer_group_with_one_member()
    joined = ctx.call(ctx.join_request(instance_id="instance", protocols=range_protocols(["foo"])))
    assert joined.error_code is E.NONE and joined.member_id
    assert ctx.consumer_group().static_member("instance").member_id == joined.member_id
    ctx.assert_replays()


def test_joining_consumer_group_replacing_existing_static_member():
    """testJoiningConsumerGroupReplacingExistingStaticMember: a classic static member with an unknown
    member id replaces the instance's member, which keeps its assignment."""
    protocols = range_protocols(["foo"], owned=tps({"foo": [0]}))
    old = classic_member("old", protocols, instance_id="instance", member_epoch=10, previous_member_epoch=9,
                         subscribed_topic_names=("foo",), rebalance_timeout_ms=5000,
                         assigned_partitions=tps({"foo": [0]}))
    consumer = ConsumerGroupMember("c", member_epoch=10, previous_member_epoch=9,
                                   subscribed_topic_names=("foo",),
                                   rebalance_timeout_ms=5000, assigned_partitions=tps({"foo": [1]}))
    records = consumer_group_records(GROUP, 10, [old, consumer], {"old": tps({"foo": [0]}),
                                                                  "c": tps({"foo": [1]})},
                                     metadata={"foo": 2})
    ctx = Ctx(records=records, topics={"foo": 2})
    joined = ctx.call(ctx.join_request(instance_id="instance", protocols=protocols))
    assert joined.error_code is E.NONE and joined.member_id != "old"
    group = ctx.consumer_group()
    assert "old" not in group.members
    new = group.members[joined.member_id]
    assert new.instance_id == "instance" and new.assigned_partitions == tps({"foo": [0]})
    assert group.target_of(joined.member_id) == tps({"foo": [0]})
    ctx.assert_replays()


def test_joining_consumer_group_with_existing_static_member_and_new_subscription():
    """testJoiningConsumerGroupWithExistingStaticMemberAndNewSubscription: a classic static member rejoins
    with a new subscription: the group epoch is bumped and a new target computed; the member moves on once
    it has revoked what it loses."""
    protocols = range_protocols(["foo"], owned=tps({"foo": [0]}))
    classic = classic_member("k", protocols, instance_id="i", member_epoch=10, previous_member_epoch=9,
                             subscribed_topic_names=("foo",), rebalance_timeout_ms=5000,
                             assigned_partitions=tps({"foo": [0]}))
    consumer = ConsumerGroupMember("c", member_epoch=10, previous_member_epoch=9,
                                   subscribed_topic_names=("foo",),
                                   rebalance_timeout_ms=5000, assigned_partitions=tps({"foo": [1]}))
    targets = {"k": tps({"foo": [0]}), "c": tps({"foo": [1]})}
    ctx = Ctx(records=consumer_group_records(GROUP, 10, [classic, consumer], targets, metadata={"foo": 2}),
              topics={"foo": 2, "bar": 1})
    ctx.assignor.prepare({"k": tps({"bar": [0]}), "c": tps({"foo": [0, 1]})})
    rejoin = ctx.call(ctx.join_request(member_id="k", instance_id="i",
                                       protocols=range_protocols(["foo", "bar"], owned=tps({"foo": [0]}))))
    assert (rejoin.error_code, rejoin.generation_id) == (E.NONE, 10)  # must revoke foo-0 first
    group = ctx.consumer_group()
    assert group.group_epoch == 11 and group.subscription_metadata == {"foo": 2, "bar": 1}
    member = group.members["k"]
    assert member.subscribed_topic_names == ("bar",
                                             "foo") and member.state is MemberState.UNREVOKED_PARTITIONS
    rejoin = ctx.call(ctx.join_request(member_id="k", instance_id="i", protocols=range_protocols(["foo",
                                                                                                  "bar"])))
    assert (rejoin.error_code, rejoin.generation_id) == (E.NONE, 11)
    assert ctx.consumer_group().members["k"].assigned_partitions == tps({"bar": [0]})
    ctx.assert_replays()


def test_static_member_joining_consumer_group_with_unknown_instance_id():
    """testStaticMemberJoiningConsumerGroupWithUnknownInstanceId: UNKNOWN_MEMBER_ID."""
    ctx = _consumer_group_with_one_member()
    response = ctx.call(ctx.join_request(member_id="some", instance_id="unknown",
                                         protocols=range_protocols(["foo"])))
    assert response.error_code is E.UNKNOWN_MEMBER_ID


def test_static_member_joining_consumer_group_with_unmatched_member_id():
    """testStaticMemberJoiningConsumerGroupWithUnmatchedMemberId: FENCED_INSTANCE_ID."""
    ctx = _consumer_group_with_one_member()
    joined = ctx.call(ctx.join_request(instance_id="instance", protocols=range_protocols(["foo"])))
    response = ctx.call(ctx.join_request(member_id="not-" + joined.member_id, instance_id="instance",
                                         protocols=range_protocols(["foo"])))
    assert response.error_code is E.FENCED_INSTANCE_ID


@pytest.mark.parametrize("cooperative", [False, True], ids=["eager", "cooperative"])
def test_reconciliation_in_joining_consumer_group(cooperative):
    """testReconciliationInJoiningConsumerGroupWithEagerProtocol / ...WithCooperativeProtocol: a classic
    member that must give up a partition does so by rejoining; an eager member (subscription without owned
    partitions) has revoked everything when it rejoins, so it moves to the new epoch at once; a cooperative
    one reports what it still owns and stays in UNREVOKED_PARTITIONS until a JoinGroup no longer lists it."""
    protocols = range_protocols(["foo"], owned=tps({"foo": [0, 1]}))
    classic = classic_member("k", protocols, member_epoch=10, previous_member_epoch=9,
                             subscribed_topic_names=("foo",),
                             rebalance_timeout_ms=10_000, assigned_partitions=tps({"foo": [0, 1]}))
    records = consumer_group_records(GROUP, 10, [classic], {"k": tps({"foo": [0, 1]})}, metadata={"foo": 2})
    ctx = Ctx(records=records, topics={"foo": 2})
    ctx.assignor.prepare({"k": tps({"foo": [0]}), "c": tps({"foo": [1]})})
    assert ctx.consumer_heartbeat(member_id="c", member_epoch=0, rebalance_timeout_ms=5000,
                                  subscribed_topic_names=("foo",), topic_partitions=()).error_code is E.NONE
    assert ctx.heartbeat("k", 10) is E.REBALANCE_IN_PROGRESS
    assert ctx.timer_deadline(classic_join_timer_key(GROUP, "k")) == ctx.now_ms + 10_000
    owned = tps({"foo": [0, 1]}) if cooperative else frozenset()
    rejoin = ctx.call(ctx.join_request(member_id="k", protocols=range_protocols(["foo"], owned=owned),
                                       rebalance_ms=10_000))
    member = ctx.consumer_group().members["k"]
    assert ctx.timer_deadline(classic_join_timer_key(GROUP, "k")) is None
    if cooperative:
        assert (rejoin.error_code, rejoin.generation_id) == (E.NONE, 10)
        assert member.state is MemberState.UNREVOKED_PARTITIONS
        synced = ctx.result(ctx.sync("k", 10, protocol_type=CONSUMER, protocol_name="range"))
        assert decode_assignment(synced.assignment).partitions == (TopicPartition("foo", 0),)
        rejoin = ctx.call(ctx.join_request(member_id="k", protocols=range_protocols(["foo"],
                                                                                    owned=tps({"foo": [0]})),
                                           rebalance_ms=10_000))
        member = ctx.consumer_group().members["k"]
    assert (rejoin.error_code, rejoin.generation_id) == (E.NONE, 11)
    assert (member.state, member.assigned_partitions) == (MemberState.STABLE, tps({"foo": [0]}))
    synced = ctx.result(ctx.sync("k", 11, protocol_type=CONSUMER, protocol_name="range"))
    assert synced.error_code is E.NONE
    assert decode_assignment(synced.assignment).partitions == (TopicPartition("foo", 0),)
    # foo-1 is released: the consumer member gets it at its next heartbeat.
    response = ctx.consumer_heartbeat(member_id="c", member_epoch=11)
    assert frozenset(response.assignment) == tps({"foo": [1]})
    ctx.assert_replays()


# -- SyncGroup ----------------------------------------------------------------------------


def _classic_member_group(member_epoch: int = 10, group_epoch: int = 10, **member_fields) -> Ctx:
    member = classic_member("k", range_protocols(["foo"]), member_epoch=member_epoch,
                            rebalance_timeout_ms=10_000,
                            **member_fields)
    return Ctx(records=consumer_group_records(GROUP, group_epoch, [member], {}), topics={"foo": 2})


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_classic_group_sync_to_consumer_group_with_all_consumer_protocol_versions(version):
    """testClassicGroupSyncToConsumerGroupWithAllConsumerProtocolVersions: the assignment is encoded with
    the ConsumerProtocol version of the member's subscription."""
    protocols = range_protocols(["foo"], version=version)
    member = classic_member("k", protocols, member_epoch=10, assigned_partitions=tps({"foo": [0, 1]}),
                            subscribed_topic_names=("foo",))
    ctx = Ctx(records=consumer_group_records(GROUP, 10, [member], {"k": tps({"foo": [0, 1]})}),
              topics={"foo": 2})
    synced = ctx.result(ctx.sync("k", 10, protocol_type=CONSUMER, protocol_name="range"))
    assert (synced.error_code, synced.protocol_type, synced.protocol_name) == (E.NONE, CONSUMER, "range")
    assert synced.assignment == assignment(tps({"foo": [0, 1]}), version=version)
    assert ctx.timer_deadline(session_timer_key(GROUP, "k")) == ctx.now_ms + 5000


def test_classic_group_sync_to_consumer_group_with_unknown_member_id():
    """testClassicGroupSyncToConsumerGroupWithUnknownMemberId."""
    ctx = Ctx(records=consumer_group_records(GROUP, 10, [ConsumerGroupMember("m")], {}))
    for member_id, instance_id in (("other", None), ("m", "unknown-instance-id"), ("m", None)):
        synced = ctx.result(ctx.sync(member_id, 10, instance_id=instance_id, protocol_name="range"))
        assert synced.error_code is E.UNKNOWN_MEMBER_ID


def test_classic_group_sync_to_consumer_group_with_fenced_instance_id():
    """testClassicGroupSyncToConsumerGroupWithFencedInstanceId."""
    ctx = Ctx(records=consumer_group_records(GROUP, 10, [ConsumerGroupMember("m", instance_id="i")], {}))
    assert ctx.result(ctx.sync("other", 10, instance_id="i")).error_code is E.FENCED_INSTANCE_ID


def test_classic_group_sync_to_consumer_group_with_inconsistent_group_protocol():
    """testClassicGroupSyncToConsumerGroupWithInconsistentGroupProtocol; null type and name are accepted."""
    ctx = _classic_member_group()
    assert ctx.result(ctx.sync("k", 10, protocol_type=CONSUMER,
                               protocol_name="roundrobin")).error_code is E.INCONSISTENT_GROUP_PROTOCOL
    assert ctx.result(ctx.sync("k", 10, protocol_type="connect",
                               protocol_name="range")).error_code is E.INCONSISTENT_GROUP_PROTOCOL
    synced = ctx.result(ctx.sync("k", 10, protocol_type=None, protocol_name=None))
    assert synced.error_code is E.NONE and (synced.protocol_type, synced.protocol_name) == (None, None)


def test_classic_group_sync_to_consumer_group_with_illegal_generation():
    """testClassicGroupSyncToConsumerGroupWithIllegalGeneration."""
    ctx = _classic_member_group()
    assert ctx.result(ctx.sync("k", 9, protocol_name="range")).error_code is E.ILLEGAL_GENERATION


def test_classic_group_sync_to_consumer_group_rebalance_in_progress():
    """testClassicGroupSyncToConsumerGroupRebalanceInProgress: the member is behind the group epoch; it
    must rejoin within its rebalance timeout."""
    ctx = _classic_member_group(member_epoch=10, group_epoch=11)
    assert ctx.result(ctx.sync("k", 10, protocol_name="range")).error_code is E.REBALANCE_IN_PROGRESS
    assert ctx.timer_deadline(classic_join_timer_key(GROUP, "k")) == ctx.now_ms + 10_000


def test_sync_of_a_consumer_protocol_member_is_unknown_member_id():
    """throwIfMemberDoesNotUseClassicProtocol on SyncGroup."""
    ctx = Ctx(records=consumer_group_records(GROUP, 10, [ConsumerGroupMember("m", member_epoch=10)], {}))
    assert ctx.result(ctx.sync("m", 10)).error_code is E.UNKNOWN_MEMBER_ID


# -- Heartbeat ----------------------------------------------------------------------------


def test_classic_group_heartbeat_to_consumer_group_maintains_session():
    """testClassicGroupHeartbeatToConsumerGroupMaintainsSession: each heartbeat moves the session deadline;
    a member that stops heartbeating is fenced after its session timeout."""
    ctx = _classic_member_group()
    for _ in range(3):
        ctx.sleep(4000)
        assert ctx.heartbeat("k", 10) is E.NONE
        assert ctx.timer_deadline(session_timer_key(GROUP, "k")) == ctx.now_ms + 5000
    ctx.sleep(5000)
    assert "k" not in ctx.consumer_group().members
    ctx.assert_replays()


def test_classic_group_heartbeat_to_consumer_group_rebalance_in_progress():
    """testClassicGroupHeartbeatToConsumerGroupRebalanceInProgress: behind the group epoch, partitions to
    revoke, or free partitions to collect: REBALANCE_IN_PROGRESS, a session and a join deadline."""
    protocols = range_protocols(["foo"])
    member1 = classic_member("m1", protocols, rebalance_timeout_ms=10_000, member_epoch=9)
    member2 = classic_member("m2", protocols, rebalance_timeout_ms=10_000, member_epoch=10,
                             state=MemberState.UNREVOKED_PARTITIONS,
                             partitions_pending_revocation=tps({"foo": [0]}))
    member3 = classic_member("m3", protocols, rebalance_timeout_ms=10_000, member_epoch=10,
                             state=MemberState.UNRELEASED_PARTITIONS, assigned_partitions=tps({"bar": [0]}))
    records = consumer_group_records(GROUP, 10, [member1, member2, member3], {"m3": tps({"bar": [0, 1, 2]})},
                                     assignment_epoch=10)
    ctx = Ctx(records=records, topics={"foo": 1, "bar": 3})
    for member_id, generation in (("m1", 9), ("m2", 10), ("m3", 10)):
        assert ctx.heartbeat(member_id, generation) is E.REBALANCE_IN_PROGRESS
        assert ctx.timer_deadline(session_timer_key(GROUP, member_id)) == ctx.now_ms + 5000
        assert ctx.timer_deadline(classic_join_timer_key(GROUP, member_id)) == ctx.now_ms + 10_000


def test_classic_group_heartbeat_to_consumer_with_unknown_member():
    """testClassicGroupHeartbeatToConsumerWithUnknownMember."""
    ctx = _classic_member_group()
    assert ctx.heartbeat("unknown", 10) is E.UNKNOWN_MEMBER_ID
    assert ctx.heartbeat("k", 10, instance_id="unknown") is E.UNKNOWN_MEMBER_ID


def test_classic_group_heartbeat_to_consumer_with_fenced_instance_id():
    """testClassicGroupHeartbeatToConsumerWithFencedInstanceId."""
    ctx = _classic_member_group(instance_id="i")
    assert ctx.heartbeat("other", 10, instance_id="i") is E.FENCED_INSTANCE_ID


def test_classic_group_heartbeat_to_consumer_with_illegal_generation_id():
    """testClassicGroupHeartbeatToConsumerWithIllegalGenerationId."""
    ctx = _classic_member_group()
    assert ctx.heartbeat("k", 9) is E.ILLEGAL_GENERATION


def test_classic_group_heartbeat_to_consumer_with_member_not_using_classic_protocol():
    """testClassicGroupHeartbeatToConsumerWithMemberNotUsingClassicProtocol."""
    ctx = Ctx(records=consumer_group_records(GROUP, 10, [ConsumerGroupMember("m", member_epoch=10)], {}))
    assert ctx.heartbeat("m", 10) is E.UNKNOWN_MEMBER_ID


def test_consumer_group_member_using_classic_protocol_fenced_when_session_timeout():
    """testConsumerGroupMemberUsingClassicProtocolFencedWhenSessionTimeout: fenced, the epoch bumped; the
    group is empty, so its target assignment epoch catches up (KAFKA-20442, apache/kafka#22045: the
    epoch record is followed by a ConsumerGroupTargetAssignmentMetadata record at 11)."""
    ctx = _classic_member_group()
    assert ctx.heartbeat("k", 10) is E.NONE
    ctx.sleep(5000)
    group = ctx.consumer_group()
    assert "k" not in group.members and (group.group_epoch, group.assignment_epoch) == (11, 11)
    assert ctx.records[-3:] == [ConsumerGroupMemberTombstone(GROUP, "k"),
                                ConsumerGroupMetadataRecord(GROUP, 11, 10, ()),
                                ConsumerGroupMetadataRecord(GROUP, 11, 11, ())]


def test_consumer_group_member_using_classic_protocol_fenced_when_join_timeout():
    """testConsumerGroupMemberUsingClassicProtocolFencedWhenJoinTimeout: told to rejoin and silent for its
    rebalance timeout (its session kept alive meanwhile), the member is fenced."""
    ctx = _classic_member_group(member_epoch=9, group_epoch=10, session_ms=30_000)
    assert ctx.heartbeat("k", 9) is E.REBALANCE_IN_PROGRESS
    ctx.sleep(10_000)
    group = ctx.consumer_group()
    assert "k" not in group.members and group.group_epoch == 11


def test_classic_member_that_joins_but_never_syncs_is_fenced_after_its_rebalance_timeout():
    """scheduleConsumerGroupSyncTimeout: after a JoinGroup the member must sync within its rebalance
    timeout ("the member failed to sync within timeout")."""
    ctx = _consumer_group_with_one_member()
    joined = _join_dynamic(ctx, range_protocols(["foo"]), session_ms=30_000, rebalance_ms=10_000)
    ctx.sleep(10_000)
    assert joined.member_id not in ctx.consumer_group().members


# -- LeaveGroup ---------------------------------------------------------------------------


def test_consumer_group_member_using_classic_protocol_batch_leave_group():
    """testConsumerGroupMemberUsingClassicProtocolBatchLeaveGroup: classic members leave in one request,
    dynamic by member id and static by instance id (an admin may omit the member id); a member of the
    consumer protocol cannot leave this way (UNKNOWN_MEMBER_ID); one epoch bump for the batch."""
    protocols = range_protocols(["foo"])
    members = [classic_member("k1", protocols), classic_member("k2", protocols, instance_id="i2"),
               classic_member("k3", protocols, instance_id="i3"), ConsumerGroupMember("c")]
    ctx = Ctx(records=consumer_group_records(GROUP, 10, members, {}), topics={"foo": 1})
    response = ctx.leave(("k1", None), ("k2", "i2"), ("", "i3"), ("c", None), ("unknown", None))
    codes = [(r.member_id, r.error_code) for r in response.members]
    assert response.error_code is E.NONE
    assert codes == [("k1", E.NONE), ("k2", E.NONE), ("k3", E.NONE), ("c", E.UNKNOWN_MEMBER_ID),
                     ("unknown", E.UNKNOWN_MEMBER_ID)]
    group = ctx.consumer_group()
    assert set(group.members) == {"c"} and group.group_epoch == 11
    for member_id in ("k1", "k2", "k3"):
        assert ctx.timer_deadline(session_timer_key(GROUP, member_id)) is None
    ctx.assert_replays()


def test_classic_members_batch_leave_that_empties_the_group_brings_the_assignment_epoch_up():
    """KAFKA-20442 (apache/kafka#22045, Kafka 4.4): when the leave empties the consumer group, a
    ConsumerGroupTargetAssignmentMetadata record follows the epoch bump, so the empty group's epochs
    match (kgroup: a second header at (11, 11))."""
    protocols = range_protocols(["foo"])
    members = [classic_member("k1", protocols), classic_member("k2", protocols, instance_id="i2")]
    ctx = Ctx(records=consumer_group_records(GROUP, 10, members, {}), topics={"foo": 1})
    response = ctx.leave(("k1", None), ("k2", "i2"))
    assert [(r.member_id, r.error_code) for r in response.members] == [("k1", E.NONE), ("k2", E.NONE)]
    group = ctx.consumer_group()
    assert not group.members and (group.group_epoch, group.assignment_epoch) == (11, 11)
    assert group.state.value == "Empty"
    assert ctx.records[-2:] == [ConsumerGroupMetadataRecord(GROUP, 11, 10, ()),
                                ConsumerGroupMetadataRecord(GROUP, 11, 11, ())]
    ctx.assert_replays()


def test_consumer_group_member_using_classic_protocol_batch_leave_group_updating_subscription_metadata():
    """...BatchLeaveGroupUpdatingSubscriptionMetadata: the topics only the leavers subscribed to leave the
    subscription metadata."""
    members = [classic_member("k1", range_protocols(["bar"]), subscribed_topic_names=("bar",)),
               ConsumerGroupMember("c", subscribed_topic_names=("foo",))]
    ctx = Ctx(records=consumer_group_records(GROUP, 10, members, {}, metadata={"foo": 1, "bar": 1}),
              topics={"foo": 1, "bar": 1})
    ctx.leave(("k1", None))
    group = ctx.consumer_group()
    assert group.subscription_metadata == {"foo": 1} and group.group_epoch == 11


def test_classic_group_leave_to_consumer_group_without_valid_leave_group_member():
    """testClassicGroupLeaveToConsumerGroupWithoutValidLeaveGroupMember: nothing written."""
    ctx = Ctx(records=consumer_group_records(GROUP, 10, [ConsumerGroupMember("c")], {}))
    before = list(ctx.records)
    response = ctx.call(LeaveGroupRequest(GROUP, (MemberIdentity("unknown"),)))
    assert [r.error_code for r in response.members] == [E.UNKNOWN_MEMBER_ID]
    assert ctx.records == before


def test_consumer_group_describe_tells_classic_members_apart():
    """ConsumerGroupDescribe v1 (KIP-1099): MemberType 0 for a classic member, 1 for a consumer-protocol
    one (Kafka's ConsumerGroupMember.asConsumerGroupDescribeMember)."""
    ctx = _consumer_group_with_one_member()
    joined = _join_dynamic(ctx, range_protocols(["foo"]))
    (described,) = ctx.call(ConsumerGroupDescribeRequest((GROUP,))).groups
    types = {m.member_id: m.member_type for m in described.members}
    assert types == {"c": MEMBER_TYPE_CONSUMER, joined.member_id: MEMBER_TYPE_CLASSIC}


# -- offsets and failover -----------------------------------------------------------------


def test_classic_member_commits_with_its_generation():
    """ConsumerGroup.validateOffsetCommit: a classic member commits with its member epoch as generation
    (any OffsetCommit version); a wrong one is ILLEGAL_GENERATION, not STALE_MEMBER_EPOCH."""
    ctx = _classic_member_group()
    assert ctx.commit(member_id="k", generation_id=10) is E.NONE
    assert ctx.commit(member_id="k", generation_id=9) is E.ILLEGAL_GENERATION


def test_upgrade_and_downgrade_survive_a_coordinator_failover():
    """Replay after each conversion rebuilds the converted group, classic members and offsets included."""
    ctx, _ = _stable_classic_group(Policy.BIDIRECTIONAL)
    assert ctx.commit(member_id="member-id-1", generation_id=0, offset=42) is E.NONE
    ctx.consumer_heartbeat(member_id="member-id-2", member_epoch=0, rebalance_timeout_ms=5000,
                           subscribed_topic_names=("foo", "bar"), topic_partitions=())
    loaded = ctx.assert_replays()
    assert loaded.consumer_group(GROUP).members["member-id-1"].uses_classic_protocol
    ctx.consumer_heartbeat(member_id="member-id-2", member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
    loaded = ctx.assert_replays()
    assert loaded.group_state(GROUP) is S.PREPARING_REBALANCE and loaded.consumer_group(GROUP) is None
    assert ctx.fetch().partitions[0].committed.offset == 42


def test_downgraded_classic_member_rejoins_and_keeps_its_partitions():
    """After the downgrade, the classic member's Heartbeat answers REBALANCE_IN_PROGRESS; it rejoins and
    completes a classic rebalance as the group's only member (the leader)."""
    ctx, protocols = _mixed_consumer_group()
    ctx.consumer_heartbeat(member_id="m2", member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
    assert ctx.heartbeat("m1", 10) is E.REBALANCE_IN_PROGRESS
    key = ctx.join(member_id="m1", protocols=protocols, session_ms=5000, rebalance_ms=45_000)
    joined = ctx.result(key)
    assert joined.error_code is E.NONE and joined.generation_id == 11 and joined.leader == "m1"
    assert ctx.state() is S.COMPLETING_REBALANCE
    ctx.assert_replays()


def test_sync_request_default_protocol_fields_are_accepted():
    """The harness's SyncGroupRequest defaults (protocol type "consumer", no name) pass the protocol check."""
    ctx = _classic_member_group()
    synced = ctx.call(SyncGroupRequest(GROUP, 10, "k"))
    assert synced.error_code is E.NONE


def test_heartbeat_request_to_a_consumer_group_changes_nothing_persisted():
    """classicGroupHeartbeatToConsumerGroup writes no record."""
    ctx = _classic_member_group()
    before = list(ctx.records)
    ctx.call(HeartbeatRequest(GROUP, 10, "k"))
    assert ctx.records == before


# -- ported from Kafka's ConsumerProtocolMigrationTest (core, kafka.server; over the broker's APIs) -------


def listed(ctx: Ctx) -> list[tuple[str, str, str]]:
    """ListGroups as (type, state, protocol type) of the test's group."""
    return [(g.group_type, g.group_state, g.protocol_type) for g in ctx.list_groups() if g.group_id == GROUP]


def _join_classic_dynamic(ctx: Ctx, protocols, **fields):
    """Kafka's joinDynamicConsumerGroupWithOldProtocol: MEMBER_ID_REQUIRED, join (the initial delay is 0
    here), then SyncGroup as leader with the given assignment for itself."""
    first = ctx.call(ctx.join_request(protocols=protocols, **fields))
    assert first.error_code is E.MEMBER_ID_REQUIRED
    key = ctx.join(member_id=first.member_id, protocols=protocols, **fields)
    ctx.sleep(0)  # the initial delay (0 here) is a timer: it completes the join when it fires
    joined = ctx.result(key)
    assert joined is not None and joined.error_code is E.NONE
    return joined


ALL_POLICIES = pytest.mark.parametrize("policy", list(Policy), ids=[p.value for p in Policy])


@ALL_POLICIES
def test_upgrade_from_empty_classic_to_consumer_group(policy):
    """testUpgradeFromEmptyClassicToConsumerGroupWith{Bidirectional,Upgrade,Downgrade,Disabled}Policy: an
    empty classic group becomes a consumer group whatever the policy."""
    ctx = Ctx(initial_delay_ms=0, topics={"foo": 3}, migration_policy=policy)
    joined = _join_classic_dynamic(ctx, range_protocols(["foo"]))
    assert ctx.result(ctx.sync(joined.member_id, joined.generation_id)).error_code is E.NONE
    ctx.leave((joined.member_id, None))
    assert listed(ctx) == [("classic", "Empty", CONSUMER)]
    response = ctx.consumer_heartbeat(member_id=joined.member_id, member_epoch=0,
                                      rebalance_timeout_ms=300_000,
                                      subscribed_topic_names=("foo",), topic_partitions=())
    assert response.error_code is E.NONE
    assert listed(ctx) == [("consumer", "Stable", CONSUMER)]
    ctx.assert_replays()


@ALL_POLICIES
def test_downgrade_from_empty_consumer_to_classic_group(policy):
    """testDowngradeFromEmptyConsumerToClassicGroupWith...Policy: an empty consumer group becomes a classic
    group when a classic member joins, whatever the policy."""
    ctx = Ctx(initial_delay_ms=0, topics={"foo": 3}, migration_policy=policy)
    assert ctx.consumer_heartbeat(member_id="m", member_epoch=0, rebalance_timeout_ms=300_000,
                                  subscribed_topic_names=("foo",), topic_partitions=()).error_code is E.NONE
    ctx.consumer_heartbeat(member_id="m", member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
    assert listed(ctx) == [("consumer", "Empty", CONSUMER)]
    joined = _join_classic_dynamic(ctx, range_protocols(["foo"]))
    assert ctx.result(ctx.sync(joined.member_id, joined.generation_id)).error_code is E.NONE
    assert listed(ctx) == [("classic", "Stable", CONSUMER)]
    ctx.assert_replays()


@ALL_POLICIES
def test_upgrade_from_simple_group_to_consumer_group(policy):
    """testUpgradeFromSimpleGroupToConsumerGroupWith...Policy: the empty group an admin commit created
    becomes a consumer group and keeps the offset."""
    ctx = Ctx(topics={"foo": 3}, migration_policy=policy)
    assert ctx.commit(member_id="member-id", generation_id=-1, offset=1000) is E.NONE
    assert listed(ctx) == [("classic", "Empty", "")]
    response = ctx.consumer_heartbeat(member_id="m", member_epoch=0, rebalance_timeout_ms=300_000,
                                      subscribed_topic_names=("foo",), topic_partitions=())
    assert response.error_code is E.NONE
    assert listed(ctx) == [("consumer", "Stable", CONSUMER)]
    assert ctx.fetch().partitions[0].committed.offset == 1000


def test_upgrade_migration_policy():
    """testUpgradeMigrationPolicy: under "upgrade" a classic group with a member becomes a consumer group
    (Reconciling while the classic member still holds everything); when the consumer-protocol member
    leaves, it stays a consumer group (Assigning: the epoch bumped, no new target yet)."""
    ctx = Ctx(initial_delay_ms=0, topics={"foo": 3}, migration_policy=Policy.UPGRADE)
    joined = _join_classic_dynamic(ctx, range_protocols(["foo"]))
    everything = assignment(tps({"foo": [0, 1, 2]}))
    synced = ctx.result(ctx.sync(joined.member_id, joined.generation_id,
                                 assignments={joined.member_id: everything}))
    assert synced.error_code is E.NONE
    ctx.assignor.prepare({"m2": tps({"foo": [2]}), joined.member_id: tps({"foo": [0, 1]})})
    response = ctx.consumer_heartbeat(member_id="m2", member_epoch=0, rebalance_timeout_ms=300_000,
                                      subscribed_topic_names=("foo",), topic_partitions=())
    assert response.error_code is E.NONE
    assert listed(ctx) == [("consumer", "Reconciling", CONSUMER)]
    ctx.consumer_heartbeat(member_id="m2", member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
    assert listed(ctx) == [("consumer", "Assigning", CONSUMER)]
    ctx.assert_replays()


def test_downgrade_migration_policy():
    """testDowngradeMigrationPolicy: a classic member joins a consumer group, syncs (nothing free yet) and
    heartbeats; once the consumer-protocol member has revoked, the classic member is told to rejoin; when
    that member leaves, the group becomes classic (PreparingRebalance), and under "downgrade" a new
    consumer-protocol member cannot upgrade it back: GROUP_ID_NOT_FOUND.  Epochs as Kafka 4.4 numbers
    them: the new group's first assignment is epoch 2 (KAFKA-20268)."""
    ctx = Ctx(initial_delay_ms=0, topics={"foo": 3}, migration_policy=Policy.DOWNGRADE)
    ctx.assignor.prepare({"m1": tps({"foo": [0, 1, 2]})})
    joined_m1 = ctx.consumer_heartbeat(member_id="m1", member_epoch=0, rebalance_timeout_ms=300_000,
                                       subscribed_topic_names=("foo",), topic_partitions=())
    assert (joined_m1.error_code, joined_m1.member_epoch) == (E.NONE, 2)
    owned = tuple(sorted(tps({"foo": [0, 1, 2]})))
    assert ctx.consumer_heartbeat(member_id="m1", member_epoch=2, topic_partitions=owned).error_code is E.NONE
    first = ctx.call(ctx.join_request(protocols=range_protocols(["foo"])))
    ctx.assignor.prepare({"m1": tps({"foo": [0, 1]}), first.member_id: tps({"foo": [2]})})
    joined = ctx.call(ctx.join_request(member_id=first.member_id, protocols=range_protocols(["foo"])))
    assert (joined.error_code, joined.generation_id) == (E.NONE, 3)
    synced = ctx.result(ctx.sync(joined.member_id, 3))
    assert (synced.error_code, synced.assignment) == (E.NONE, assignment(()))
    assert ctx.heartbeat(joined.member_id, 3) is E.NONE
    assert ctx.consumer_heartbeat(member_id="m1", member_epoch=2, rebalance_timeout_ms=300_000,
                                  subscribed_topic_names=("foo",), topic_partitions=()).error_code is E.NONE
    assert ctx.heartbeat(joined.member_id, 3) is E.REBALANCE_IN_PROGRESS
    ctx.consumer_heartbeat(member_id="m1", member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
    assert listed(ctx) == [("classic", "PreparingRebalance", CONSUMER)]
    response = ctx.consumer_heartbeat(member_id="m3", member_epoch=0, rebalance_timeout_ms=300_000,
                                      subscribed_topic_names=("foo",), topic_partitions=())
    assert response.error_code is E.GROUP_ID_NOT_FOUND
    ctx.assert_replays()


def test_upgrade_with_disabled_migration_policy():
    """testUpgradeWithDisabledMigrationPolicy: GROUP_ID_NOT_FOUND for a non-empty classic group."""
    ctx = Ctx(initial_delay_ms=0, topics={"foo": 3}, migration_policy=Policy.DISABLED)
    joined = _join_classic_dynamic(ctx, range_protocols(["foo"]))
    ctx.sync(joined.member_id, joined.generation_id,
             assignments={joined.member_id: assignment(tps({"foo": [0, 1, 2]}))})
    response = ctx.consumer_heartbeat(member_id="m2", member_epoch=0, rebalance_timeout_ms=300_000,
                                      subscribed_topic_names=("foo",), topic_partitions=())
    assert response.error_code is E.GROUP_ID_NOT_FOUND


def test_downgrade_with_disabled_migration_policy():
    """testDowngradeWithDisabledMigrationPolicy: the consumer-protocol member leaves, the group stays a
    consumer group (Assigning) with its classic member."""
    ctx = Ctx(initial_delay_ms=0, topics={"foo": 3}, migration_policy=Policy.DISABLED)
    ctx.consumer_heartbeat(member_id="m1", member_epoch=0, rebalance_timeout_ms=300_000,
                           subscribed_topic_names=("foo",), topic_partitions=())
    first = ctx.call(ctx.join_request(protocols=range_protocols(["foo"])))
    ctx.call(ctx.join_request(member_id=first.member_id, protocols=range_protocols(["foo"])))
    ctx.consumer_heartbeat(member_id="m1", member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
    assert listed(ctx) == [("consumer", "Assigning", CONSUMER)]


@pytest.mark.parametrize("static", [False, True], ids=["dynamic", "static"])
@pytest.mark.parametrize("cooperative", [False, True], ids=["eager", "cooperative"])
def test_online_migration(cooperative, static):
    """testOnlineMigrationWith{Eager,Cooperative}AssignmentStrategyAnd{Dynamic,Static}Members: a classic
    member owns foo-0..2; a consumer-protocol member joins (upgrade, rebalance); the classic member
    heartbeats (REBALANCE_IN_PROGRESS), commits and fetches offsets with its generation, rejoins (eager:
    having revoked everything; cooperative: keeping foo-0 and foo-1, then rejoining once foo-2 is gone)
    and syncs; the consumer member collects foo-2; it leaves and the group is classic again."""
    ctx = Ctx(initial_delay_ms=0, topics={"foo": 3})
    everything = tps({"foo": [0, 1, 2]})
    identity = dict(instance_id="instance-id-1") if static else {}
    if static:
        key = ctx.join(protocols=range_protocols(["foo"]), **identity)
        ctx.sleep(0)
        joined = ctx.result(key)
    else:
        joined = _join_classic_dynamic(ctx, range_protocols(["foo"]))
    m1, generation = joined.member_id, joined.generation_id
    synced = ctx.result(ctx.sync(m1, generation, assignments={m1: assignment(everything)}, **identity))
    assert synced.error_code is E.NONE and ctx.state() is S.STABLE
    ctx.assignor.prepare({m1: tps({"foo": [0, 1]}), "m2": tps({"foo": [2]})})
    m2_identity = dict(instance_id="instance-id-2") if static else {}
    response = ctx.consumer_heartbeat(member_id="m2", member_epoch=0, rebalance_timeout_ms=300_000,
                                      subscribed_topic_names=("foo",), topic_partitions=(), **m2_identity)
    assert (response.error_code, response.member_epoch, response.assignment) == (E.NONE, generation + 1, ())
    # The classic member learns of the rebalance; its generation still commits and fetches.
    assert ctx.heartbeat(m1, generation, **identity) is E.REBALANCE_IN_PROGRESS
    assert ctx.commit(member_id=m1, generation_id=generation, offset=7, **identity) is E.NONE
    assert ctx.fetch().partitions[0].committed.offset == 7
    owned = everything if cooperative else frozenset()
    rejoined = ctx.call(ctx.join_request(member_id=m1, protocols=range_protocols(["foo"], owned=owned),
                                         **identity))
    if cooperative:
        # Still owns foo-2: stays at its epoch until a JoinGroup no longer lists it.
        assert (rejoined.error_code, rejoined.generation_id) == (E.NONE, generation)
        kept = ctx.result(ctx.sync(m1, generation, **identity))
        assert decode_assignment(kept.assignment).partitions == tuple(sorted(tps({"foo": [0, 1]})))
        rejoined = ctx.call(ctx.join_request(member_id=m1, protocols=range_protocols(
            ["foo"], owned=tps({"foo": [0, 1]})), **identity))
    assert (rejoined.error_code, rejoined.generation_id) == (E.NONE, generation + 1)
    final = ctx.result(ctx.sync(m1, generation + 1, **identity))
    assert decode_assignment(final.assignment).partitions == tuple(sorted(tps({"foo": [0, 1]})))
    assert ctx.heartbeat(m1, generation + 1, **identity) is E.NONE
    response = ctx.consumer_heartbeat(member_id="m2", member_epoch=generation + 1, **m2_identity)
    assert frozenset(response.assignment) == tps({"foo": [2]})
    assert listed(ctx) == [("consumer", "Stable", CONSUMER)]
    ctx.consumer_heartbeat(member_id="m2", member_epoch=LEAVE_GROUP_MEMBER_EPOCH, **m2_identity)
    assert listed(ctx) == [("classic", "PreparingRebalance", CONSUMER)]
    kept_after_downgrade = decode_assignment(ctx.group().members[m1].assignment).partitions
    assert kept_after_downgrade == tuple(sorted(tps({"foo": [0, 1]})))
    ctx.assert_replays()


def test_migration_policy_config_is_kafkas():
    """GroupCoordinatorConfig.CONSUMER_GROUP_MIGRATION_POLICY_DEFAULT is bidirectional; the value is read
    case-insensitively (ConfigDef.CaseInsensitiveValidString) and anything else is a ConfigError."""
    from kgroup.core.coordinator import GroupCoordinatorConfig
    from kgroup.errors import ConfigError
    assert GroupCoordinatorConfig().consumer_group_migration_policy is Policy.BIDIRECTIONAL
    assert GroupCoordinatorConfig(consumer_group_migration_policy="UpGrade").consumer_group_migration_policy \
        is Policy.UPGRADE
    assert [(p.upgrade_enabled, p.downgrade_enabled) for p in Policy] == [
        (False, False), (True, False), (False, True), (True, True)]
    with pytest.raises(ConfigError, match="consumer_group_migration_policy must be one of"):
        GroupCoordinatorConfig(consumer_group_migration_policy="sideways")
