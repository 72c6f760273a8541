"""The target assignment a heartbeat computes (split from the manager): Kafka's TargetAssignmentBuilder.

The server assignor the members prefer maps their subscriptions (topic names plus what their regex
resolved to) and current targets to the new target of every member.  Nothing here changes the group:
the manager stores the result only once the whole heartbeat is accepted.
"""
from __future__ import annotations

import collections
from typing import Callable, Mapping, Optional

from kgroup.assignors import get_server_assignor
from kgroup.assignors.server_base import AssignmentMember, ServerAssignor
from kgroup.core.consumer_group.context import ConsumerGroupContext
from kgroup.core.consumer_group.group import ConsumerGroup
from kgroup.core.consumer_group.heartbeat_checks import HeartbeatRefused
from kgroup.core.consumer_group.member import ConsumerGroupMember
from kgroup.core.coordinator_common.config import GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode
from kgroup.values import TopicPartition

__all__ = ["TargetAssignmentBuilder", "members_after"]

E = ErrorCode


def members_after(group: ConsumerGroup, updated: ConsumerGroupMember,
                  replaced: Optional[str]) -> list[ConsumerGroupMember]:
    """The group's members once ``updated`` is stored (replacing static member ``replaced``), in the order
    the group will hold them: a member whose value changes moves to the end, as the group's dict does."""
    if group.members.get(updated.member_id) == updated:
        return list(group.members.values())
    return [m for m in group.members.values() if m.member_id not in (updated.member_id, replaced)] + [updated]


def _preferred(assignor_names: list[str], default: str) -> str:
    """Kafka's preferredServerAssignor over these names (ConsumerGroup.preferred_assignor's rule)."""
    if not assignor_names:
        return default
    counts = collections.Counter(assignor_names)
    return max(sorted(counts), key=lambda name: counts[name])


class TargetAssignmentBuilder:
    def __init__(self, config: GroupCoordinatorConfig, context: ConsumerGroupContext,
                 server_assignors: Mapping[str, ServerAssignor]) -> None:
        self._config = config
        self._context = context
        #: Assignor instances by name that take precedence over the registry (tests' prepared assignors).
        self._server_assignors = server_assignors

    def build(self, group: ConsumerGroup, members: list[ConsumerGroupMember],
              current_target: Callable[[str], frozenset[TopicPartition]],
              metadata: Mapping[str, int], group_epoch: int) -> dict[str, frozenset[TopicPartition]]:
        """The assignor maps ``members``' subscriptions to the new target.

        An assignor that raises refuses the heartbeat with UNKNOWN_SERVER_ERROR
        (GroupMetadataManager.updateTargetAssignment turns PartitionAssignorException into
        UnknownServerException); nothing has changed yet.  A member's subscription is its topic
        names plus what its regex resolved to.
        """
        assignors = [m.server_assignor for m in members if m.server_assignor is not None]
        name = _preferred(assignors, self._config.consumer_group_assignors[0])
        specs = {
            m.member_id: AssignmentMember(m.member_id, group.member_topics(m),
                                          current_target(m.member_id), m.instance_id, m.rack_id)
            for m in members
        }
        try:
            assignor = self._server_assignors.get(name) or get_server_assignor(name)
            if assignor.uses_partition_racks:
                # Looked up only for an assignor that reads them: a million partitions' racks cost.
                racks = {topic: self._context.partition_racks(topic) for topic in metadata}
                result = assignor.assign(specs, metadata, partition_racks=racks)  # type: ignore[call-arg]
            else:
                result = assignor.assign(specs, metadata)
        except Exception as error:  # any assignor failure, as Kafka's PartitionAssignorException
            raise HeartbeatRefused(E.UNKNOWN_SERVER_ERROR, f"Failed to compute a new target assignment for "
                                                           f"epoch {group_epoch}: {error}") from error
        return {mid: result.get(mid, frozenset()) for mid in specs}
