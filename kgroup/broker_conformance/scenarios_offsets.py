"""OffsetCommit and OffsetFetch across versions, by members and by admin clients, with their errors.

Kafka sources: ``OffsetMetadataManagerTest`` (org.apache.kafka.coordinator.group),
``KafkaApis.handleOffsetCommitRequest`` / ``handleOffsetFetchRequest``.
"""
from __future__ import annotations

from typing import Any

from kgroup.broker_conformance import builders
from kgroup.broker_conformance.members import ClassicMember, stable_group
from kgroup.broker_conformance.scenario import ScenarioContext, scenario


def _commit_fetch(version: int) -> None:
    @scenario(f"offsets.commit.admin.v{version}", "offsets",
              f"OffsetCommit v{version} outside the group protocol (generation -1, no member) to a new "
              "group: "
              "NONE; OffsetFetch gives the offset and metadata back "
              "(OffsetMetadataManagerTest.testGenericGroupOffsetCommitWithoutMemberIdAndGeneration)")
    def run(ctx: ScenarioContext) -> None:
        topic = ctx.name("t")
        ctx.create_topic(topic, 2)
        connection = ctx.group_connection(ctx.name("g"))
        ctx.call(connection, builders.offset_commit(version, ctx.name("g"), {topic: {0: 5, 1: 9}},
                                                    metadata="meta"))
        ctx.call(connection, builders.offset_fetch(min(max(version, 1), 7), ctx.name("g"), {topic: [0, 1]}))


for _v in range(2, 10):
    _commit_fetch(_v)


def _member_commit(version: int) -> None:
    @scenario(f"offsets.commit.member.v{version}", "offsets",
              f"OffsetCommit v{version} by a Stable member with its generation: NONE; with the previous "
              "generation: ILLEGAL_GENERATION (testGenericGroupOffsetCommitWithIllegalGeneration)")
    def run(ctx: ScenarioContext) -> None:
        topic = ctx.name("t")
        ctx.create_topic(topic)
        member = stable_group(ctx, ctx.name("g"), ("A",), topic=topic)[0]
        member.commit({topic: {0: 11}}, version)
        member.commit({topic: {0: 12}}, version, generation_id=member.generation_id - 1)
        ctx.call(member.connection, builders.offset_fetch(6, ctx.name("g"), {topic: [0]}))


for _v in range(2, 10):
    _member_commit(_v)


def _fetch(version: int) -> None:
    @scenario(f"offsets.fetch.v{version}", "offsets",
              f"OffsetFetch v{version} of a committed, an uncommitted and an unknown topic's partition "
              "(OffsetMetadataManagerTest.testFetchOffsets...)")
    def run(ctx: ScenarioContext) -> None:
        topic = ctx.name("t")
        ctx.create_topic(topic, 2)
        connection = ctx.group_connection(ctx.name("g"))
        ctx.call(connection, builders.offset_commit(8, ctx.name("g"), {topic: {0: 7}}, metadata="m"))
        ctx.call(connection, builders.offset_fetch(version, ctx.name("g"),
                                                   {topic: [0, 1], ctx.name("missing"): [0]}))


for _v in range(1, 10):
    _fetch(_v)


def _fetch_all(version: int) -> None:
    @scenario(f"offsets.fetch-all.v{version}", "offsets",
              f"OffsetFetch v{version} with null topics: every committed offset of the group "
              "(testFetchAllOffsets)")
    def run(ctx: ScenarioContext) -> None:
        topic = ctx.name("t")
        ctx.create_topic(topic, 3)
        connection = ctx.group_connection(ctx.name("g"))
        ctx.call(connection, builders.offset_commit(8, ctx.name("g"), {topic: {0: 1, 2: 3}}))
        ctx.call(connection, builders.offset_fetch(version, ctx.name("g"), None))


for _v in range(2, 10):
    _fetch_all(_v)


def _fetch_unknown_group(version: int) -> None:
    @scenario(f"offsets.fetch-unknown-group.v{version}", "offsets",
              f"OffsetFetch v{version} for a group that never existed: -1 offsets "
              "(testFetchOffsetsWithUnknownGroup...)")
    def run(ctx: ScenarioContext) -> None:
        topic = ctx.name("t")
        ctx.create_topic(topic)
        connection = ctx.group_connection(ctx.name("g"))
        ctx.call(connection, builders.offset_fetch(version, ctx.name("g"), {topic: [0]}))
        if version >= 2:
            ctx.call(connection, builders.offset_fetch(version, ctx.name("g"), None), f"OffsetFetch "
                                                                                      f"v{version} all")


