"""DescribeGroups, ListGroups and DeleteGroups across versions and group states.

Kafka sources: ``GroupMetadataManagerTest`` (testDescribeGroup..., testListGroups...,
testDeleteGroups...), ``KafkaApis.handleDescribeGroupsRequest`` / ``handleListGroupsRequest`` /
``handleDeleteGroupsRequest``.
"""
from __future__ import annotations

from typing import Any

from kgroup.broker_conformance import builders
from kgroup.broker_conformance.members import ClassicMember, stable_group
from kgroup.broker_conformance.scenario import ScenarioContext, scenario


def _ours(value: Any) -> Any:
    """A ListGroups answer with only this run's groups (the broker lists everybody's)."""
    return dict(value, groups=[g for g in value["groups"] if "RUN" in g["group_id"]])


def _describe_stable(version: int) -> None:
    @scenario(f"groups.describe-stable.v{version}", "groups-admin",
              f"DescribeGroups v{version} of a Stable two-member group: state, protocol, members with client "
              "ids, metadata and assignments (testDescribeGroupStable)")
    def run(ctx: ScenarioContext) -> None:
        members = stable_group(ctx, ctx.name("g"), ("A", "B"))
        ctx.call(members[0].connection, builders.describe_groups(version, ctx.name("g")))


for _v in range(0, 6):
    _describe_stable(_v)


def _describe_unknown(version: int) -> None:
    @scenario(f"groups.describe-unknown.v{version}", "groups-admin",
              f"DescribeGroups v{version} of a group that does not exist, next to an existing one "
              "(testDescribeGroupsDeadGroup...)")
    def run(ctx: ScenarioContext) -> None:
        members = stable_group(ctx, ctx.name("g"), ("A",))
        ctx.call(members[0].connection, builders.describe_groups(version, ctx.name("g"), ctx.name("nope")))


for _v in range(0, 6):
    _describe_unknown(_v)


@scenario("groups.describe-preparing-rebalance", "groups-admin",
          "DescribeGroups while a joiner waits: PreparingRebalance, members without assignment... "
          "(testDescribeGroupRebalancing)")
