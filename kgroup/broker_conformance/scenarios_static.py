"""Static membership (KIP-345): group.instance.id, replacement without a rebalance, fencing.

Kafka sources: ``GroupMetadataManagerTest`` static-member tests (testStaticMember...), KIP-345.
"""
from __future__ import annotations

from kgroup.broker_conformance import builders
from kgroup.broker_conformance.members import ClassicMember
from kgroup.broker_conformance.scenario import ScenarioContext, scenario


def _describe(ctx: ScenarioContext, member: ClassicMember) -> None:
    ctx.call(member.connection, builders.describe_groups(5, member.group_id), "DescribeGroups v5")


def _static_join(version: int) -> None:
    @scenario(f"static.join.v{version}", "static",
              f"JoinGroup v{version} with a group instance id: no MEMBER_ID_REQUIRED round, generation 1 "
              "at once (KIP-345; testStaticMemberJoinAsFirstMember...)")
    def run(ctx: ScenarioContext) -> None:
        member = ClassicMember(ctx, ctx.name("g"), "A", version=version, instance_id=ctx.name("i1"))
        member.join()
        member.sync({member.member_id: builders.assignment("t", 0)})
        member.heartbeat()
        _describe(ctx, member)


for _v in range(5, 10):
    _static_join(_v)


def _rejoin(version: int) -> None:
    @scenario(f"static.rejoin-replaces-member.v{version}", "static",
              f"A static leader rejoins (v{version}) with an unknown member id and the same metadata: a new "
              "member id, no new generation, the old id is fenced with FENCED_INSTANCE_ID "
              "(testStaticMemberRejoinWithKnownMemberId... / testStaticMemberFenceDuplicateRejoinedFollower)")
    def run(ctx: ScenarioContext) -> None:
        member = ClassicMember(ctx, ctx.name("g"), "A", version=version, instance_id=ctx.name("i1"))
        member.join()
        member.sync({member.member_id: builders.assignment("t", 0)})
        old_id = member.member_id
        bounced = ClassicMember(ctx, ctx.name("g"), "A2", version=version, instance_id=ctx.name("i1"))
        bounced.join()
        bounced.sync()
        member.heartbeat(member_id=old_id)
        bounced.heartbeat()
        _describe(ctx, bounced)


for _v in (5, 7, 9):
    _rejoin(_v)


def _two_statics(ctx: ScenarioContext):
    first = ClassicMember(ctx, ctx.name("g"), "A", instance_id=ctx.name("i1"))
    first.join()
    first.sync({first.member_id: builders.assignment("t", 0)})
    second = ClassicMember(ctx, ctx.name("g"), "B", instance_id=ctx.name("i2"))
    second.send_join()
    ctx.wait_group_state(ctx.name("g"), "PreparingRebalance")
    first.heartbeat()
    first.send_join()
    first.receive_join()
    second.receive_join()
    second.send_sync()
    first.sync({first.member_id: builders.assignment("t", 0), second.member_id: builders.assignment("t", 1)})
    second.receive_sync()
    return first, second


@scenario("static.follower-bounce-no-rebalance", "static",
          "A static follower restarts (new connection, no member id) with the same metadata: it gets a new "
          "id "
          "and its old assignment, the leader's heartbeat stays NONE (KIP-345; "
          "testStaticMemberFollowerRejoinWithSameMetadata...)")
def _follower_bounce(ctx: ScenarioContext) -> None:
    first, second = _two_statics(ctx)
    bounced = ClassicMember(ctx, ctx.name("g"), "B2", instance_id=ctx.name("i2"))
    bounced.join()
    bounced.generation_id = second.generation_id
    bounced.sync()
    first.heartbeat()
    second.heartbeat()
    _describe(ctx, first)


@scenario("static.fenced-sync", "static",
          "SyncGroup from the replaced member id of a static instance: FENCED_INSTANCE_ID "
          "(testStaticMemberFenceDuplicateSyncGroup...)")
def _fenced_sync(ctx: ScenarioContext) -> None:
    first, second = _two_statics(ctx)
    old_id = second.member_id
    bounced = ClassicMember(ctx, ctx.name("g"), "B2", instance_id=ctx.name("i2"))
    bounced.join()
    second.sync(member_id=old_id)


@scenario("static.fenced-join", "static",
          "JoinGroup with a static instance id and a member id that is not the instance's current one: "
          "FENCED_INSTANCE_ID (testStaticMemberJoinWithWrongMemberId...)")
def _fenced_join(ctx: ScenarioContext) -> None:
    member = ClassicMember(ctx, ctx.name("g"), "A", instance_id=ctx.name("i1"))
    member.join()
    member.sync()
    member.member_id = "someone-else"
    member.send_join()
    member.receive_join()


@scenario("static.fenced-commit", "static",
          "OffsetCommit from the replaced member id of a static instance: FENCED_INSTANCE_ID "
          "(OffsetMetadataManagerTest.testGenericGroupOffsetCommitWithFencedInstanceId)")
