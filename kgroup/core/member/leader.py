"""The leader's side of a join: read the members' subscriptions, assign, build the SyncGroup assignments.

Java ``ConsumerCoordinator.onLeaderElected``: the leader assigns only from
the members' metadata and the partition counts it knows, and remembers the
group's topics so it can rejoin when one of their partition counts changes.
"""
from __future__ import annotations

import logging
from typing import Mapping, Optional, Sequence

import attrs

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member import codec
from kgroup.core.member.config import MemberConfig
from kgroup.errors import GroupMemberError, KGroupError
from kgroup.values import Assignment, Subscription

_log = logging.getLogger(__name__)


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
