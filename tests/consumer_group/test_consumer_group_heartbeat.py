"""ConsumerGroupHeartbeat on the in-memory coordinator, ported from Kafka's GroupMetadataManagerTest
(org.apache.kafka.coordinator.group); each test names its Kafka test.  Kafka's MockPartitionAssignor
is the harness's PreparedAssignor, and a group "replayed" in Kafka's tests is loaded from records here.
Every step checks the coordinator's invariants, and most tests end by reloading the records written
(what a coordinator failover does) and comparing.
"""
from __future__ import annotations

from consumer_group_harness import GROUP, PREPARED_CONFIG, Driver, PreparedAssignor, group_records, ok, tps

from kgroup.core.consumer_group.group import ConsumerGroupState
from kgroup.core.consumer_group.member import ConsumerGroupMember, MemberState
from kgroup.core.consumer_group_messages import ConsumerGroupHeartbeatRequest
from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode

E = ErrorCode
M = MemberState
S = ConsumerGroupState


def stable_member(member_id: str, epoch: int, assigned: dict, **fields) -> ConsumerGroupMember:
    fields.setdefault("subscribed_topic_names", ("foo", "bar"))
    fields.setdefault("rebalance_timeout_ms", 5000)
    fields.setdefault("server_assignor", "prepared")
    return ConsumerGroupMember(member_id, member_epoch=epoch, previous_member_epoch=epoch - 1, state=M.STABLE,
                               assigned_partitions=tps(assigned), **fields)


def two_member_group(topics=None) -> Driver:
    """A stable group at epoch 10: m1 owns foo 0-2 and bar 0-1, m2 owns foo 3-5 and bar 2."""
    m1 = stable_member("m1", 10, {"foo": [0, 1, 2], "bar": [0, 1]})
    m2 = stable_member("m2", 10, {"foo": [3, 4, 5], "bar": [2]})
    records = group_records(GROUP, 10, [m1, m2], {"m1": m1.assigned_partitions, "m2": m2.assigned_partitions},
                            metadata={"foo": 6, "bar": 3})
    return Driver(topics or {"foo": 6, "bar": 3}, PREPARED_CONFIG, records)


def test_heartbeat_request_validation():
    """testConsumerHeartbeatRequestValidation (a regex is valid input since KIP-848 regex subscriptions:
    tests/consumer_group/test_consumer_group_regex.py)."""
    d = Driver({"foo": 1})
    cases = [
        dict(group_id="", member_id="m", member_epoch=0),
        dict(member_id="", member_epoch=1),                                   # v1: member id required
        dict(member_id="m", member_epoch=0, instance_id=""),
        dict(member_id="m", member_epoch=0, rack_id=""),
        # A join without a rebalance timeout, without owned partitions, without topics:
        dict(member_id="m", member_epoch=0, subscribed_topic_names=("foo",), topic_partitions=()),
        dict(member_id="m", member_epoch=0, rebalance_timeout_ms=5000, subscribed_topic_names=("foo",)),
        dict(member_id="m", member_epoch=0, rebalance_timeout_ms=5000, topic_partitions=()),  # no topics
        dict(member_id="m", member_epoch=-2),  # a static leave without an instance id
        dict(member_id="m", member_epoch=-3),
    ]
    for fields in cases:
        request = ConsumerGroupHeartbeatRequest(**{"group_id": GROUP, **fields})
        assert d.call(request).error_code is E.INVALID_REQUEST, fields
    unsupported = d.join("m", ["foo"], server_assignor="bar")
    assert unsupported.error_code is E.UNSUPPORTED_ASSIGNOR
    assert "Supported assignors" in unsupported.error_message
    assert d.coordinator.group_ids() == []  # nothing was created by a refused request


def test_member_id_generation():
    """testMemberIdGeneration: v0 lets the coordinator generate the member id (KIP-1082: v1 clients do).
    A new group starts at epoch 1, so its first assignment is epoch 2 (KAFKA-20268, Kafka 4.4)."""
    d = Driver({"foo": 6})
    response = ok(d.join("", ["foo"], api_version=0))
    assert response.member_id and response.member_epoch == 2
    assert list(d.group().members) == [response.member_id]


