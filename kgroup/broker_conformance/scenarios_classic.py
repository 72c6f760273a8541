"""Classic group protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup (and their errors per state).

Kafka sources: ``GroupMetadataManagerTest`` (org.apache.kafka.coordinator.group, the classic-group
tests) and ``KafkaApis.handleJoinGroupRequest`` & co.
"""
from __future__ import annotations

from kgroup.broker_conformance import builders
from kgroup.broker_conformance.members import ClassicMember, stable_group
from kgroup.broker_conformance.scenario import ScenarioContext, scenario


def _describe(ctx: ScenarioContext, member: ClassicMember, version: int = 5) -> None:
    ctx.call(member.connection, builders.describe_groups(version, member.group_id), f"DescribeGroups "
                                                                                    f"v{version}")


# -- MEMBER_ID_REQUIRED and first joins ----------------------------------------------------------------

def _member_id_required(version: int) -> None:
    @scenario(f"classic.join.member-id-required.v{version}", "classic",
              f"JoinGroup v{version} with no member id: MEMBER_ID_REQUIRED and an id, the rejoin forms "
              "generation 1 (KIP-394; GroupMetadataManagerTest.testJoinGroupWithMemberIdRequired...)")
    def run(ctx: ScenarioContext) -> None:
        ctx.create_topic(ctx.name("t"))
        member = ClassicMember(ctx, ctx.name("g"), "A", version=version, topics=(ctx.name("t"),))
        member.join()
        member.sync({member.member_id: builders.assignment(ctx.name("t"), 0)})
        member.heartbeat()


for _v in range(4, 10):
    _member_id_required(_v)


def _old_join(version: int) -> None:
    @scenario(f"classic.join.no-member-id-required.v{version}", "classic",
              f"JoinGroup v{version} (before KIP-394) forms generation 1 at once with a new member id")
    def run(ctx: ScenarioContext) -> None:
        member = ClassicMember(ctx, ctx.name("g"), "A", version=version)
        member.join()
        member.sync({member.member_id: b""}, version=min(version, 3))
        member.heartbeat(version=min(version, 2))


for _v in range(0, 4):
    _old_join(_v)


def _unknown_member_join(version: int) -> None:
    @scenario(f"classic.join.unknown-member-id.v{version}", "classic",
              f"JoinGroup v{version} with a member id the group never gave out: UNKNOWN_MEMBER_ID "
              "(GroupMetadataManagerTest.testJoinGroupUnknownMemberNewGroup)")
    def run(ctx: ScenarioContext) -> None:
        member = ClassicMember(ctx, ctx.name("g"), "A", version=version)
        member.member_id = "made-up-member"
        member.send_join()
        member.receive_join()


for _v in (1, 5, 9):
    _unknown_member_join(_v)


def _bad_join(scenario_id: str, description: str, **options: object) -> None:
    @scenario(scenario_id, "classic", description)
    def run(ctx: ScenarioContext) -> None:
        member = ClassicMember(ctx, ctx.name("g"), "A", **options)  # type: ignore[arg-type]
        member.send_join()
        member.receive_join()


_bad_join("classic.join.session-timeout-below-min", "JoinGroup with a session timeout under "
          "group.min.session.timeout.ms: INVALID_SESSION_TIMEOUT (GroupMetadataManagerTest."
          "testJoinGroupSessionTimeoutTooSmall)", session_timeout_ms=50)
_bad_join("classic.join.session-timeout-above-max", "JoinGroup with a session timeout over "
          "group.max.session.timeout.ms: INVALID_SESSION_TIMEOUT (testJoinGroupSessionTimeoutTooLarge)",
          session_timeout_ms=1_800_001)
_bad_join("classic.join.empty-protocol-type", "JoinGroup with an empty protocol type: "
          "INCONSISTENT_GROUP_PROTOCOL (testJoinGroupWithEmptyProtocolType)", protocol_type="")
_bad_join("classic.join.no-protocols", "JoinGroup with no protocols: INCONSISTENT_GROUP_PROTOCOL "
          "(testJoinGroupWithEmptyGroupProtocol)", protocols=[])