def _describe_preparing(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A",))
    joiner = ClassicMember(ctx, ctx.name("g"), "B")
    joiner.send_join()
    joiner.receive_join()
    joiner.send_join()
    ctx.wait_group_state(ctx.name("g"), "PreparingRebalance")
    ctx.call(members[0].connection, builders.describe_groups(5, ctx.name("g")))


@scenario("groups.describe-empty-group-id", "groups-admin",
          "DescribeGroups of the empty group id (KafkaApis.handleDescribeGroupsRequest)")
def _describe_empty_id(ctx: ScenarioContext) -> None:
    ctx.call(ctx.connect(), builders.describe_groups(5, ""))


def _list(version: int) -> None:
    @scenario(f"groups.list.v{version}", "groups-admin",
              f"ListGroups v{version} lists a Stable classic group and an offsets-only group with their "
              "protocol types (and states from v4, types from v5) (testListGroups)")
    def run(ctx: ScenarioContext) -> None:
        ctx.create_topic(ctx.name("t"))
        members = stable_group(ctx, ctx.name("g"), ("A",))
        ctx.call(members[0].connection, builders.offset_commit(8, ctx.name("h"), {ctx.name("t"): {0: 1}}))
        ctx.call(members[0].connection, builders.list_groups(version), view=_ours)


for _v in range(0, 6):
    _list(_v)


def _list_states(state: str) -> None:
    @scenario(f"groups.list-states-filter.{state.lower()}", "groups-admin",
              f"ListGroups v4 filtered on state {state} (KIP-518; testListGroupsWithStatesFilter)")
    def run(ctx: ScenarioContext) -> None:
        ctx.create_topic(ctx.name("t"))
        members = stable_group(ctx, ctx.name("g"), ("A",))
        ctx.call(members[0].connection, builders.offset_commit(8, ctx.name("h"), {ctx.name("t"): {0: 1}}))
        ctx.call(members[0].connection, builders.list_groups(4, states=[state]), view=_ours)


for _state in ("Stable", "Empty", "PreparingRebalance"):
    _list_states(_state)


def _list_types(kind: str) -> None:
    @scenario(f"groups.list-types-filter.{kind}", "groups-admin",
              f"ListGroups v5 filtered on type {kind} with a classic and a consumer group (KIP-848)")
    def run(ctx: ScenarioContext) -> None:
        from kgroup.broker_conformance.members import ConsumerMember
        ctx.create_topic(ctx.name("t"))
        members = stable_group(ctx, ctx.name("g"), ("A",))
        ConsumerMember(ctx, ctx.name("c"), "C", topics=(ctx.name("t"),)).heartbeat()
        ctx.call(members[0].connection, builders.list_groups(5, types=[kind]), view=_ours)


for _kind in ("classic", "consumer"):
    _list_types(_kind)


def _delete_empty(version: int) -> None:
    @scenario(f"groups.delete-empty.v{version}", "groups-admin",
              f"DeleteGroups v{version} of an Empty group that had members: NONE, then it is gone "
              "(testDeleteGroups)")
    def run(ctx: ScenarioContext) -> None:
        members = stable_group(ctx, ctx.name("g"), ("A",))
        members[0].leave()
        ctx.call(members[0].connection, builders.delete_groups(version, ctx.name("g")))
        ctx.call(members[0].connection, builders.describe_groups(5, ctx.name("g")))
        ctx.call(members[0].connection, builders.list_groups(3), view=_ours)


for _v in range(0, 3):
    _delete_empty(_v)


@scenario("groups.delete-non-empty", "groups-admin",
          "DeleteGroups of a group with a member: NON_EMPTY_GROUP and the group stays "
          "(testDeleteNonEmptyGroup)")
def _delete_non_empty(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A",))
    ctx.call(members[0].connection, builders.delete_groups(2, ctx.name("g")))
    members[0].heartbeat()


@scenario("groups.delete-unknown", "groups-admin",
          "DeleteGroups of a group that does not exist: GROUP_ID_NOT_FOUND (testDeleteGroupsUnknownGroup...)")
def _delete_unknown(ctx: ScenarioContext) -> None:
    ctx.call(ctx.group_connection(ctx.name("g")), builders.delete_groups(2, ctx.name("g")))


@scenario("groups.delete-twice", "groups-admin",
          "DeleteGroups of one group listed twice and again after: NONE then GROUP_ID_NOT_FOUND")
def _delete_twice(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    connection = ctx.group_connection(ctx.name("g"))
    ctx.call(connection, builders.offset_commit(8, ctx.name("g"), {ctx.name("t"): {0: 1}}))
    ctx.call(connection, builders.delete_groups(2, ctx.name("g")))
    ctx.call(connection, builders.delete_groups(2, ctx.name("g")), "DeleteGroups v2 again")


@scenario("groups.delete-mixed-batch", "groups-admin",
          "DeleteGroups of an empty, a non-empty and an unknown group in one request: one error each")
def _delete_batch(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    members = stable_group(ctx, ctx.name("g"), ("A",))
    ctx.call(members[0].connection, builders.offset_commit(8, ctx.name("h"), {ctx.name("t"): {0: 1}}))
    ctx.call(members[0].connection, builders.delete_groups(2, ctx.name("g"), ctx.name("h"), ctx.name("x")))


@scenario("groups.delete-then-rejoin", "groups-admin",
          "After DeleteGroups a member joins the same group id: a new group at generation 1")
def _delete_rejoin(ctx: ScenarioContext) -> None:
    members = stable_group(ctx, ctx.name("g"), ("A",))
    members[0].leave()
    ctx.call(members[0].connection, builders.delete_groups(2, ctx.name("g")))
    again = ClassicMember(ctx, ctx.name("g"), "B")
    again.join()
