"""A consumer group's subscriptions as one member's change would leave them (split from ConsumerGroup).

Kafka's ModernGroup.computeSubscribedTopicNames and ConsumerGroup.computeSubscribedRegularExpressions:
a heartbeat computes them before it is accepted, so the group does not change here.
"""
from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Mapping, Optional

from kgroup.core.consumer_group.member import ConsumerGroupMember
from kgroup.core.consumer_group.records import ResolvedTopicRegex

if TYPE_CHECKING:  # the group uses topics_with_regexes: imported for the type only
    from kgroup.core.consumer_group.group import ConsumerGroup

__all__ = ["topics_with_regexes", "subscribed_topics_with", "regex_counts_with"]


def topics_with_regexes(names: frozenset[str], regex_counts: Mapping[str, int],
                        resolved: Mapping[str, ResolvedTopicRegex]) -> frozenset[str]:
    """Topic ``names`` plus what each subscribed regex resolved to."""
    if not regex_counts:
        return names
    topics = set(names)
    for regex in regex_counts:
        if regex in resolved:
            topics |= resolved[regex].topics
    return frozenset(topics)


def subscribed_topics_with(group: "ConsumerGroup", old: Optional[ConsumerGroupMember],
                           new: ConsumerGroupMember,
                           resolved: Mapping[str, ResolvedTopicRegex]) -> frozenset[str]:
    """The group's subscribed topics once member ``old`` (None: a new one) becomes ``new`` and the
    regexes resolve to ``resolved``."""
    removed = () if old is None else old.subscribed_topic_names
    if removed == new.subscribed_topic_names:
        names = frozenset(group.topic_subscriber_counts)
    else:
        counts = collections.Counter(group.topic_subscriber_counts)
        counts.subtract(removed)
        counts.update(new.subscribed_topic_names)
        names = frozenset(topic for topic, count in counts.items() if count > 0)
    return topics_with_regexes(names, regex_counts_with(group, old, new), resolved)


def regex_counts_with(group: "ConsumerGroup", old: Optional[ConsumerGroupMember],
                      new: ConsumerGroupMember) -> Mapping[str, int]:
    """The group's regex counts once member ``old`` (None: a new one) becomes ``new``."""
    old_regex = None if old is None else old.subscribed_topic_regex
    if old_regex == new.subscribed_topic_regex:
        return group.regex_counts
    counts = collections.Counter(group.regex_counts)
    if old_regex is not None:
        counts[old_regex] -= 1
    if new.subscribed_topic_regex is not None:
        counts[new.subscribed_topic_regex] += 1
    return +counts