for _v in (1, 3, 6, 8):
    _fetch_unknown_group(_v)


def _commit_unknown_topic(version: int) -> None:
    @scenario(f"offsets.commit-unknown-topic.v{version}", "offsets",
              f"OffsetCommit v{version} to a topic that does not exist and to a partition a topic lacks "
              "(KafkaApis.handleOffsetCommitRequest: UNKNOWN_TOPIC_OR_PARTITION for unknown partitions)")
    def run(ctx: ScenarioContext) -> None:
        topic = ctx.name("t")
        ctx.create_topic(topic)
        connection = ctx.group_connection(ctx.name("g"))
        ctx.call(connection, builders.offset_commit(version, ctx.name("g"),
                                                    {ctx.name("missing"): {0: 1}, topic: {0: 2, 5: 3}}))
        ctx.call(connection, builders.offset_fetch(min(version, 7), ctx.name("g"), None))


for _v in (2, 7, 8, 9):
    _commit_unknown_topic(_v)


@scenario("offsets.commit.unknown-member", "offsets",
          "OffsetCommit naming a member the Stable group does not know: UNKNOWN_MEMBER_ID "
          "(testGenericGroupOffsetCommitWithUnknownMemberId)")
def _unknown_member(ctx: ScenarioContext) -> None:
    topic = ctx.name("t")
    ctx.create_topic(topic)
    member = stable_group(ctx, ctx.name("g"), ("A",), topic=topic)[0]
    member.commit({topic: {0: 1}}, member_id="nobody")


@scenario("offsets.commit.generation-on-unknown-group", "offsets",
          "OffsetCommit with a generation and a member id to a group that does not exist "
          "(testGenericGroupOffsetCommitWithUnknownGroup...)")
def _commit_unknown_group(ctx: ScenarioContext) -> None:
    topic = ctx.name("t")
    ctx.create_topic(topic)
    connection = ctx.group_connection(ctx.name("g"))
    ctx.call(connection, builders.offset_commit(8, ctx.name("g"), {topic: {0: 1}}, generation_id=1,
                                                member_id="nobody"))


@scenario("offsets.commit.admin-to-active-group", "offsets",
          "OffsetCommit with generation -1 and no member id to a group with members "
          "(an admin commit to a live group: testGenericGroupOffsetCommitWithEmptyMemberIdInActiveGroup...)")
def _admin_active(ctx: ScenarioContext) -> None:
    topic = ctx.name("t")
    ctx.create_topic(topic)
    member = stable_group(ctx, ctx.name("g"), ("A",), topic=topic)[0]
    ctx.call(member.connection, builders.offset_commit(8, ctx.name("g"), {topic: {0: 4}}))


@scenario("offsets.commit.during-preparing-rebalance", "offsets",
          "OffsetCommit by a member with its generation while the group prepares a rebalance "
          "(testGenericGroupOffsetCommitWhileInPreparingRebalance...)")
def _commit_preparing(ctx: ScenarioContext) -> None:
    topic = ctx.name("t")
    ctx.create_topic(topic)
    member = stable_group(ctx, ctx.name("g"), ("A",), topic=topic)[0]
    joiner = ClassicMember(ctx, ctx.name("g"), "B", topics=(topic,))
    joiner.send_join()
    joiner.receive_join()
    joiner.send_join()
    ctx.wait_group_state(ctx.name("g"), "PreparingRebalance")
    member.commit({topic: {0: 6}})


@scenario("offsets.commit.during-completing-rebalance", "offsets",
          "OffsetCommit while the group waits for the leader's SyncGroup: REBALANCE_IN_PROGRESS "
          "(testGenericGroupOffsetCommitWhileInCompletingRebalance)")
def _commit_completing(ctx: ScenarioContext) -> None:
    topic = ctx.name("t")
    ctx.create_topic(topic)
    member = ClassicMember(ctx, ctx.name("g"), "A", topics=(topic,))
    member.join()
    member.commit({topic: {0: 6}})


@scenario("offsets.commit.metadata-too-large", "offsets",
          "OffsetCommit with 5,000 characters of metadata (offset.metadata.max.bytes 4096): "
          "OFFSET_METADATA_TOO_LARGE (testOffsetCommitWithOversizedMetadata...)")
