"""KIP-848 consumer groups: ConsumerGroupHeartbeat epochs, fencing, revocation before reassignment,
static leave, server assignors, ConsumerGroupDescribe, OffsetCommit with member epochs.

Kafka sources: ``GroupMetadataManagerTest`` (testConsumerGroup..., testMemberJoins..., testLeavingMember...,
testFencingMember...), ``OffsetMetadataManagerTest`` (testConsumerGroupOffsetCommit...), KIP-848, KIP-1082.
"""
from __future__ import annotations

from typing import Any

from kgroup.broker_conformance import builders
from kgroup.broker_conformance.normalise import canonical
from kgroup.broker_conformance.members import ConsumerMember, stable_group
from kgroup.broker_conformance.scenario import ScenarioContext, scenario


def _describe(ctx: ScenarioContext, member: ConsumerMember, version: int = 1) -> None:
    ctx.call(member.connection, builders.consumer_describe(version, member.group_id),
             f"ConsumerGroupDescribe v{version}")


def _join(version: int) -> None:
    @scenario(f"consumer.join.v{version}", "consumer-848",
              f"ConsumerGroupHeartbeat v{version} with epoch 0 joins a new group: an epoch, the heartbeat "
              "interval and every partition of the subscribed topic "
              "(testConsumerGroupMemberJoinsEmptyGroup...)")
    def run(ctx: ScenarioContext) -> None:
        ctx.create_topic(ctx.name("t"), 3)
        member = ConsumerMember(ctx, ctx.name("g"), "A", version=version, topics=(ctx.name("t"),))
        member.heartbeat()
        member.heartbeat()
        _describe(ctx, member)


for _v in (0, 1):
    _join(_v)


@scenario("consumer.join.v1-requires-member-id", "consumer-848",
          "ConsumerGroupHeartbeat v1 with an empty member id: INVALID_REQUEST (KIP-1082: the client makes "
          "its member id)")