@scenario("classic.join.empty-group-id", "classic",
          "JoinGroup with an empty group id: INVALID_GROUP_ID (testJoinGroupInvalidGroupId)")
def _empty_group_id(ctx: ScenarioContext) -> None:
    connection = ctx.connect()
    ctx.call(connection, builders.join_group(5, "", ""))


@scenario("classic.join.inconsistent-protocol-type", "classic",
          "JoinGroup of a second member with another protocol type: INCONSISTENT_GROUP_PROTOCOL "
          "(testJoinGroupInconsistentProtocolType)")
def _inconsistent_type(ctx: ScenarioContext) -> None:
    stable_group(ctx, ctx.name("g"))
    other = ClassicMember(ctx, ctx.name("g"), "B", protocol_type="connect")
    other.join()


@scenario("classic.join.no-common-protocol", "classic",
          "JoinGroup of a member none of whose protocols the group supports: INCONSISTENT_GROUP_PROTOCOL "
          "(testJoinGroupInconsistentGroupProtocol)")
def _no_common_protocol(ctx: ScenarioContext) -> None:
    stable_group(ctx, ctx.name("g"))
    other = ClassicMember(ctx, ctx.name("g"), "B", protocols=[("roundrobin", builders.subscription("t"))])
    other.join()


@scenario("classic.join.protocol-vote", "classic",
          "Two members listing range and roundrobin in different orders: the group picks the protocol "
          "both support with the most votes (ClassicGroup.selectProtocol)")
def _protocol_vote(ctx: ScenarioContext) -> None:
    meta = builders.subscription("t")
    first = ClassicMember(ctx, ctx.name("g"), "A", protocols=[("roundrobin", meta), ("range", meta)])
    first.join()
    first.sync({first.member_id: b""})
    second = ClassicMember(ctx, ctx.name("g"), "B", protocols=[("range", meta), ("sticky", meta)])
    second.send_join()
    second.receive_join()
    second.send_join()
    ctx.wait_group_state(ctx.name("g"), "PreparingRebalance")
    first.heartbeat()
    first.send_join()
    first.receive_join()
    second.receive_join()


# -- rebalances -------------------------------------------------------------------------------------

@scenario("classic.rebalance.second-member", "classic",
          "A second member joins a Stable group: it waits, the first learns REBALANCE_IN_PROGRESS from its "
          "heartbeat, both join generation 2, only the leader sees the members, the follower's SyncGroup "
          "waits for the leader's (testJoinGroupCompleteWhenAllMembersJoined / "
          "testSyncGroupFollowerAfterLeader)")