def _fenced_commit(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    member = ClassicMember(ctx, ctx.name("g"), "A", instance_id=ctx.name("i1"))
    member.join()
    member.sync()
    old_id = member.member_id
    bounced = ClassicMember(ctx, ctx.name("g"), "A2", instance_id=ctx.name("i1"))
    bounced.join()
    member.commit({ctx.name("t"): {0: 3}}, member_id=old_id, generation_id=bounced.generation_id)
    bounced.commit({ctx.name("t"): {0: 4}}, generation_id=member.generation_id)


def _leave(version: int) -> None:
    @scenario(f"static.leave.v{version}", "static",
              f"LeaveGroup v{version} naming a static member by instance id and member id: it leaves, the "
              "group "
              "is Empty (KIP-345 batch leave)")
    def run(ctx: ScenarioContext) -> None:
        member = ClassicMember(ctx, ctx.name("g"), "A", instance_id=ctx.name("i1"))
        member.join()
        member.sync()
        member.leave(version)
        _describe(ctx, member)


for _v in (3, 4, 5):
    _leave(_v)


@scenario("static.leave-by-instance-only", "static",
          "LeaveGroup v4 naming a static member by instance id with an unknown member id: it leaves "
          "(testStaticMemberLeaveWithUnknownMemberId...)")
def _leave_instance_only(ctx: ScenarioContext) -> None:
    member = ClassicMember(ctx, ctx.name("g"), "A", instance_id=ctx.name("i1"))
    member.join()
    member.sync()
    ctx.call(member.connection, builders.leave_group(4, ctx.name("g"), [("", ctx.name("i1"))]))
    _describe(ctx, member)


@scenario("static.leave-fenced", "static",
          "LeaveGroup naming a static instance with another member id: FENCED_INSTANCE_ID for that member "
          "(testStaticMemberLeaveWithWrongMemberId...)")
def _leave_fenced(ctx: ScenarioContext) -> None:
    member = ClassicMember(ctx, ctx.name("g"), "A", instance_id=ctx.name("i1"))
    member.join()
    member.sync()
    ctx.call(member.connection, builders.leave_group(5, ctx.name("g"), [("someone-else", ctx.name("i1"))]))
    _describe(ctx, member)


@scenario("static.leave-unknown-instance", "static",
          "LeaveGroup naming an instance id the group does not know: UNKNOWN_MEMBER_ID for it")
def _leave_unknown_instance(ctx: ScenarioContext) -> None:
    member = ClassicMember(ctx, ctx.name("g"), "A", instance_id=ctx.name("i1"))
    member.join()
    member.sync()
    ctx.call(member.connection, builders.leave_group(5, ctx.name("g"), [("", ctx.name("nobody"))]))


@scenario("static.session-timeout-removes", "static",
          "A static member is removed when its session (300 ms) expires: the group is Empty after 1.5 s "
          "(testStaticMemberSessionTimeout...)")
def _static_session(ctx: ScenarioContext) -> None:
    member = ClassicMember(ctx, ctx.name("g"), "A", instance_id=ctx.name("i1"), session_timeout_ms=300)
    member.join()
    member.sync()
    ctx.sleep(1.5)
    _describe(ctx, member)
    member.heartbeat()


@scenario("static.join-unknown-member-id", "static",
          "JoinGroup of a new static instance that names a member id: UNKNOWN_MEMBER_ID "
          "(testStaticMemberJoinWithUnknownInstanceIdAndKnownMemberId...)")
def _static_unknown_member(ctx: ScenarioContext) -> None:
    member = ClassicMember(ctx, ctx.name("g"), "A", instance_id=ctx.name("i1"))
    member.member_id = "made-up-member"
    member.send_join()
    member.receive_join()


@scenario("static.rejoin-new-metadata-rebalances", "static",
          "A static member rejoins with a new subscription: a new generation (KIP-345: only unchanged "
          "metadata skips the rebalance)")
def _static_new_metadata(ctx: ScenarioContext) -> None:
    member = ClassicMember(ctx, ctx.name("g"), "A", instance_id=ctx.name("i1"))
    member.join()
    member.sync()
    bounced = ClassicMember(ctx, ctx.name("g"), "A2", instance_id=ctx.name("i1"),
                            protocols=[("range", builders.subscription("t", "u"))])
    bounced.join()
    _describe(ctx, bounced)


@scenario("static.heartbeat-v3-with-instance", "static",
          "Heartbeat v3 carrying the instance id of the current static member: NONE; with another instance "
          "id: FENCED_INSTANCE_ID")
def _heartbeat_instance(ctx: ScenarioContext) -> None:
    member = ClassicMember(ctx, ctx.name("g"), "A", instance_id=ctx.name("i1"))
    member.join()
    member.sync()
    member.heartbeat(3)
    ctx.call(member.connection, builders.heartbeat(3, ctx.name("g"), member.generation_id, member.member_id,
                                                   ctx.name("i9")))
