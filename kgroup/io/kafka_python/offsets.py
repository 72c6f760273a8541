"""Offsets in kafka-python's shapes.

kafka-python applications pass ``{TopicPartition: kafka.structs.OffsetAndMetadata}``
to ``commit()``; kgroup's member speaks :mod:`kgroup.core.messages`.  These
helpers translate at the edge, in both directions.  Errors are translated
by :mod:`kgroup.io.kafka_python.errors`.
"""
from __future__ import annotations

from typing import Mapping

from kafka.structs import OffsetAndMetadata as KOffsetAndMetadata
from kafka.structs import TopicPartition

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.io.kafka_python.partitions import to_kafka_partition
from kgroup.values import TopicPartition as KGroupTopicPartition


def to_commits(offsets: Mapping[TopicPartition, KOffsetAndMetadata]) -> tuple[m.PartitionOffsetCommit, ...]:
    """kafka-python's commit argument as kgroup commit entries."""
    commits = []
    for tp, oam in offsets.items():
        # kgroup's own TopicPartition is accepted too: it was kafka-python's class before kgroup had one.
        is_partition = isinstance(tp, (TopicPartition, KGroupTopicPartition))
        if not is_partition or not isinstance(oam, KOffsetAndMetadata):
            raise TypeError("offsets must be dict[TopicPartition, OffsetAndMetadata]")
        epoch = oam.leader_epoch if oam.leader_epoch is not None else -1
        commits.append(m.PartitionOffsetCommit(KGroupTopicPartition(*tp),
                                               m.OffsetAndMetadata(oam.offset, oam.metadata or "", epoch)))
    return tuple(commits)


def to_kafka_offsets(partitions) -> dict[TopicPartition, KOffsetAndMetadata]:
    """Committed offsets (kgroup ``PartitionOffset``s) as kafka-python's dict;
    partitions with nothing committed are left out, as kafka-python does."""
    return {
        to_kafka_partition(p.topic_partition):
            KOffsetAndMetadata(p.committed.offset, p.committed.metadata, p.committed.leader_epoch)
        for p in partitions
        if p.committed is not None and p.error_code is ErrorCode.NONE
    }