def _second_member(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"), 2)
    first = ClassicMember(ctx, ctx.name("g"), "A", topics=(ctx.name("t"),))
    first.join()
    first.sync({first.member_id: builders.assignment(ctx.name("t"), 0, 1)})
    second = ClassicMember(ctx, ctx.name("g"), "B", topics=(ctx.name("t"),))
    second.send_join()
    second.receive_join()
    second.send_join()
    ctx.wait_group_state(ctx.name("g"), "PreparingRebalance")
    ctx.record_pending(second.connection, "B JoinGroup waits for A")
    first.heartbeat()
    _describe(ctx, first)
    first.send_join()
    first.receive_join()
    second.receive_join()
    second.send_sync()
    ctx.record_pending(second.connection, "B SyncGroup waits for the leader")
    _describe(ctx, first)
    first.sync({first.member_id: builders.assignment(ctx.name("t"), 0),
                second.member_id: builders.assignment(ctx.name("t"), 1)})
    second.receive_sync()
    first.heartbeat()
    second.heartbeat()
    _describe(ctx, first)


@scenario("classic.rebalance.missing-assignment", "classic",
          "The leader's SyncGroup leaves a member out: that member gets an empty assignment "
          "(testSyncGroupLeaderAfterFollower / ClassicGroup.setAndPropagateAssignment)")
def _missing_assignment(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A", "B"))
    leader = members[0]
    leader.send_join()
    ctx.wait_group_state(ctx.name("g"), "PreparingRebalance")
    members[1].heartbeat()
    members[1].send_join()
    leader.receive_join()
    members[1].receive_join()
    members[1].send_sync()
    leader.sync({leader.member_id: builders.assignment("t", 0)})
    members[1].receive_sync()


@scenario("classic.rebalance.timeout-removes-silent-member", "classic",
          "A member that does not rejoin within the rebalance timeout is removed; the joiner completes "
          "the generation alone (testRebalanceTimesOutWhenSyncRequestIsNotReceived...; "
          "ClassicGroup rebalance timeout)")
def _silent_member(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A",), rebalance_timeout_ms=1_000)
    joiner = ClassicMember(ctx, ctx.name("g"), "B", rebalance_timeout_ms=1_000)
    joiner.send_join()
    joiner.receive_join()
    joiner.send_join()
    joiner.receive_join(timeout_s=10.0)
    members[0].heartbeat()
    _describe(ctx, joiner)


@scenario("classic.rebalance.leader-rejoin-rebalances", "classic",
          "The leader of a Stable group rejoins with unchanged metadata: a new generation "
          "(testLeaderRejoinWithSameMetadataTriggersRebalance)")
def _leader_rejoin(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A",))
    members[0].send_join()
    members[0].receive_join()
    _describe(ctx, members[0])


@scenario("classic.rebalance.follower-rejoin-same-metadata", "classic",
          "A follower of a Stable group rejoins with unchanged metadata: the current generation, "
          "no rebalance (testFollowerJoinWithKnownMemberId... ClassicGroup: same protocols -> current)")
def _follower_rejoin(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A", "B"))
    members[1].send_join()
    members[1].receive_join()
    members[0].heartbeat()
    _describe(ctx, members[0])


@scenario("classic.rebalance.follower-rejoin-new-metadata", "classic",
          "A follower rejoins with a new subscription: the group rebalances "
          "(testFollowerJoinWithChangedMetadataTriggersRebalance)")
def _follower_new_metadata(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A", "B"))
    members[1].protocols = [("range", builders.subscription("t", "u"))]
    members[1].send_join()
    ctx.wait_group_state(ctx.name("g"), "PreparingRebalance")
    ctx.record_pending(members[1].connection, "B JoinGroup waits for A")
    members[0].heartbeat()
    members[0].send_join()
    members[0].receive_join()
    members[1].receive_join()


@scenario("classic.rebalance.leave-triggers-rebalance", "classic",
          "One of two members leaves: the other's heartbeat says REBALANCE_IN_PROGRESS and it rejoins "
          "as leader of the next generation (testLeaveGroupTriggersRebalance...)")
def _leave_rebalances(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A", "B"))
    members[1].leave()
    members[0].heartbeat()
    members[0].send_join()
    members[0].receive_join()


# -- timeouts ---------------------------------------------------------------------------------------

@scenario("classic.session.timeout-expires-member", "classic",
          "A member that stops heartbeating is removed after its session timeout (300 ms; slept 1.5 s): "
          "the group is Empty and a late heartbeat is UNKNOWN_MEMBER_ID (testSessionTimeout)")
def _session_timeout(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A",), session_timeout_ms=300)
    ctx.sleep(1.5)
    _describe(ctx, members[0])
    members[0].heartbeat()


@scenario("classic.session.heartbeats-keep-member", "classic",
          "Heartbeats every 150 ms keep a 600 ms session alive for 1.5 s (testHeartbeatMaintainsSession)")
def _heartbeats_keep(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A",), session_timeout_ms=600)
    for _ in range(10):
        ctx.sleep(0.15)
        members[0].connection.request(builders.heartbeat(4, members[0].group_id, members[0].generation_id,
                                                         members[0].member_id))
    members[0].heartbeat()
    _describe(ctx, members[0])


@scenario("classic.session.pending-member-expires", "classic",
          "A member id handed out with MEMBER_ID_REQUIRED expires after the session timeout when the "
          "member never rejoins; rejoining with it then is UNKNOWN_MEMBER_ID (testNewMemberJoinExpiration"
          "/ pending member expiry)")
def _pending_expires(ctx: ScenarioContext) -> None:
    member = ClassicMember(ctx, ctx.name("g"), "A", session_timeout_ms=300)
    member.send_join()
    member.receive_join()
    ctx.sleep(1.5)
    member.send_join()
    member.receive_join()


@scenario("classic.session.expiry-during-sync-wait", "classic",
          "A follower that never sends SyncGroup after a join: after the leader's sync the group is Stable; "
          "the follower expires after its session timeout and the leader is told to rebalance "
          "(testSessionTimeoutDuringRebalance...)")
def _expiry_after_join(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A",), session_timeout_ms=10_000)
    follower = ClassicMember(ctx, ctx.name("g"), "B", session_timeout_ms=400)
    follower.send_join()
    follower.receive_join()
    follower.send_join()
    ctx.wait_group_state(ctx.name("g"), "PreparingRebalance")
    members[0].heartbeat()
    members[0].send_join()
    members[0].receive_join()
    follower.receive_join()
    members[0].sync({members[0].member_id: b"", follower.member_id: b""})
    ctx.sleep(1.6)
    members[0].heartbeat()


# -- SyncGroup errors ----------------------------------------------------------------------------

@scenario("classic.sync.unknown-member", "classic",
          "SyncGroup from a member id the group does not know: UNKNOWN_MEMBER_ID "
          "(testSyncGroupFromUnknownMember)")
def _sync_unknown(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A",))
    members[0].sync(member_id="not-a-member")


@scenario("classic.sync.illegal-generation", "classic",
          "SyncGroup with the wrong generation: ILLEGAL_GENERATION (testSyncGroupFromIllegalGeneration)")
def _sync_generation(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A",))
    members[0].sync(generation_id=members[0].generation_id + 1)


@scenario("classic.sync.unknown-group", "classic",
          "SyncGroup to a group that does not exist (testSyncGroupNotCoordinator... unknown group)")
def _sync_unknown_group(ctx: ScenarioContext) -> None:
    member = ClassicMember(ctx, ctx.name("g"), "A")
    member.generation_id, member.member_id = 1, "nobody"
    member.sync()


@scenario("classic.sync.during-preparing-rebalance", "classic",
          "SyncGroup while the group prepares a rebalance: REBALANCE_IN_PROGRESS "
          "(testSyncGroupInPreparingRebalance...)")
def _sync_preparing(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A",))
    joiner = ClassicMember(ctx, ctx.name("g"), "B")
    joiner.send_join()
    joiner.receive_join()
    joiner.send_join()
    ctx.wait_group_state(ctx.name("g"), "PreparingRebalance")
    members[0].sync()


@scenario("classic.sync.stable-repeat", "classic",
          "A repeated SyncGroup in a Stable group gets the member's current assignment back "
          "(testSyncGroupInStableState...)")
def _sync_repeat(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A", "B"))
    members[1].sync()
    members[0].sync({members[0].member_id: b"ignored"})


@scenario("classic.sync.v5-wrong-protocol-name", "classic",
          "SyncGroup v5 naming a protocol the group did not choose: INCONSISTENT_GROUP_PROTOCOL (KIP-559; "
          "testSyncGroupWithInconsistentProtocolName...)")
def _sync_protocol_name(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A",))
    members[0].sync(protocol_name="roundrobin")


@scenario("classic.sync.v5-wrong-protocol-type", "classic",
          "SyncGroup v5 naming another protocol type: INCONSISTENT_GROUP_PROTOCOL (KIP-559)")
def _sync_protocol_type(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A",))
    members[0].sync(protocol_type="connect")


@scenario("classic.sync.v5-null-protocol", "classic",
          "SyncGroup v5 with the protocol type and name left null (KIP-559 made them nullable)")
def _sync_null_protocol(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A",))
    request = builders.sync_group(5, members[0].group_id, members[0].generation_id, members[0].member_id,
                                  protocol_type=None, protocol_name=None)
    ctx.call(members[0].connection, request)


# -- Heartbeat --------------------------------------------------------------------------------------

def _heartbeat_stable(version: int) -> None:
    @scenario(f"classic.heartbeat.stable.v{version}", "classic",
              f"Heartbeat v{version} of a Stable member: NONE; with the next generation: ILLEGAL_GENERATION "
              "(testHeartbeatIllegalGeneration)")
    def run(ctx: ScenarioContext) -> None:
        members = stable_group(ctx, ctx.name("g"), ("A",))
        members[0].heartbeat(version)
        members[0].heartbeat(version, generation_id=members[0].generation_id + 1)


for _v in range(0, 5):
    _heartbeat_stable(_v)


@scenario("classic.heartbeat.unknown-group", "classic",
          "Heartbeat to a group that does not exist (testHeartbeatUnknownGroup)")
def _heartbeat_unknown_group(ctx: ScenarioContext) -> None:
    member = ClassicMember(ctx, ctx.name("g"), "A")
    member.heartbeat(generation_id=1, member_id="nobody")


@scenario("classic.heartbeat.unknown-member", "classic",
          "Heartbeat from a member id a Stable group does not know: UNKNOWN_MEMBER_ID "
          "(testHeartbeatUnknownConsumerExistingGroup)")
def _heartbeat_unknown_member(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A",))
    members[0].heartbeat(member_id="nobody")


@scenario("classic.heartbeat.during-completing-rebalance", "classic",
          "Heartbeat while the group waits for the leader's SyncGroup (CompletingRebalance) "
          "(testHeartbeatDuringRebalance... / ClassicGroup CompletingRebalance)")
def _heartbeat_completing(ctx: ScenarioContext) -> None:
    member = ClassicMember(ctx, ctx.name("g"), "A")
    member.join()
    member.heartbeat()
    _describe(ctx, member)


@scenario("classic.heartbeat.empty-group-generation", "classic",
          "Heartbeat with generation -1 to an Empty group that only has offsets "
          "(a commit-only group: UNKNOWN_MEMBER_ID)")
def _heartbeat_empty(ctx: ScenarioContext) -> None:
    connection = ctx.group_connection(ctx.name("g"))
    ctx.create_topic(ctx.name("t"))
    ctx.call(connection, builders.offset_commit(8, ctx.name("g"), {ctx.name("t"): {0: 1}}))
    ctx.call(connection, builders.heartbeat(4, ctx.name("g"), -1, ""))


# -- LeaveGroup -----------------------------------------------------------------------------------

def _leave(version: int) -> None:
    @scenario(f"classic.leave.single.v{version}", "classic",
              f"LeaveGroup v{version} of the only member: NONE and the group is Empty "
              "(testLeaveGroupMember...)")
    def run(ctx: ScenarioContext) -> None:
        members = stable_group(ctx, ctx.name("g"), ("A",))
        members[0].leave(version)
        _describe(ctx, members[0])
        members[0].heartbeat()


for _v in range(0, 6):
    _leave(_v)


def _leave_unknown_member(version: int) -> None:
    @scenario(f"classic.leave.unknown-member.v{version}", "classic",
              f"LeaveGroup v{version} of a member id the group does not know: UNKNOWN_MEMBER_ID (at top "
              "level "
              "before v3, per member from v3) (testLeaveGroupUnknownConsumerExistingGroup)")
    def run(ctx: ScenarioContext) -> None:
        members = stable_group(ctx, ctx.name("g"), ("A",))
        members[0].leave(version, member_id="nobody")
        _describe(ctx, members[0])


for _v in (1, 3):
    _leave_unknown_member(_v)


def _leave_unknown_group(version: int) -> None:
    @scenario(f"classic.leave.unknown-group.v{version}", "classic",
              f"LeaveGroup v{version} to a group that does not exist (testLeaveGroupUnknownGroup)")
    def run(ctx: ScenarioContext) -> None:
        member = ClassicMember(ctx, ctx.name("g"), "A")
        member.leave(version, member_id="nobody")


for _v in (0, 3):
    _leave_unknown_group(_v)


@scenario("classic.leave.batch", "classic",
          "LeaveGroup v5 with two members and an unknown one: the two leave, the unknown one gets "
          "UNKNOWN_MEMBER_ID, the top level is NONE (KIP-345 batch leave; testLeaveGroupBatch...)")
def _leave_batch(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A", "B", "C"))
    request = builders.leave_group(5, ctx.name("g"), [(members[0].member_id, None),
                                                      (members[1].member_id, None), ("nobody", None)])
    ctx.call(members[0].connection, request)
    members[2].heartbeat()
    _describe(ctx, members[2])
