"""The server-side ``range`` assignor (Kafka's org.apache.kafka.coordinator.group.assignor.RangeAssignor).

Per topic, the subscribed members in order (static members by instance id
first, then the others by member id) each get one contiguous range:
``P // M`` partitions, the first ``P % M`` members one more.  Members with
the same subscription therefore get co-partitioned ranges, which joins need.
Like Kafka's, it does not try to keep current partitions.
"""
from __future__ import annotations

from typing import Mapping

from kgroup.assignors.server_base import AssignmentMember, ServerAssignor
from kgroup.values import TopicPartition

__all__ = ["ServerRangeAssignor"]


def _order(member: AssignmentMember) -> tuple:
    # Kafka's sortMemberIds: instance ids first, compared among themselves, then member ids.
    if member.instance_id is not None:
        return (0, member.instance_id)
    return (1, member.member_id)


class ServerRangeAssignor(ServerAssignor):
    name = "range"

    def assign(self, members: Mapping[str, AssignmentMember],
               partitions_per_topic: Mapping[str, int]) -> dict[str, frozenset[TopicPartition]]:
        ordered = sorted(members.values(), key=_order)
        assignment: dict[str, set[TopicPartition]] = {m.member_id: set() for m in ordered}
        topics = sorted({t for m in ordered for t in m.subscribed_topics if t in partitions_per_topic})
        for topic in topics:
            subscribed = [m.member_id for m in ordered if topic in m.subscribed_topics]
            quota, extra = divmod(partitions_per_topic[topic], len(subscribed))
            start = 0
            for index, member_id in enumerate(subscribed):
                end = start + quota + (1 if index < extra else 0)
                assignment[member_id].update(TopicPartition(topic, p) for p in range(start, end))
                start = end
        return {member_id: frozenset(owned) for member_id, owned in assignment.items()}