def _v1_member_id(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    member = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
    member.heartbeat(member_id="")


def _invalid(scenario_id: str, description: str, **fields: object) -> None:
    @scenario(scenario_id, "consumer-848", description)
    def run(ctx: ScenarioContext) -> None:
        ctx.create_topic(ctx.name("t"))
        member = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
        member.heartbeat(**fields)  # type: ignore[arg-type]


_invalid("consumer.join.no-rebalance-timeout", "Joining (epoch 0) without a rebalance timeout: "
                                               "INVALID_REQUEST "
         "(GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid)", rebalance_timeout_ms=-1)
_invalid("consumer.join.no-subscription", "Joining (epoch 0) with neither topic names nor a regex: "
         "INVALID_REQUEST (throwIfConsumerGroupHeartbeatRequestIsInvalid)", topics=None)
_invalid("consumer.join.invalid-regex", "Joining with a SubscribedTopicRegex RE2/J refuses (a lookahead): "
         "INVALID_REGULAR_EXPRESSION (128) with Kafka's message (Utils.throwIfRegularExpressionIsInvalid, "
         "KAFKA-17593)", topics=None, regex="^orders(?=-eu)")
_invalid("consumer.join.regex-not-yet-resolved", "Joining with only a SubscribedTopicRegex: the first answer "
         "assigns nothing, the regex is resolved afterwards (GroupMetadataManager."
         "maybeUpdateRegularExpressions: testConsumerGroupMemberJoinsWithNewRegex)",
         topics=None, regex="^t.*")
_invalid("consumer.join.no-owned-partitions", "Joining (epoch 0) with null owned partitions (Kafka 4.4 "
                                              "takes it as none owned) "
         "(throwIfConsumerGroupHeartbeatRequestIsInvalid)", owned=None)
_invalid("consumer.join.unknown-assignor", "Joining with a server assignor the broker does not have: "
         "UNSUPPORTED_ASSIGNOR (testConsumerGroupHeartbeatWithUnsupportedAssignor...)", assignor="nope")
_invalid("consumer.heartbeat.epoch-below-minus-two", "A heartbeat with member epoch -3: INVALID_REQUEST "
         "(throwIfConsumerGroupHeartbeatRequestIsInvalid)", epoch=-3)


@scenario("consumer.join.empty-group-id", "consumer-848",
          "ConsumerGroupHeartbeat with an empty group id: INVALID_REQUEST")
def _empty_group(ctx: ScenarioContext) -> None:
    connection = ctx.connect()
    ctx.call(connection, builders.consumer_heartbeat(1, "", ctx.new_member_id(), 0, rebalance_timeout_ms=5000,
                                                     topics=["t"], owned={}))


@scenario("consumer.heartbeat.unknown-member", "consumer-848",
          "A heartbeat with epoch 1 from a member id the group does not know: UNKNOWN_MEMBER_ID "
          "(testConsumerGroupHeartbeatWithUnknownMember...)")
def _unknown_member(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    member = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
    member.heartbeat()
    other = ConsumerMember(ctx, ctx.name("g"), "B", topics=(ctx.name("t"),))
    other.heartbeat(epoch=1)


@scenario("consumer.heartbeat.fenced-epoch", "consumer-848",
          "A heartbeat with an epoch above the member's: FENCED_MEMBER_EPOCH; the member rejoins with epoch "
          "0 "
          "(testConsumerGroupMemberEpochValidation)")
def _fenced_epoch(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"), 2)
    member = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
    member.heartbeat()
    member.heartbeat(epoch=member.member_epoch + 5)
    member.assigned = {}
    member.heartbeat(epoch=0)


@scenario("consumer.heartbeat.stale-epoch-with-owned", "consumer-848",
          "A heartbeat with the previous epoch that still reports owned partitions, after a rebalance "
          "(testConsumerGroupMemberEpochValidation: previous epoch accepted when owned partitions fit)")
def _previous_epoch(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"), 2)
    first = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
    first.heartbeat()
    first.heartbeat()
    epoch = first.member_epoch
    second = ConsumerMember(ctx, ctx.name("g"), "B", topics=(ctx.name("t"),))
    second.heartbeat()
    first.heartbeat(full=True)
    first.heartbeat(epoch=epoch - 1, full=True)


@scenario("consumer.revocation-before-reassignment", "consumer-848",
          "A second member joins: the first is asked to revoke one of two partitions, the joiner gets it "
          "only "
          "after the first acknowledges (KIP-848 reconciliation; testReconciliationProcess...)")
def _revocation(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"), 2)
    first = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
    first.heartbeat()
    first.heartbeat()
    second = ConsumerMember(ctx, ctx.name("g"), "B", topics=(ctx.name("t"),))
    second.heartbeat()
    _describe(ctx, first)
    first.heartbeat()
    second.heartbeat()
    first.heartbeat(owned=first.assigned)
    second.heartbeat()
    first.heartbeat()
    _describe(ctx, first)


@scenario("consumer.leave", "consumer-848",
          "A member leaves with epoch -1: the answer's epoch is -1 and the group is Empty "
          "(testLeavingMemberBumpsGroupEpoch)")
def _leave(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    member = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
    member.heartbeat()
    member.leave()
    _describe(ctx, member)


@scenario("consumer.leave-unknown-member", "consumer-848",
          "A leave (epoch -1) from a member id the group does not know (testLeavingUnknownMember...)")
def _leave_unknown(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    member = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
    member.heartbeat()
    other = ConsumerMember(ctx, ctx.name("g"), "B", topics=(ctx.name("t"),))
    other.leave()


@scenario("consumer.leave-rebalances-survivor", "consumer-848",
          "Of two members one leaves: the survivor gets every partition at a new epoch "
          "(testLeavingMember...)")
def _leave_survivor(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"), 2)
    first = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
    first.heartbeat()
    first.heartbeat()
    second = ConsumerMember(ctx, ctx.name("g"), "B", topics=(ctx.name("t"),))
    second.heartbeat()
    first.heartbeat()
    first.heartbeat(owned=first.assigned)
    second.heartbeat()
    second.leave()
    first.heartbeat()
    _describe(ctx, first)


@scenario("consumer.static.temporary-leave-and-return", "consumer-848",
          "A static member leaves with epoch -2 (temporary) and comes back with a new member id: it gets its "
          "partitions back (KIP-848 static membership; testStaticMemberRejoinsWithNewMemberId...)")
def _static_return(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"), 2)
    member = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),), instance_id=ctx.name("i1"))
    member.heartbeat()
    member.leave(epoch=-2)
    _describe(ctx, member)
    back = ConsumerMember(ctx, ctx.name("g"), "A2", topics=(ctx.name("t"),), instance_id=ctx.name("i1"))
    back.heartbeat()
    _describe(ctx, back)


@scenario("consumer.static.unreleased-instance", "consumer-848",
          "A second member with the instance id of an active static member: UNRELEASED_INSTANCE_ID "
          "(testStaticMemberWithUnreleasedInstanceId...)")
def _unreleased(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    member = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),), instance_id=ctx.name("i1"))
    member.heartbeat()
    other = ConsumerMember(ctx, ctx.name("g"), "B", topics=(ctx.name("t"),), instance_id=ctx.name("i1"))
    other.heartbeat()


@scenario("consumer.static.leave-for-good", "consumer-848",
          "A static member leaves with epoch -1: it is removed and its instance id is free again")
def _static_leave(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    member = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),), instance_id=ctx.name("i1"))
    member.heartbeat()
    member.leave()
    other = ConsumerMember(ctx, ctx.name("g"), "B", topics=(ctx.name("t"),), instance_id=ctx.name("i1"))
    other.heartbeat()


def _partition_counts(value: Any) -> Any:
    """An answer with every assignment reduced to its partition count: which topic's partitions a
    member keeps depends on the order of random topic ids, the count (the balance) does not."""
    if isinstance(value, dict):
        if "topic_partitions" in value and isinstance(value["topic_partitions"], list):
            return {"partitions": sum(len(t["partitions"]) for t in value["topic_partitions"])}
        return {k: _partition_counts(v) for k, v in value.items()}
    if isinstance(value, list):  # sorted again: the lists were sorted on the exact assignments
        return sorted((_partition_counts(v) for v in value), key=canonical)
    return value


def _assignor(name: str) -> None:
    @scenario(f"consumer.assignor.{name}", "consumer-848",
              f"Two members subscribed to two topics of 2 partitions ask for the {name} assignor: the joiner "
              f"waits for the revocation, then each owns 2 (UniformAssignor / RangeAssignor of "
              "group-coordinator; "
              f"partition counts compared, the owners depend on random topic ids)")
    def run(ctx: ScenarioContext) -> None:
        topics = (ctx.name("t"), ctx.name("u"))
        for topic in topics:
            ctx.create_topic(topic, 2)
        first = ConsumerMember(ctx, ctx.name("g"), "A", topics=topics, assignor=name)
        first.heartbeat(view=_partition_counts)
        second = ConsumerMember(ctx, ctx.name("g"), "B", topics=topics, assignor=name)
        second.heartbeat(view=_partition_counts)
        first.heartbeat(view=_partition_counts)
        first.heartbeat(owned=first.assigned, view=_partition_counts)
        second.heartbeat(view=_partition_counts)
        first.heartbeat(view=_partition_counts)
        ctx.call(first.connection, builders.consumer_describe(1, first.group_id), "ConsumerGroupDescribe v1",
                 view=_partition_counts)


for _name in ("uniform", "range"):
    _assignor(_name)


@scenario("consumer.subscription-change", "consumer-848",
          "A member changes its subscription to another topic: a new epoch and the other topic's partitions")
def _subscription_change(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    ctx.create_topic(ctx.name("u"), 2)
    member = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
    member.heartbeat()
    member.topics = [ctx.name("u")]
    member.heartbeat(full=True)
    member.heartbeat(owned={})
    member.heartbeat()


@scenario("consumer.subscribe-unknown-topic", "consumer-848",
          "A member subscribed to a topic that does not exist: an empty assignment, then its partitions once "
          "the topic is created")
def _unknown_topic(ctx: ScenarioContext) -> None:
    member = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
    member.heartbeat()
    ctx.create_topic(ctx.name("t"), 2)
    ctx.sleep(0.5)
    member.heartbeat()
    member.heartbeat()


def _describe_version(version: int) -> None:
    @scenario(f"consumer.describe.v{version}", "consumer-848",
              f"ConsumerGroupDescribe v{version} of a Stable group, of an unknown group and of a classic "
              "group "
              "(testConsumerGroupDescribe...; GROUP_ID_NOT_FOUND for the others)")
    def run(ctx: ScenarioContext) -> None:
        ctx.create_topic(ctx.name("t"), 2)
        member = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
        member.heartbeat()
        member.heartbeat()
        stable_group(ctx, ctx.name("c"), ("K",))
        ctx.call(member.connection, builders.consumer_describe(version, ctx.name("g"), ctx.name("nope"),
                                                               ctx.name("c")))


for _v in (0, 1):
    _describe_version(_v)


@scenario("consumer.describe-groups-on-consumer-group", "consumer-848",
          "DescribeGroups (the classic API) of a consumer group (KafkaApis.handleDescribeGroupsRequest over "
          "a "
          "consumer group)")
def _classic_describe(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    member = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
    member.heartbeat()
    ctx.call(member.connection, builders.describe_groups(5, ctx.name("g")))


@scenario("consumer.delete-non-empty", "consumer-848",
          "DeleteGroups of a consumer group with a member: NON_EMPTY_GROUP; after it leaves: NONE")
def _delete(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    member = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
    member.heartbeat()
    ctx.call(member.connection, builders.delete_groups(2, ctx.name("g")))
    member.leave()
    ctx.call(member.connection, builders.delete_groups(2, ctx.name("g")), "DeleteGroups v2 after leave")


@scenario("consumer.classic-join-into-consumer-group", "consumer-848",
          "A classic JoinGroup into a consumer group with a member (KIP-848 online migration: Kafka's "
          "default "
          "group.consumer.migration.policy is bidirectional)")
def _classic_into_consumer(ctx: ScenarioContext) -> None:
    from kgroup.broker_conformance.members import ClassicMember
    ctx.create_topic(ctx.name("t"))
    member = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
    member.heartbeat()
    classic = ClassicMember(ctx, ctx.name("g"), "K", topics=(ctx.name("t"),))
    classic.send_join()
    classic.receive_join()


@scenario("consumer.heartbeat-into-classic-group", "consumer-848",
          "A ConsumerGroupHeartbeat into a non-empty classic group (KIP-848 upgrade path)")
def _consumer_into_classic(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    stable_group(ctx, ctx.name("g"), ("K",), topic=ctx.name("t"))
    member = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
    member.heartbeat()


def _commit_with_epoch(version: int) -> None:
    @scenario(f"consumer.offset-commit.epoch.v{version}", "consumer-848",
              f"OffsetCommit v{version} by a consumer-group member: with its epoch NONE, with a stale epoch "
              "STALE_MEMBER_EPOCH, from an unknown member UNKNOWN_MEMBER_ID "
              "(OffsetMetadataManagerTest.testConsumerGroupOffsetCommit...)")
    def run(ctx: ScenarioContext) -> None:
        ctx.create_topic(ctx.name("t"))
        member = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
        member.heartbeat()
        offsets = {ctx.name("t"): {0: 3}}
        ctx.call(member.connection, builders.offset_commit(version, ctx.name("g"), offsets,
                                                           generation_id=member.member_epoch,
                                                           member_id=member.member_id), "commit with epoch")
        ctx.call(member.connection, builders.offset_commit(version, ctx.name("g"), offsets,
                                                           generation_id=member.member_epoch - 1,
                                                           member_id=member.member_id), "commit stale epoch")
        ctx.call(member.connection, builders.offset_commit(version, ctx.name("g"), offsets,
                                                           generation_id=member.member_epoch,
                                                           member_id="nobody"), "commit unknown member")
        ctx.call(member.connection, builders.offset_commit(version, ctx.name("g"), offsets),
                 "commit without member")


for _v in (8, 9):
    _commit_with_epoch(_v)


@scenario("consumer.offset-fetch.v9-member-epoch", "consumer-848",
          "OffsetFetch v9 with member id and epoch: NONE with the current epoch, STALE_MEMBER_EPOCH with an "
          "old "
          "one, UNKNOWN_MEMBER_ID for a stranger (KIP-848; testConsumerGroupOffsetFetch...)")
def _fetch_epoch(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    member = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
    member.heartbeat()
    query = {ctx.name("t"): [0]}
    ctx.call(member.connection, builders.offset_fetch(9, ctx.name("g"), query, member_id=member.member_id,
                                                      member_epoch=member.member_epoch), "fetch with epoch")
    ctx.call(member.connection, builders.offset_fetch(9, ctx.name("g"), query, member_id=member.member_id,
                                                      member_epoch=member.member_epoch + 3), "fetch other "
                                                                                             "epoch")
    ctx.call(member.connection, builders.offset_fetch(9, ctx.name("g"), query, member_id="nobody",
                                                      member_epoch=1), "fetch unknown member")


@scenario("consumer.rebalance-timeout-fences-member", "consumer-848",
          "A member asked to revoke that does not acknowledge within its rebalance timeout (1 s; slept 2.5 "
          "s) "
          "is fenced: UNKNOWN_MEMBER_ID, and the joiner gets everything (testRevocationTimeoutExpiration...)")
def _rebalance_timeout(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"), 2)
    first = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),), rebalance_timeout_ms=1_000)
    first.heartbeat()
    first.heartbeat()
    second = ConsumerMember(ctx, ctx.name("g"), "B", topics=(ctx.name("t"),))
    second.heartbeat()
    first.heartbeat()
    ctx.sleep(2.5)
    first.heartbeat()
    second.heartbeat()
    second.heartbeat()


@scenario("consumer.session-timeout-removes-member", "consumer-848",
          "A member that stops heartbeating is removed after group.consumer.session.timeout.ms (10 s; "
          "slept 12 s): the group is Empty (testSessionTimeoutExpiration)")
def _session_timeout(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    member = ConsumerMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
    member.heartbeat()
    ctx.sleep(12.0)
    _describe(ctx, member)
    member.heartbeat()


def _assigned_topics(value: Any) -> Any:
    """A ConsumerGroupDescribe answer reduced to each member's assignment as (topic name, partitions)."""
    return [sorted([t["topic_name"], t["partitions"]] for t in m["assignment"]["topic_partitions"])
            for g in value["groups"] for m in g["members"]]


@scenario("consumer.regex.internal-topic", "consumer-848",
          "A SubscribedTopicRegex matching a user topic and __consumer_offsets: the coordinator resolves "
          "regexes against every topic of its metadata image, internal ones too, and assigns both "
          "(GroupMetadataManager.refreshRegularExpressions; franz-go's Test848RegexBrokerResolves)")
def _regex_internal_topic(ctx: ScenarioContext) -> None:
    from kgroup.broker_conformance.runner import SETTINGS  # the runner imports the scenarios

    topic = ctx.name("t")
    ctx.create_topic(topic)
    member = ConsumerMember(ctx, ctx.name("g"), "A", topics=())
    member.heartbeat(topics=None, regex=f"(?:{topic})|__consumer_offsets", view=_partition_counts)
    offsets_partitions = int(SETTINGS["offsets.topic.num.partitions"])

    def resolved() -> bool:  # not recorded: how many heartbeats the resolution takes is timing
        answer = member.connection.request(builders.consumer_heartbeat(
            member.version, member.group_id, member.member_id, member.member_epoch))
        if answer.error_code == 0:
            member.member_epoch = answer.member_epoch
            if answer.assignment is not None:
                member.assigned = {t.topic_id: sorted(t.partitions)
                                   for t in answer.assignment.topic_partitions}
        return member.owned_count() == 1 + offsets_partitions
    ctx.wait_until(resolved, f"{topic} and __consumer_offsets assigned")
    ctx.call(member.connection, builders.consumer_describe(1, member.group_id), "ConsumerGroupDescribe v1",
             view=_assigned_topics)