def _metadata_too_large(ctx: ScenarioContext) -> None:
    topic = ctx.name("t")
    ctx.create_topic(topic)
    connection = ctx.group_connection(ctx.name("g"))
    ctx.call(connection, builders.offset_commit(8, ctx.name("g"), {topic: {0: 1}}, metadata="x" * 5000))
    ctx.call(connection, builders.offset_fetch(8, ctx.name("g"), {topic: [0]}))


@scenario("offsets.commit.null-metadata", "offsets",
          "OffsetCommit with null metadata: fetched back as the empty string (OffsetCommitRequest's "
          "nullable CommittedMetadata)")
def _null_metadata(ctx: ScenarioContext) -> None:
    topic = ctx.name("t")
    ctx.create_topic(topic)
    connection = ctx.group_connection(ctx.name("g"))
    ctx.call(connection, builders.offset_commit(8, ctx.name("g"), {topic: {0: 1}}, metadata=None))
    ctx.call(connection, builders.offset_fetch(8, ctx.name("g"), {topic: [0]}))


@scenario("offsets.commit.empty-group-id", "offsets",
          "OffsetCommit with an empty group id: INVALID_GROUP_ID (KafkaApis / GroupCoordinatorService)")
def _empty_group_commit(ctx: ScenarioContext) -> None:
    topic = ctx.name("t")
    ctx.create_topic(topic)
    ctx.call(ctx.connect(), builders.offset_commit(8, "", {topic: {0: 1}}))


@scenario("offsets.commit.negative-offset", "offsets",
          "OffsetCommit of offset -1 is stored as given and fetched back")
def _negative_offset(ctx: ScenarioContext) -> None:
    topic = ctx.name("t")
    ctx.create_topic(topic)
    connection = ctx.group_connection(ctx.name("g"))
    ctx.call(connection, builders.offset_commit(8, ctx.name("g"), {topic: {0: -1}}))
    ctx.call(connection, builders.offset_fetch(8, ctx.name("g"), {topic: [0]}))


@scenario("offsets.commit.overwrite", "offsets",
          "Two commits to one partition: the later one wins (testOffsetCommitOverwrites...)")
def _overwrite(ctx: ScenarioContext) -> None:
    topic = ctx.name("t")
    ctx.create_topic(topic)
    connection = ctx.group_connection(ctx.name("g"))
    ctx.call(connection, builders.offset_commit(8, ctx.name("g"), {topic: {0: 9}}))
    ctx.call(connection, builders.offset_commit(8, ctx.name("g"), {topic: {0: 4}}))
    ctx.call(connection, builders.offset_fetch(8, ctx.name("g"), {topic: [0]}))


@scenario("offsets.deleted-group", "offsets",
          "Commit, DeleteGroups, then OffsetFetch: the offsets are gone (-1) and the group is Dead "
          "(GroupCoordinatorService.deleteGroups; testDeleteGroups...)")
def _deleted_group(ctx: ScenarioContext) -> None:
    topic = ctx.name("t")
    ctx.create_topic(topic)
    connection = ctx.group_connection(ctx.name("g"))
    ctx.call(connection, builders.offset_commit(8, ctx.name("g"), {topic: {0: 9}}))
    ctx.call(connection, builders.delete_groups(2, ctx.name("g")))
    ctx.call(connection, builders.offset_fetch(8, ctx.name("g"), {topic: [0]}))
    ctx.call(connection, builders.offset_fetch(8, ctx.name("g"), None), "OffsetFetch v8 all")
    ctx.call(connection, builders.describe_groups(5, ctx.name("g")))


@scenario("offsets.commit-only-group-describe", "offsets",
          "A group that only has offsets is Empty with no protocol type (DescribeGroups) and is listed")
def _commit_only(ctx: ScenarioContext) -> None:
    topic = ctx.name("t")
    ctx.create_topic(topic)
    connection = ctx.group_connection(ctx.name("g"))
    ctx.call(connection, builders.offset_commit(8, ctx.name("g"), {topic: {0: 9}}))
    ctx.call(connection, builders.describe_groups(5, ctx.name("g")))
    ctx.call(connection, builders.list_groups(5), "ListGroups v5",
             view=lambda v: [g for g in v["groups"] if "RUN" in g["group_id"]])