def test_unknown_group_id():
    """testUnknownGroupId."""
    d = Driver({"foo": 6})
    assert d.heartbeat("m", 100, topic_partitions=()).error_code is E.GROUP_ID_NOT_FOUND


def test_unknown_member_id_joins_consumer_group():
    """testUnknownMemberIdJoinsConsumerGroup."""
    d = Driver({"foo": 6})
    ok(d.join("m1", ["foo"]))
    assert d.heartbeat("unknown", 1, topic_partitions=()).error_code is E.UNKNOWN_MEMBER_ID


def test_member_epoch_validation():
    """testConsumerGroupMemberEpochValidation: greater or smaller epochs are fenced, except the previous
    epoch with a subset of the assignment (the response that bumped the epoch was lost)."""
    member = stable_member("m", 100, {"foo": [1, 2, 3]})
    records = group_records(GROUP, 100, [member], {"m": member.assigned_partitions},
                            metadata={"foo": 6, "bar": 3})
    d = Driver({"foo": 6, "bar": 3}, PREPARED_CONFIG, records)
    d.assignor.prepare({"m": tps({"foo": [1, 2, 3]})})
    full = dict(rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"))
    assert d.heartbeat("m", 200, **full).error_code is E.FENCED_MEMBER_EPOCH
    assert d.heartbeat("m", 50, **full).error_code is E.FENCED_MEMBER_EPOCH
    assert d.heartbeat("m", 99, **full).error_code is E.FENCED_MEMBER_EPOCH  # previous epoch, no partitions
    assert d.heartbeat("m", 99, topic_partitions=tps({"foo": [1, 2, 3, 4]}), **full).error_code \
        is E.FENCED_MEMBER_EPOCH  # not a subset
    assert ok(d.heartbeat("m", 99, topic_partitions=tps({"foo": [1, 2]}), **full)).member_epoch == 100


def test_member_joins_empty_consumer_group():
    """testMemberJoinsEmptyConsumerGroup: epoch 2 (Kafka 4.4 creates the group at epoch 1 with an empty
    target at epoch 1, and renumbered this test so: KAFKA-20268, apache/kafka#21700), the whole target
    at once."""
    d = Driver({"foo": 6, "bar": 3}, PREPARED_CONFIG)
    d.assignor.prepare({"m": tps({"foo": range(6), "bar": range(3)})})
    response = ok(d.join("m", ["foo", "bar"], server_assignor="prepared"))
    assert (response.member_epoch, response.heartbeat_interval_ms) == (2, 5000)
    assert response.assignment == tuple(sorted(tps({"foo": range(6), "bar": range(3)})))
    group = d.group()
    assert (group.group_epoch, group.assignment_epoch, group.state) == (2, 2, S.STABLE)
    assert group.subscription_metadata == {"foo": 6, "bar": 3}
    d.assert_replays()


def test_updating_subscription_triggers_new_target_assignment():
    """testUpdatingSubscriptionTriggersNewTargetAssignment."""
    member = stable_member("m", 10, {"foo": range(6)}, subscribed_topic_names=("foo",))
    d = Driver({"foo": 6, "bar": 3}, PREPARED_CONFIG,
               group_records(GROUP, 10, [member], {"m": member.assigned_partitions}, metadata={"foo": 6}))
    d.assignor.prepare({"m": tps({"foo": range(6), "bar": range(3)})})
    response = ok(d.heartbeat("m", 10, subscribed_topic_names=("foo", "bar")))
    assert response.member_epoch == 11
    assert response.assignment == tuple(sorted(tps({"foo": range(6), "bar": range(3)})))
    assert d.group().group_epoch == 11 and d.group().subscription_metadata == {"foo": 6, "bar": 3}
    d.assert_replays()


def test_new_joining_member_triggers_new_target_assignment():
    """testNewJoiningMemberTriggersNewTargetAssignment: the newcomer waits for what others must release."""
    d = two_member_group()
    d.assignor.prepare({"m1": tps({"foo": [0, 1], "bar": [0]}), "m2": tps({"foo": [2, 3], "bar": [1]}),
                        "m3": tps({"foo": [4, 5], "bar": [2]})})
    response = ok(d.join("m3", ["foo", "bar"], server_assignor="prepared"))
    assert response.member_epoch == 11
    # foo 4-5 and bar 2 are still m2's: m3 gets nothing yet.
    assert response.assignment == ()
    group = d.group()
    assert group.members["m3"].state is M.UNRELEASED_PARTITIONS
    assert (group.group_epoch, group.assignment_epoch, group.state) == (11, 11, S.RECONCILING)
    d.assert_replays()


def test_leaving_member_bumps_group_epoch():
    """testLeavingMemberBumpsGroupEpoch: the leaver's partitions are free at once."""
    d = two_member_group()
    response = ok(d.heartbeat("m2", -1))
    assert (response.member_id, response.member_epoch) == ("m2", -1)
    group = d.group()
    assert group.group_epoch == 11 and list(group.members) == ["m1"]
    assert group.partition_epoch(tps({"foo": [3]}).__iter__().__next__()) == -1
    d.assert_replays()


def test_reconciliation_process():
    """testReconciliationProcess: a third member joins a two-member group; revocations and releases
    interleave until all three are stable at epoch 11."""
    d = two_member_group()
    d.assignor.prepare({"m1": tps({"foo": [0, 1], "bar": [0]}), "m2": tps({"foo": [2, 3], "bar": [2]}),
                        "m3": tps({"foo": [4, 5], "bar": [1]})})
    # m3 joins: epoch 11, nothing is free yet.
    r3 = ok(d.join("m3", ["foo", "bar"], server_assignor="prepared"))
    assert (r3.member_epoch, r3.assignment) == (11, ())
    # m1 heartbeats (no owned partitions reported): it must revoke foo 2 and bar 1, and stays at 10.
    r1 = ok(d.heartbeat("m1", 10))
    assert r1.member_epoch == 10 and r1.assignment == tuple(sorted(tps({"foo": [0, 1], "bar": [0]})))
    assert d.group().members["m1"].state is M.UNREVOKED_PARTITIONS
    # m2 revokes foo 4-5 but must wait for foo 2 (still m1's).
    r2 = ok(d.heartbeat("m2", 10))
    assert r2.member_epoch == 10 and d.group().members["m2"].state is M.UNREVOKED_PARTITIONS
    assert r2.assignment == tuple(sorted(tps({"foo": [3], "bar": [2]})))
    r2 = ok(d.heartbeat("m2", 10, topic_partitions=tps({"foo": [3], "bar": [2]})))
    # Next epoch; its assignment did not change since the last response, so none is sent.
    assert r2.member_epoch == 11 and r2.assignment is None
    assert d.group().members["m2"].state is M.UNRELEASED_PARTITIONS
    # m3 now gets foo 4-5; bar 1 is still m1's.
    r3 = ok(d.heartbeat("m3", 11))
    assert r3.assignment == tuple(sorted(tps({"foo": [4, 5]})))
    assert d.group().members["m3"].state is M.UNRELEASED_PARTITIONS
    # m1 acknowledges its revocation: stable at 11.
    r1 = ok(d.heartbeat("m1", 10, topic_partitions=tps({"foo": [0, 1], "bar": [0]})))
    assert r1.member_epoch == 11 and d.group().members["m1"].state is M.STABLE
    # m2 and m3 get what m1 released.
    assert ok(d.heartbeat("m2", 11)).assignment == tuple(sorted(tps({"foo": [2, 3], "bar": [2]})))
    assert ok(d.heartbeat("m3", 11)).assignment == tuple(sorted(tps({"foo": [4, 5], "bar": [1]})))
    assert all(m.state is M.STABLE and m.member_epoch == 11 for m in d.group().members.values())
    assert d.group().state is S.STABLE
    d.assert_replays()


def test_heartbeat_full_response():
    """testConsumerGroupHeartbeatFullResponse: a full heartbeat always carries the assignment, an
    incremental one only when it changed."""
    d = Driver({"foo": 2}, PREPARED_CONFIG)
    d.assignor.prepare({"m": tps({"foo": [0, 1]})})
    ok(d.join("m", ["foo"]))
    assert ok(d.heartbeat("m", 2)).assignment is None
    full = ok(d.heartbeat("m", 2, rebalance_timeout_ms=5000, subscribed_topic_names=("foo",),
                          topic_partitions=tps({"foo": [0, 1]})))
    assert full.assignment == tuple(sorted(tps({"foo": [0, 1]})))


def test_new_member_is_rejected_when_maximum_members_is_reached():
    """testNewMemberIsRejectedWithMaximumMembersIsReached."""
    d = Driver({"foo": 6}, GroupCoordinatorConfig(consumer_group_max_size=2))
    ok(d.join("m1", ["foo"]))
    ok(d.join("m2", ["foo"]))
    assert d.join("m3", ["foo"]).error_code is E.GROUP_MAX_SIZE_REACHED
    assert ok(d.heartbeat("m1", d.group().members["m1"].member_epoch)).member_id == "m1"


def test_consumer_group_states():
    """testConsumerGroupStates: Empty -> Assigning/Reconciling -> Stable -> Empty."""
    d = Driver({"foo": 6})
    ok(d.join("m1", ["foo"]))
    assert d.group().state is S.STABLE
    ok(d.join("m2", ["foo"]))
    assert d.group().state is S.RECONCILING
    ok(d.heartbeat("m1", 2, topic_partitions=tps({"foo": range(6)})))
    ok(d.heartbeat("m1", 2, topic_partitions=d.group().members["m1"].assigned_partitions))
    ok(d.heartbeat("m2", 3, topic_partitions=()))
    assert d.group().state is S.STABLE
    ok(d.heartbeat("m1", -1))
    ok(d.heartbeat("m2", -1))
    assert d.group().state is S.EMPTY
    d.assert_replays()


def test_topic_partition_count_change_bumps_group_epoch():
    """testOnNewMetadataImage (as kgroup does it): a grown topic bumps the epoch at the next heartbeat."""
    d = Driver({"foo": 2})
    ok(d.join("m", ["foo"]))
    d.topics["foo"] = 4
    response = ok(d.heartbeat("m", 2))
    assert response.member_epoch == 3 and len(response.assignment) == 4
    assert d.group().subscription_metadata == {"foo": 4}


# -- timeouts ----------------------------------------------------------------------------------


def test_session_timeout_lifecycle_and_expiration():
    """testSessionTimeoutLifecycle / testSessionTimeoutExpiration: each heartbeat pushes the deadline;
    silence past group.consumer.session.timeout.ms fences the member and bumps the epoch."""
    d = Driver({"foo": 6})
    ok(d.join("m", ["foo"]))
    d.advance(40_000)
    ok(d.heartbeat("m", 2))
    d.advance(40_000)
    assert "m" in d.group().members
    d.advance(5_001)
    # The emptied group's assignment epoch catches up with its group epoch (KAFKA-20442).
    group = d.group()
    assert "m" not in group.members and (group.group_epoch, group.assignment_epoch) == (3, 3)
    assert d.heartbeat("m", 2).error_code is E.UNKNOWN_MEMBER_ID
    d.assert_replays()


def test_rebalance_timeout_lifecycle_and_expiration():
    """testRebalanceTimeoutLifecycle / testRebalanceTimeoutExpiration: a member that does not revoke
    within its rebalance timeout is fenced; its partitions go to the member waiting for them."""
    d = Driver({"foo": 2}, PREPARED_CONFIG)
    d.assignor.prepare({"m1": tps({"foo": [0, 1]})})
    ok(d.join("m1", ["foo"], rebalance_timeout_ms=12_000))
    d.assignor.prepare({"m1": tps({"foo": [0]}), "m2": tps({"foo": [1]})})
    ok(d.join("m2", ["foo"]))
    r1 = ok(d.heartbeat("m1", 2))
    assert d.group().members["m1"].state is M.UNREVOKED_PARTITIONS
    assert r1.assignment == tuple(tps({"foo": [0]}))
    d.advance(6_000)
    ok(d.heartbeat("m1", 2))  # heartbeating does not stop the rebalance timer
    ok(d.heartbeat("m2", 3))
    d.advance(6_001)
    assert "m1" not in d.group().members
    d.assignor.prepare({"m2": tps({"foo": [0, 1]})})
    assert ok(d.heartbeat("m2", 3)).assignment == tuple(sorted(tps({"foo": [0, 1]})))
    d.assert_replays()


def test_revoking_in_time_cancels_rebalance_timeout():
    """testRebalanceTimeoutLifecycle, second half: revoking cancels the timer."""
    d = Driver({"foo": 2}, PREPARED_CONFIG)
    d.assignor.prepare({"m1": tps({"foo": [0, 1]})})
    ok(d.join("m1", ["foo"], rebalance_timeout_ms=12_000))
    d.assignor.prepare({"m1": tps({"foo": [0]}), "m2": tps({"foo": [1]})})
    ok(d.join("m2", ["foo"]))
    ok(d.heartbeat("m1", 2))
    ok(d.heartbeat("m1", 2, topic_partitions=tps({"foo": [0]})))
    assert d.group().members["m1"].state is M.STABLE
    d.advance(12_001)
    assert "m1" in d.group().members


# -- static members ----------------------------------------------------------------------------


def test_no_group_epoch_bump_when_static_member_temporarily_leaves_and_gets_assignment_back():
    """testNoGroupEpochBumpWhenStaticMemberTemporarilyLeaves and
    testStaticMemberGetsBackAssignmentUponRejoin."""
    d = Driver({"foo": 6})
    ok(d.join("s1", ["foo"], instance_id="i1"))
    ok(d.join("m2", ["foo"]))
    ok(d.heartbeat("s1", 2, topic_partitions=tps({"foo": range(6)})))
    ok(d.heartbeat("s1", 2, topic_partitions=d.group().members["s1"].assigned_partitions))
    ok(d.heartbeat("m2", 3, topic_partitions=()))
    owned = d.group().members["s1"].assigned_partitions
    epoch = d.group().group_epoch
    left = ok(d.heartbeat("s1", -2, instance_id="i1"))
    assert left.member_epoch == -2 and d.group().group_epoch == epoch
    # Its partitions stay withheld while it is away.
    assert all(d.group().partition_epoch(tp) == -2 for tp in owned)
    rejoined = ok(d.join("s1-new", ["foo"], instance_id="i1"))
    assert rejoined.member_epoch == epoch and frozenset(rejoined.assignment) == owned
    assert d.group().group_epoch == epoch and "s1" not in d.group().members
    d.assert_replays()


def test_leaving_static_member_bumps_group_epoch():
    """testLeavingStaticMemberBumpsGroupEpoch."""
    d = Driver({"foo": 6})
    ok(d.join("s1", ["foo"], instance_id="i1"))
    ok(d.heartbeat("s1", -1, instance_id="i1"))
    assert d.group().group_epoch == 3 and not d.group().members


def test_unreleased_instance_id_when_new_member_joins_with_in_use_instance_id():
    """testShouldThrownUnreleasedInstanceIdExceptionWhenNewMemberJoinsWithInUseInstanceId."""
    d = Driver({"foo": 6})
    ok(d.join("s1", ["foo"], instance_id="i1"))
    assert d.join("s2", ["foo"], instance_id="i1").error_code is E.UNRELEASED_INSTANCE_ID


def test_unknown_static_member_joins_and_leaves():
    """testShouldThrownUnknownMemberIdExceptionWhenUnknownStaticMemberJoins /
    testShouldThrowUnknownMemberIdExceptionWhenUnknownStaticMemberLeaves."""
    d = Driver({"foo": 6})
    ok(d.join("s1", ["foo"], instance_id="i1"))
    assert d.heartbeat("s2", 1, instance_id="i2").error_code is E.UNKNOWN_MEMBER_ID
    assert d.heartbeat("s2", -2, instance_id="i2").error_code is E.UNKNOWN_MEMBER_ID


def test_fenced_instance_id_for_static_member_with_different_member_id():
    """testShouldThrowFencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdJoins / ...Leaves."""
    d = Driver({"foo": 6})
    ok(d.join("s1", ["foo"], instance_id="i1"))
    assert d.heartbeat("other", 1, instance_id="i1").error_code is E.FENCED_INSTANCE_ID
    assert d.heartbeat("other", -1, instance_id="i1").error_code is E.FENCED_INSTANCE_ID


def test_static_member_epoch_validation():
    """testConsumerGroupMemberEpochValidationForStaticMember."""
    d = Driver({"foo": 6})
    ok(d.join("s1", ["foo"], instance_id="i1"))
    assert d.heartbeat("s1", 5, instance_id="i1").error_code is E.FENCED_MEMBER_EPOCH


def test_session_timeout_expiration_static_member():
    """testSessionTimeoutExpirationStaticMember: a static member away (-2) past its session is removed."""
    d = Driver({"foo": 6})
    ok(d.join("s1", ["foo"], instance_id="i1"))
    ok(d.heartbeat("s1", -2, instance_id="i1"))
    d.advance(45_001)
    assert not d.group().members and d.group().static_members == {}


# -- issue 23: a heartbeat is all or nothing; blank ids; replay without a header ---------------------


class _FailingAssignor(PreparedAssignor):
    """Kafka's test mocks the assignor to throw PartitionAssignorException("Assignment failed.")."""

    def assign(self, members, partitions_per_topic):
        raise RuntimeError("Assignment failed.")


def test_partition_assignor_exception_on_regular_heartbeat():
    """testPartitionAssignorExceptionOnRegularHeartbeat: a joining member whose target assignment fails is
    answered UNKNOWN_SERVER_ERROR and nothing changes: no group, no member, no epoch, no timer, no record
    (kgroup used to add the member, bump the epoch, leave the group Assigning with no session timer and
    write the records at the next call)."""
    d = Driver({"foo": 6, "bar": 3}, PREPARED_CONFIG)
    d._assignors["prepared"] = _FailingAssignor()
    failed = d.join("m1", ["foo", "bar"], server_assignor="prepared")
    assert failed.error_code is E.UNKNOWN_SERVER_ERROR
    # The first assignment of a new group is for epoch 2 (KAFKA-20268).
    assert failed.error_message == "Failed to compute a new target assignment for epoch 2: Assignment failed."
    assert d.coordinator.consumer_group(GROUP) is None and d.coordinator.group_ids() == []
    assert d.records == [] and d.coordinator.get_timer() is None
    d.advance(60_000)  # the next call writes nothing left over either
    assert d.records == []


def test_partition_assignor_exception_leaves_an_existing_group_unchanged():
    """testPartitionAssignorExceptionOnRegularHeartbeat on a populated group: a new member's join fails
    and the group keeps its epochs, members, targets and timers (assert_invariants runs after each call)."""
    d = two_member_group()
    before, written = d.coordinator.persisted_view(), len(d.records)
    d.advance(1_000)
    deadline = d.coordinator.get_timer()  # the members' session timers, armed at load (time 0)
    d._assignors["prepared"] = _FailingAssignor()
    assert d.join("m3", ["foo"]).error_code is E.UNKNOWN_SERVER_ERROR
    assert d.heartbeat("m1", 10, subscribed_topic_names=("foo",)).error_code is E.UNKNOWN_SERVER_ERROR
    assert d.coordinator.persisted_view() == before and len(d.records) == written
    assert (d.group().group_epoch, d.group().state) == (10, S.STABLE)
    assert d.coordinator.get_timer() == deadline  # a refused heartbeat is not a heartbeat
    d.assert_replays()


def test_consumer_heartbeat_request_validation_trims_ids():
    """testConsumerHeartbeatRequestValidation (Kafka 4): GroupId, InstanceId, RackId and MemberId are
    checked trimmed (throwIfEmptyString), with Kafka's messages.  (kgroup took "   " as a group id.)"""
    d = Driver({"foo": 1})
    join = dict(member_epoch=0, rebalance_timeout_ms=5000, subscribed_topic_names=("foo",),
                topic_partitions=())
    cases = [
        (dict(group_id="   ", member_id="m", **join), "GroupId can't be empty."),
        (dict(group_id="\t\n", member_id="m", **join), "GroupId can't be empty."),
        (dict(group_id=GROUP, member_id="m", instance_id="  ", **join), "InstanceId can't be empty."),
        (dict(group_id=GROUP, member_id="m", rack_id=" ", **join), "RackId can't be empty."),
        (dict(group_id=GROUP, member_id="  ", **join), "MemberId can't be empty."),          # v1
        (dict(group_id=GROUP, member_id=" ", member_epoch=1), "MemberId can't be empty."),
        (dict(group_id=GROUP, member_id=" ", member_epoch=-1, api_version=0), "MemberId can't be empty."),
        (dict(group_id=GROUP, member_id="m", member_epoch=0, api_version=0),
         "RebalanceTimeoutMs must be provided in first request."),
        (dict(group_id=GROUP, member_id="m", member_epoch=0, rebalance_timeout_ms=5000),
         "TopicPartitions must be empty when (re-)joining."),
        (dict(group_id=GROUP, member_id="m", member_epoch=0, rebalance_timeout_ms=5000, topic_partitions=()),
         "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
        (dict(group_id=GROUP, member_id="m", member_epoch=-2), "InstanceId can't be null."),
        (dict(group_id=GROUP, member_id="m", member_epoch=-3), "MemberEpoch is invalid."),
    ]
    for fields, message in cases:
        response = d.call(ConsumerGroupHeartbeatRequest(**fields))
        assert (response.error_code, response.error_message) == (E.INVALID_REQUEST, message), fields
    assert d.coordinator.group_ids() == [] and d.records == []
    # Java's trim removes control characters and spaces only: a no-break space is an id.
    ok(d.join("m", ["foo"], group_id="\u00a0"))


def test_member_joins_with_an_empty_subscription():
    """Kafka 4's throwIfConsumerGroupHeartbeatRequestIsInvalid accepts an empty topic list ("they are not
    subscribed to any topics, but they are part of the group"); only a null list and regex are refused."""
    d = Driver({"foo": 2})
    response = ok(d.join("m", []))
    # No subscribed topic, so no group epoch bump (Kafka's hasMemberSubscriptionChanged compares topic
    # names): the member takes the new group's initial empty target at epoch 1 (KAFKA-20268).
    assert response.member_epoch == 1 and response.assignment == ()
    assert (d.group().group_epoch, d.group().assignment_epoch) == (1, 1)
    assert d.group().members["m"].subscribed_topic_names == ()
    d.assert_replays()


def test_member_in_unknown_state_is_fenced_and_nothing_changes():
    """CurrentAssignmentBuilderTest.testUnknownState through the coordinator: a member in the UNKNOWN state
    (a newer coordinator's record) that may own partitions gets FENCED_MEMBER_EPOCH, and the heartbeat
    aborts: the member stays, the group epoch is not bumped, no record is written (kgroup removed the
    member and bumped the epoch).  It is reconciled from scratch once it reports owning nothing."""
    unknown = ConsumerGroupMember("m1", member_epoch=10, previous_member_epoch=9, state=M.UNKNOWN,
                                  subscribed_topic_names=("foo",), rebalance_timeout_ms=5000,
                                  server_assignor="prepared", assigned_partitions=tps({"foo": [0, 1]}))
    records = group_records(GROUP, 11, [unknown], {"m1": tps({"foo": [0, 1, 2]})}, metadata={"foo": 3})
    d = Driver({"foo": 3}, PREPARED_CONFIG, records)
    before, written = d.coordinator.persisted_view(), len(d.records)
    fenced = d.heartbeat("m1", 10, topic_partitions=tps({"foo": [0, 1]}))
    assert fenced.error_code is E.FENCED_MEMBER_EPOCH
    assert d.heartbeat("m1", 10).error_code is E.FENCED_MEMBER_EPOCH   # ownership not reported
    assert d.coordinator.persisted_view() == before and len(d.records) == written
    assert d.group().members["m1"].state is M.UNKNOWN and d.group().group_epoch == 11
    reconciled = ok(d.heartbeat("m1", 10, topic_partitions=()))
    assert reconciled.member_epoch == 11 and reconciled.assignment == tuple(sorted(tps({"foo": [0, 1, 2]})))
    d.assert_replays()


def test_replay_consumer_group_member_metadata():
    """testReplayConsumerGroupMemberMetadata: a member record of a group whose metadata record was not
    seen creates the group and the member (kgroup dropped it)."""
    from kgroup.core.coordinator import GroupCoordinator
    from kgroup.core.consumer_group.records import ConsumerGroupMemberRecord
    member = ConsumerGroupMember("member", client_id="clientid", client_host="clienthost",
                                 server_assignor="range", rack_id="rackid", subscribed_topic_names=("foo",))
    loaded = GroupCoordinator.load([ConsumerGroupMemberRecord("foo", member)], 0)
    group = loaded.consumer_group("foo")
    assert group is not None and group.members["member"] == member
    # Kafka creates the group through its constructor, at epoch 1 with target epoch 1 (KAFKA-20268).
    assert (group.group_epoch, group.assignment_epoch) == (1, 1)
    loaded.assert_invariants()


def test_replay_consumer_group_target_assignment_member():
    """testReplayConsumerGroupTargetAssignmentMember: a target-assignment record alone creates the group."""
    from kgroup.core.coordinator import GroupCoordinator
    from kgroup.core.consumer_group.records import ConsumerGroupTargetAssignmentRecord
    record = ConsumerGroupTargetAssignmentRecord("foo", "m1", tps({"t": [0, 1, 2]}))
    loaded = GroupCoordinator.load([record], 0)
    group = loaded.consumer_group("foo")
    assert group is not None and group.target_of("m1") == tps({"t": [0, 1, 2]})


def test_replay_consumer_group_current_member_assignment():
    """testReplayConsumerGroupCurrentMemberAssignment (kgroup's member record carries the current
    assignment too): the group and the member are created, UNRELEASED_PARTITIONS at epoch 10."""
    from kgroup.core.coordinator import GroupCoordinator
    from kgroup.core.consumer_group.records import ConsumerGroupMemberRecord
    member = ConsumerGroupMember("member", member_epoch=10, previous_member_epoch=9,
                                 state=M.UNRELEASED_PARTITIONS, assigned_partitions=tps({"t": [0, 1, 2]}))
    loaded = GroupCoordinator.load([ConsumerGroupMemberRecord("bar", member)], 0)
    group = loaded.consumer_group("bar")
    assert group is not None and group.members["member"] == member
    assert {group.partition_owner(tp) for tp in tps({"t": [0, 1, 2]})} == {"member"}
    loaded.assert_invariants()


def test_replay_tombstones_of_groups_that_do_not_exist_create_nothing():
    """testReplayConsumerGroupMemberMetadataTombstone / TargetAssignmentMemberTombstone /
    CurrentMemberAssignmentTombstone: a tombstone alone is a no-op."""
    from kgroup.core.coordinator import GroupCoordinator
    from kgroup.core.consumer_group.records import ConsumerGroupMemberTombstone
    loaded = GroupCoordinator.load([ConsumerGroupMemberTombstone("bar", "m1")], 0)
    assert loaded.consumer_group("bar") is None and loaded.group_ids() == []
