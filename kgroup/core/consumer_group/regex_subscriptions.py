"""KIP-848 regex subscriptions: when a group's regexes are resolved, and what a resolution changes.

After Kafka's GroupMetadataManager (KAFKA-17593): ``maybeUpdateRegularExpressions``
decides in a heartbeat whether the group's regexes must be resolved (again),
``refreshRegularExpressions`` resolves all of them in one pass over the topics
on the coordinator's executor, and ``handleRegularExpressionsResult`` writes each
resolution (a ConsumerGroupRegularExpression record) and bumps the group epoch
when one changed.  The member is assigned the new topics at its next heartbeat,
which computes the target assignment for the bumped epoch.

kgroup's coordinator is sans-I/O and has no executor: the resolution is a
coordinator timer due at once (the next timer round), with the same effect and
the same two steps a client sees (librdkafka's tests expect a regex's topics one
heartbeat after the member's literal topics).  As in Kafka, a group's regexes
are not resolved twice within the refresh interval (``REGEX_BATCH_REFRESH_MIN_INTERVAL_MS``,
here ``consumer_group_regex_refresh_interval_ms``), a resolution is never
scheduled twice, and a group with no regex schedules none.  Kafka then resolves
only if a regex is unresolved, its metadata image has new topics or
``group.consumer.regex.refresh.interval.ms`` passed; kgroup has no image
version, so it rescans whenever the interval has passed
(docs/guide/consumer-protocol.md).
"""
from __future__ import annotations

from typing import Callable, Optional

from kgroup.core.consumer_group.context import ConsumerGroupContext
from kgroup.core.consumer_group.group import ConsumerGroup
from kgroup.core.consumer_group.member import ConsumerGroupMember
from kgroup.core.consumer_group.records import ResolvedTopicRegex
from kgroup.core.consumer_group.subscription_changes import regex_counts_with
from kgroup.core.consumer_group.topic_regex import compile_topic_regex, resolve_topic_regexes
from kgroup.core.coordinator_common.config import GroupCoordinatorConfig

__all__ = ["RegexSubscriptions", "regex_timer_key"]


def regex_timer_key(group_id: str) -> tuple[str, str]:
    """Kafka's executor key ``groupId + "-regex"``: one resolution in flight per group."""
    return ("consumer-regex", group_id)


class RegexSubscriptions:
    """The regex side of the consumer groups of one coordinator (owned by ConsumerGroupManager)."""

    def __init__(self, config: GroupCoordinatorConfig, context: ConsumerGroupContext) -> None:
        self._interval_ms = config.consumer_group_regex_refresh_interval_ms
        self._context = context
        #: Groups whose resolution timer is armed (Kafka's ``executor.isScheduled(key)``).
        self._scheduled: set[str] = set()

    @staticmethod
    def check_new_regex(group: ConsumerGroup, new: ConsumerGroupMember) -> Optional[str]:
        """Kafka's throwIfRegularExpressionIsInvalid on a regex new to the group: the refusal message
        (INVALID_REGULAR_EXPRESSION), or None."""
        regex = new.subscribed_topic_regex
        if regex is None or regex in group.regex_counts:
            return None
        try:
            compile_topic_regex(regex)
        except ValueError as invalid:
            return f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {invalid}."
        return None

    @staticmethod
    def bumps_group_epoch(group: ConsumerGroup, old: Optional[ConsumerGroupMember],
                          new: ConsumerGroupMember) -> bool:
        """Whether the member's regex change itself bumps the group epoch: a regex the group has already
        resolved (maybeUpdateRegularExpressions), or a regex dropped (KAFKA-19899).  A new regex bumps
        it once resolved."""
        old_regex = None if old is None else old.subscribed_topic_regex
        regex = new.subscribed_topic_regex
        if regex == old_regex:
            return False
        return regex is None or regex in group.resolved_regexes

    def refresh_needed(self, group: ConsumerGroup, old: Optional[ConsumerGroupMember],
                       new: ConsumerGroupMember, now_ms: int) -> bool:
        """Kafka's conditions to resolve the group's regexes after this heartbeat."""
        if not regex_counts_with(group, old, new):
            return False  # 0. no regex in the group
        if group.group_id in self._scheduled:
            return False  # 1. a resolution is already on its way
        times = [resolved.resolved_at_ms for resolved in group.resolved_regexes.values()]
        # 2. none within the interval (Kafka: ``now <= last + interval`` waits); 3./4. see the docstring.
        return not times or now_ms > max(times) + self._interval_ms

    def schedule(self, group_id: str, now_ms: int, operation: Callable[[int], None]) -> None:
        self._scheduled.add(group_id)
        self._context.schedule_timer(regex_timer_key(group_id), now_ms, operation)

    def resolve(self, group: ConsumerGroup, now_ms: int) -> bool:
        """Kafka's refreshRegularExpressions + handleRegularExpressionsResult: every regex the group
        subscribes to, resolved against the topics now and written; True if some regex's topics changed."""
        self._scheduled.discard(group.group_id)
        regexes = sorted(group.regex_counts)
        found = resolve_topic_regexes(regexes, self._context.topic_names())
        changed = False
        for regex in regexes:
            previous = group.resolved_regexes.get(regex)
            changed = changed or previous is None or previous.topics != found[regex]
            group.set_resolved_regex(regex, ResolvedTopicRegex(found[regex], now_ms))
        return changed

    def forget(self, group_id: str) -> None:
        """The group's timer went with it (deleted, or the coordinator resigned)."""
        self._scheduled.discard(group_id)

    def clear(self) -> None:
        self._scheduled.clear()