def _multi_group(version: int) -> None:
    @scenario(f"offsets.fetch-batched-groups.v{version}", "offsets",
              f"OffsetFetch v{version} for two groups in one request, one of them unknown (KIP-709)")
    def run(ctx: ScenarioContext) -> None:
        topic = ctx.name("t")
        ctx.create_topic(topic)
        connection = ctx.group_connection(ctx.name("g"))
        ctx.call(connection, builders.offset_commit(8, ctx.name("g"), {topic: {0: 2}}))
        groups = {ctx.name("g"): {topic: [0]}, ctx.name("h"): None}
        ctx.call(connection, builders.offset_fetch_groups(version, groups))


for _v in (8, 9):
    _multi_group(_v)


@scenario("offsets.fetch-require-stable-during-rebalance", "offsets",
          "OffsetFetch v7 with require_stable while the group rebalances (no pending transactional offsets: "
          "answered normally)")
def _require_stable(ctx: ScenarioContext) -> None:
    topic = ctx.name("t")
    ctx.create_topic(topic)
    member = stable_group(ctx, ctx.name("g"), ("A",), topic=topic)[0]
    member.commit({topic: {0: 8}})
    member.send_join()
    member.receive_join()
    ctx.call(member.connection, builders.offset_fetch(7, ctx.name("g"), {topic: [0]}, require_stable=True))


@scenario("offsets.commit.static-member", "offsets",
          "OffsetCommit v7 by a static member with its instance id and generation: NONE")
def _static_commit(ctx: ScenarioContext) -> None:
    topic = ctx.name("t")
    ctx.create_topic(topic)
    member = ClassicMember(ctx, ctx.name("g"), "A", instance_id=ctx.name("i1"), topics=(topic,))
    member.join()
    member.sync()
    member.commit({topic: {0: 3}}, 7)


@scenario("offsets.deleted-topic", "offsets",
          "Commit on two topics, DeleteTopics of one: OffsetFetch v8 (listed and all) no longer has its "
          "offsets and keeps the other's; re-created with the same name it starts without them "
          "(GroupCoordinatorService.onPartitionsDeleted, OffsetMetadataManagerTest.testOnPartitionsDeleted)")
def _deleted_topic(ctx: ScenarioContext) -> None:
    deleted, kept = ctx.name("t"), ctx.name("u")
    ctx.create_topic(deleted, 2)
    ctx.create_topic(kept)
    connection = ctx.group_connection(ctx.name("g"))
    listed = {deleted: [0, 1], kept: [0]}
    ctx.call(connection, builders.offset_commit(8, ctx.name("g"), {deleted: {0: 5, 1: 6}, kept: {0: 7}}))
    ctx.call(connection, builders.delete_topics(5, deleted))
    # Kafka deletes asynchronously: its metadata publisher sees the deletion, then the group coordinator
    # writes the tombstones.  Bounded waits (not recorded) for both.
    ctx.wait_until(lambda: _topic_gone(connection, deleted), "the deleted topic gone from Metadata")
    ctx.wait_until(lambda: _committed(connection, ctx.name("g"), deleted) == -1,
                   "the deleted topic's offset gone", bound_s=10.0)
    ctx.call(connection, builders.offset_fetch(8, ctx.name("g"), listed), "OffsetFetch v8 after the delete")
    ctx.call(connection, builders.offset_fetch(8, ctx.name("g"), None), "OffsetFetch v8 all after the delete")
    ctx.create_topic(deleted, 2)
    ctx.call(connection, builders.offset_fetch(8, ctx.name("g"), listed), "OffsetFetch v8 after re-creating")
    ctx.call(connection, builders.offset_fetch(8, ctx.name("g"), None),
             "OffsetFetch v8 all after re-creating")


def _topic_gone(connection: Any, topic: str) -> bool:
    """Metadata no longer lists ``topic`` (a wait's probe, not recorded)."""
    return int(connection.request(builders.metadata(12, [topic])).topics[0].error_code) != 0


def _committed(connection: Any, group_id: str, topic: str) -> int:
    """The group's committed offset of ``topic``-0 now, -1 for none (a wait's probe, not recorded)."""
    answer = connection.request(builders.offset_fetch(8, group_id, {topic: [0]}))
    return int(answer.groups[0].topics[0].partitions[0].committed_offset)
