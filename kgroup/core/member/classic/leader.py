"""Subscriptions and assignments: what a member joins with, and what the leader makes of everyone's.

Java ``ConsumerCoordinator.metadata`` builds the member's subscription;
``ConsumerCoordinator.onLeaderElected``: the leader assigns only from the
members' metadata and the partition counts it knows, and remembers the
group's topics so it can rejoin when one of their partition counts changes
(:class:`Leadership`).
"""
from __future__ import annotations

import logging
from typing import Mapping, Optional, Sequence

import attrs

from kgroup.assignors import RebalanceProtocol
from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member.classic import codec
from kgroup.core.member.classic.config import MemberConfig
from kgroup.errors import GroupMemberError, KGroupError
from kgroup.values import Assignment, Subscription

_log = logging.getLogger(__name__)


def member_subscription(config: MemberConfig, assignor, topics: frozenset, owned: frozenset,
                        generation_id: int, last_assignment: tuple[frozenset, int]) -> Subscription:
    """The subscription this member joins with, for ``assignor``'s protocol entry."""
    sorted_topics = sorted(topics)
    if config.protocol is RebalanceProtocol.COOPERATIVE:
        claimed = hint = sorted(owned)
    else:
        # Eager revoked everything, so it claims nothing (Java's ConsumerCoordinator sends the
        # emptied assignment): a cooperative assignor chosen by a mixed group must not withhold
        # partitions for an owner that will never revoke them.  The last assignment is only a
        # stickiness hint, in the assignor's user data (Java's StickyAssignor does the same).
        claimed, (hint, generation_id) = [], (sorted(last_assignment[0]), last_assignment[1])
    return Subscription(topics=sorted_topics, owned_partitions=claimed, generation_id=generation_id,
                        rack_id=config.rack_id,
                        user_data=assignor.subscription_user_data(sorted_topics, hint, generation_id))


def leader_assignments(config: MemberConfig, response: m.JoinGroupResponse,
                       metadata: Mapping[str, int]) -> tuple[dict[str, Optional[int]], tuple]:
    """(the group's topics with known partition counts, the SyncGroup assignments).

    KIP-814: a static leader that replaced itself (``skip_assignment``) keeps
    the group's current assignment and sends none; it only learns the
    group's topics to watch their partition counts.  Raises KGroupError if
    the group chose a protocol this member does not have, or the assignor fails.
    """
    assignor = None if response.skip_assignment else chosen_assignor(config, response.protocol_name)
    subscriptions = decode_subscriptions(config.group_id, response.members)
    snapshot = group_topics(subscriptions, metadata)
    if assignor is None:
        return snapshot, ()
    return snapshot, sync_assignments(assignor, snapshot, subscriptions)


def decode_subscriptions(group_id: str, members: Sequence[m.JoinGroupMember]) -> dict[str, Subscription]:
    """Every member's subscription; one whose bytes do not decode subscribes to nothing.

    One bad client must not take the group down: failing here would make
    each leader in turn go fatal on the same bytes.
    """
    subscriptions = {}
    for member in members:
        try:
            subscription = codec.decode_subscription(member.metadata)
        except KGroupError as exc:
            _log.warning("group %s: member %s sent subscription metadata this leader cannot decode "
                         "(%s); it is assigned nothing", group_id, member.member_id, exc)
            subscription = Subscription(topics=())
        if member.group_instance_id is not None:
            subscription = attrs.evolve(subscription, group_instance_id=member.group_instance_id)
        subscriptions[member.member_id] = subscription
    return subscriptions


def group_topics(subscriptions: Mapping[str, Subscription],
                 metadata: Mapping[str, int]) -> dict[str, Optional[int]]:
    """The group's topics with the partition counts this member knows (None: unknown)."""
    topics = sorted({t for s in subscriptions.values() for t in s.topics})
    return {t: metadata.get(t) for t in topics}


def chosen_assignor(config: MemberConfig, protocol_name: Optional[str]):
    """The assignor the group chose; the member must have it (else INCONSISTENT_GROUP_PROTOCOL)."""
    assignor = config.assignor(protocol_name or "")
    if assignor is None:
        raise GroupMemberError(f"the group chose protocol {protocol_name!r}, "
                               "which this member does not have", ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    return assignor


def sync_assignments(assignor, snapshot: Mapping[str, Optional[int]],
                     subscriptions: Mapping[str, Subscription]) -> tuple:
    """Run ``assignor`` over the known partition counts; one SyncGroup assignment per member."""
    counts = {t: n for t, n in snapshot.items() if n is not None}
    result = assignor.assign(counts, subscriptions)
    return tuple(
        m.SyncGroupAssignment(member_id, codec.encode_assignment(result.get(member_id, Assignment())))
        for member_id in subscriptions
    )


class Leadership:
    """The member's part as its group's leader (Java ``ConsumerCoordinator.onLeaderElected`` and its
    metadata snapshot).

    Keeps the partition counts the member knows and, while it leads, the
    group's topics with the counts its assignment used, so that a count
    change can make it rejoin.
    """

    def __init__(self) -> None:
        self.elected = False
        self._partition_counts: dict[str, int] = {}
        #: The group's topics with the counts the last assignment used (None: not leading).
        self._snapshot: Optional[dict[str, Optional[int]]] = None
        #: The snapshot comes from a skipped assignment (KIP-814): counts unknown at the join are
        #: adopted when learnt.
        self._adopt_unknown_counts = False

    def joined(self, config: MemberConfig, response: m.JoinGroupResponse) -> tuple:
        """A JoinGroup made this member the leader (its SyncGroup assignments) or a follower (none).

        Raises KGroupError as ``leader_assignments`` does.
        """
        self.elected = response.leader == response.member_id
        self._snapshot = None
        self._adopt_unknown_counts = self.elected and response.skip_assignment
        if not self.elected:
            return ()
        self._snapshot, assignments = leader_assignments(config, response, self._partition_counts)
        return assignments

    def reset(self) -> None:
        self.elected = False
        self._snapshot = None

    def update(self, partitions_per_topic: Mapping[str, int]) -> bool:
        """New partition counts; True if one of the group's changed since the assignment."""
        self._partition_counts = dict(partitions_per_topic)
        snapshot = self._snapshot
        if snapshot is not None and self._adopt_unknown_counts:
            # A returning static leader told to skip the assignment (KIP-814) assigned nothing, so a count
            # it did not know at the join is no change but the baseline, as Java's onLeaderElected takes
            # assignmentSnapshot = metadataSnapshot.  Rejoining here made every static leader bounce that
            # beat its first metadata answer rebalance the group (found by the wire server's client matrix).
            snapshot.update({t: self._partition_counts[t] for t, n in snapshot.items()
                             if n is None and t in self._partition_counts})
        return self.outdated()

    def outdated(self) -> bool:
        """Whether a count the last assignment used differs from what is known now (Java's
        ``ConsumerCoordinator.rejoinNeededOrPending``: assignmentSnapshot vs metadataSnapshot)."""
        snapshot = self._snapshot
        return snapshot is not None and {t: self._partition_counts.get(t) for t in snapshot} != snapshot

    def group_topics(self) -> frozenset:
        """The whole group's topics (none unless leading)."""
        return frozenset(self._snapshot or ())
