"""What the transaction APIs' codecs share: KIP-588's PRODUCER_FENCED, which older versions of the
request do not know (``KafkaApis`` answers them INVALID_PRODUCER_EPOCH instead), and partitions
grouped by topic for the AddPartitionsToTxn and DescribeTransactions layouts."""
from __future__ import annotations

import collections
from typing import Dict, Iterable, List, Tuple

from kgroup.core.error_codes import ErrorCode
from kgroup.values import TopicPartition

__all__ = ["by_topic", "for_version"]


def for_version(code: int, version: int, first_fenced_version: int) -> int:
    """``code`` as a client of ``version`` understands it: PRODUCER_FENCED exists from
    ``first_fenced_version`` on (InitProducerId v4, AddPartitionsToTxn / AddOffsetsToTxn / EndTxn v2)."""
    if code == ErrorCode.PRODUCER_FENCED and version < first_fenced_version:
        return int(ErrorCode.INVALID_PRODUCER_EPOCH)
    return int(code)


def by_topic(pairs: Iterable[Tuple[TopicPartition, int]]) -> Dict[str, List[Tuple[int, int]]]:
    """(partition, value) pairs by topic, in first-seen order."""
    grouped: Dict[str, List[Tuple[int, int]]] = collections.defaultdict(list)
    for tp, value in pairs:
        grouped[tp.topic].append((tp.partition, value))
    return grouped
