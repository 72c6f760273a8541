"""Java's ``MemberInfo`` ordering, shared by range and round-robin.

Static members (with a group instance id) come first, ordered by instance
id, then dynamic members by member id.  Ordering by instance id is what lets
a static member keep its partitions when it rejoins under a new member id.
Python compares strings by code point where Java compares UTF-16 units; the
two differ only for characters outside the BMP.
"""
from __future__ import annotations

from typing import Mapping

from kgroup.values import Subscription


def member_sort_key(member_id: str, subscription: Subscription) -> tuple:
    instance_id = subscription.group_instance_id
    if instance_id is not None:
        # member id breaks ties between duplicate instance ids deterministically
        return (0, instance_id, member_id)
    return (1, member_id, "")


def ordered_members(subscriptions: Mapping[str, Subscription]) -> list[str]:
    return sorted(subscriptions, key=lambda m: member_sort_key(m, subscriptions[m]))
