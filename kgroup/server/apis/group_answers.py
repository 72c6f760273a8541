"""Pieces several group APIs' codecs share: partitions by topic, per-partition errors in request
order, and the authorized operations a described group answers."""
from __future__ import annotations

import collections
from typing import Any, Dict, Iterable, List, Optional

from kgroup.core.error_codes import ErrorCode
from kgroup.server.acl_operations import GROUP_OPERATIONS, NOT_REQUESTED
from kgroup.server.apis.definition import TopicIds
from kgroup.values import TopicPartition

__all__ = ["by_topic", "group_operations", "metadata_text", "partition_errors"]


def metadata_text(value: Optional[str]) -> str:
    return value if value is not None else ""


def by_topic(partitions: Iterable[TopicPartition]) -> Dict[str, List[int]]:
    """Partition numbers by topic, both sorted."""
    grouped: Dict[str, List[int]] = collections.defaultdict(list)
    for tp in sorted(partitions):
        grouped[tp.topic].append(tp.partition)
    return grouped


def partition_errors(request: Any, answered: Dict[TopicPartition, int],
                     topics: TopicIds) -> Dict[str, List[tuple]]:
    """(partition, error code) by topic, in request order: the coordinator's answers (``answered``,
    topic-partition -> code) and UNKNOWN_TOPIC_OR_PARTITION for what the broker kept from it."""
    grouped: Dict[str, List[tuple]] = collections.defaultdict(list)
    unknown = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    for t in request.topics:
        for p in t.partitions:
            code = answered.get(TopicPartition(t.name, p.partition_index))
            if code is None and not topics.has_partition(t.name, p.partition_index):
                code = unknown
            if code is not None:
                grouped[t.name].append((p.partition_index, code))
    return grouped


def group_operations(request: Any, error_code: ErrorCode, default: int = NOT_REQUESTED) -> int:
    """KafkaApis (describe groups): every group operation for a group described without error, when asked."""
    if getattr(request, "include_authorized_operations", False) and error_code is ErrorCode.NONE:
        return GROUP_OPERATIONS
    return default
