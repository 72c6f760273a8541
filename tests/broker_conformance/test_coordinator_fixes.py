"""kgroup's coordinator fixed where the conformance suite found it answering differently from Kafka 4.4
(scenarios classic.leave.unknown-group.v3 and offsets.commit.metadata-too-large)."""
from __future__ import annotations

from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    LeaveGroupRequest, MemberIdentity, OffsetAndMetadata, OffsetCommitRequest, OffsetFetchRequest,
    PartitionOffsetCommit,
)
from kgroup.values import TopicPartition


def _answer(coordinator: GroupCoordinator, request: object):
    result = coordinator.handle("k", request, 0)
    (delivery,) = result.deliveries
    return delivery.response


def test_leave_of_an_unknown_group_answers_per_member():
    """Kafka 4.x: NONE at the top, UNKNOWN_MEMBER_ID for each member (v3+ batch shape)."""
    leaving = (MemberIdentity("m1"), MemberIdentity("", "i"))
    answer = _answer(GroupCoordinator(), LeaveGroupRequest("nope", leaving))
    assert answer.error_code is ErrorCode.NONE
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in answer.members] == [
        ("m1", None, ErrorCode.UNKNOWN_MEMBER_ID), ("", "i", ErrorCode.UNKNOWN_MEMBER_ID)]


def test_commit_metadata_over_the_limit_is_refused_for_that_partition_only():
    """OffsetMetadataManager: OFFSET_METADATA_TOO_LARGE per partition (offset.metadata.max.bytes)."""
    coordinator = GroupCoordinator(GroupCoordinatorConfig(offset_metadata_max_bytes=10))
    big, small = TopicPartition("t", 0), TopicPartition("t", 1)
    answer = _answer(coordinator, OffsetCommitRequest("g", (
        PartitionOffsetCommit(big, OffsetAndMetadata(5, "x" * 11)),
        PartitionOffsetCommit(small, OffsetAndMetadata(6, "x" * 10)))))
    assert [(p.topic_partition, p.error_code) for p in answer.partitions] == [
        (big, ErrorCode.OFFSET_METADATA_TOO_LARGE), (small, ErrorCode.NONE)]
    fetched = _answer(coordinator, OffsetFetchRequest("g", (big, small)))
    assert {p.topic_partition: (p.committed.offset if p.committed else None) for p in fetched.partitions} == {
        big: None, small: 6}


def test_default_limit_is_kafkas_4096():
    assert GroupCoordinatorConfig().offset_metadata_max_bytes == 4096
