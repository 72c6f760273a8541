"""Benchmark groups, as kgroup inputs (kafka-python's are built from these)."""
from __future__ import annotations

from typing import Mapping, Sequence

import attrs

from kgroup.values import Subscription, TopicPartition


@attrs.frozen
class Size:
    """A group shape: ``members`` consumers, ``topics`` topics of ``partitions_per_topic`` each."""

    members: int
    topics: int
    partitions_per_topic: int

    @property
    def partitions(self) -> int:
        return self.topics * self.partitions_per_topic

    @property
    def label(self) -> str:
        return f"{self.members}x{self.partitions}"


#: Runs in the default (smoke) test run: cheap for every assignor.
SMALL = Size(10, 2, 50)
#: The issue's target size: 1,000 members x 10,000 partitions (10 topics x 1,000).
TARGET = Size(1000, 10, 1000)
#: Every size the full run measures, smallest first (the plot's x axis).
SIZES = (SMALL, Size(100, 10, 100), Size(300, 10, 300), TARGET)


def group(size: Size) -> tuple[dict[str, int], dict[str, Subscription]]:
    """Identical subscriptions to every topic; member ids sort in creation order."""
    partitions_per_topic = {f"topic-{t:03d}": size.partitions_per_topic for t in range(size.topics)}
    topics = tuple(partitions_per_topic)
    subscriptions = {f"consumer-{m:05d}": Subscription(topics=topics) for m in range(size.members)}
    return partitions_per_topic, subscriptions


def leaver(subscriptions: Mapping[str, Subscription]) -> str:
    """The member that leaves: the middle one, so neither end of any ordering."""
    members = sorted(subscriptions)
    return members[len(members) // 2]


def after_leave(
    subscriptions: Mapping[str, Subscription],
    previous: Mapping[str, Sequence[TopicPartition]],
    generation_id: int = 1,
) -> dict[str, Subscription]:
    """The next rebalance's subscriptions: one member gone, the rest claiming what they own."""
    gone = leaver(subscriptions)
    return {
        member: attrs.evolve(sub, owned_partitions=previous[member], generation_id=generation_id)
        for member, sub in subscriptions.items()
        if member != gone
    }
