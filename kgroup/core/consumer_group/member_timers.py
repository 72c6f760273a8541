"""The deadlines of consumer group members (split from the manager).

Kafka's scheduleConsumerGroupSessionTimeout, scheduleConsumerGroupRebalanceTimeout and, for members of
the classic protocol inside a consumer group, scheduleConsumerGroupJoinTimeoutIfAbsent and
scheduleConsumerGroupSyncTimeout.  Each deadline carries the operation it runs: a fence of the member,
which the manager performs (``fence(group_id, member_id, now_ms)``, a no-op for a member that is gone).
"""
from __future__ import annotations

import functools
from typing import Callable, Optional

from kgroup.core.consumer_group.context import ConsumerGroupContext
from kgroup.core.consumer_group.member import ConsumerGroupMember, MemberState
from kgroup.core.coordinator_common.config import GroupCoordinatorConfig

__all__ = ["MemberTimers", "session_timer_key", "rebalance_timer_key", "classic_join_timer_key",
           "classic_sync_timer_key"]

#: Fences the member if it is still in the group: (group id, member id, now_ms).
Fence = Callable[[str, str, int], None]
#: The member's epoch now, None when it is gone: (group id, member id).
MemberEpoch = Callable[[str, str], Optional[int]]


def session_timer_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-session", group_id, member_id)


def rebalance_timer_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-rebalance", group_id, member_id)


def classic_join_timer_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    """A classic member of a consumer group told to rejoin must do so within its rebalance timeout
    (Kafka's consumerGroupJoinKey)."""
    return ("consumer-classic-join", group_id, member_id)


def classic_sync_timer_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    """A classic member of a consumer group that joined must send SyncGroup within its rebalance timeout
    (Kafka's consumerGroupSyncKey)."""
    return ("consumer-classic-sync", group_id, member_id)


class MemberTimers:
    def __init__(self, config: GroupCoordinatorConfig, context: ConsumerGroupContext, fence: Fence,
                 member_epoch: MemberEpoch) -> None:
        self._config = config
        self._context = context
        self._fence = fence
        self._member_epoch = member_epoch
        #: (group id, member id) -> the epoch whose revocation the armed rebalance timer waits on.
        self._rebalance_epochs: dict[tuple[str, str], int] = {}

    def schedule_session(self, group_id: str, member: ConsumerGroupMember, now_ms: int) -> None:
        """A classic member keeps the session timeout of its JoinGroup (Kafka's
        classicProtocolSessionTimeout); a consumer-protocol member the group's."""
        classic = member.classic_member_metadata
        timeout_ms = (classic.session_timeout_ms if classic is not None
                      else self._config.consumer_group_session_timeout_ms)
        member_id = member.member_id
        self._context.schedule_timer(session_timer_key(group_id, member_id), now_ms + timeout_ms,
                                     functools.partial(self._fence, group_id, member_id))

    def after_reconciliation(self, group_id: str, member: ConsumerGroupMember, now_ms: int) -> None:
        """The member must revoke within its rebalance timeout, or it is fenced."""
        key = (group_id, member.member_id)
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            self._rebalance_epochs[key] = member.member_epoch
            self._context.schedule_timer(rebalance_timer_key(*key),
                                         now_ms + max(member.rebalance_timeout_ms, 0),
                                         functools.partial(self._expire_rebalance, *key))
        elif self._rebalance_epochs.pop(key, None) is not None:
            self._context.cancel_timer(rebalance_timer_key(*key))

    def _expire_rebalance(self, group_id: str, member_id: str, now_ms: int) -> None:
        """Kafka's scheduleConsumerGroupRebalanceTimeout: fenced if still at the epoch it had to leave."""
        epoch = self._rebalance_epochs.pop((group_id, member_id), None)
        if epoch is not None and self._member_epoch(group_id, member_id) == epoch:
            self._fence(group_id, member_id, now_ms)

    def schedule_classic_sync(self, group_id: str, member_id: str, rebalance_timeout_ms: int,
                              now_ms: int) -> None:
        """After a classic member's JoinGroup: its SyncGroup is due within its rebalance timeout."""
        self._context.cancel_timer(classic_join_timer_key(group_id, member_id))
        self._context.schedule_timer(classic_sync_timer_key(group_id, member_id),
                                     now_ms + rebalance_timeout_ms,
                                     functools.partial(self._fence, group_id, member_id))

    def synced(self, group_id: str, member_id: str) -> None:
        self._context.cancel_timer(classic_sync_timer_key(group_id, member_id))

    def schedule_classic_join_if_absent(self, group_id: str, member: ConsumerGroupMember,
                                        now_ms: int) -> None:
        """A classic member told to rejoin is fenced unless it does within its rebalance timeout; telling it
        again does not move the deadline."""
        key = classic_join_timer_key(group_id, member.member_id)
        if not self._context.is_timer_scheduled(key):
            self._context.schedule_timer(key, now_ms + max(member.rebalance_timeout_ms, 0),
                                         functools.partial(self._fence, group_id, member.member_id))

    def cancel(self, group_id: str, member_id: str) -> None:
        """The member is gone: none of its deadlines may fire."""
        for key in (session_timer_key, rebalance_timer_key, classic_join_timer_key, classic_sync_timer_key):
            self._context.cancel_timer(key(group_id, member_id))
        self._rebalance_epochs.pop((group_id, member_id), None)

    def clear(self) -> None:
        """The coordinator resigns (its timer is reset with it)."""
        self._rebalance_epochs.clear()
