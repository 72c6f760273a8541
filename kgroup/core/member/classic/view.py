"""A group member's state, and what an adapter may read of it.

:class:`MemberView` builds the state one member keeps - its state machine,
rejoin gate, heartbeat timer, requests, events, coordinator link, commits,
owned partitions, leadership and generation - and answers the adapter's
questions about it.  It changes nothing:
:class:`~kgroup.core.member.classic.member.GroupMember` (``member.py``) is the
protocol that does, so that module reads as the protocol alone.
"""
from __future__ import annotations

import re
from typing import Optional

from kgroup.assignors import RebalanceProtocol
from kgroup.core.member.classic.assignment import Ownership
from kgroup.core.member.classic.committer import Committer
from kgroup.core.member.classic.config import MemberConfig
from kgroup.core.member.classic.coordinator_link import CoordinatorLink
from kgroup.core.member.classic.heartbeat import HeartbeatTimer
from kgroup.core.member.classic.leader import Leadership
from kgroup.core.member.classic.rejoin import RejoinGate
from kgroup.core.member.classic.states import ClassicMemberState, new_member_state_machine
from kgroup.core.member.shared.base import MemberBase
from kgroup.core.member.shared.events import NO_GENERATION_VALUE, Generation
from kgroup.values import NO_GENERATION


class MemberView(MemberBase[ClassicMemberState]):
    """One member's state and its read-only API (``GroupMember`` adds the protocol)."""

    _commits: Committer

    def __init__(self, config: MemberConfig, now_ms: int) -> None:
        super().__init__(config, new_member_state_machine(f"member[{config.group_id}]"),
                         ClassicMemberState.FATAL, now_ms)
        self.config: MemberConfig = config
        self._rejoin = RejoinGate(f"rejoin[{config.group_id}]")
        self._hb = HeartbeatTimer(config.session_timeout_ms, config.heartbeat_interval_ms,
                                  config.max_poll_interval_ms, config.retry_backoff_ms, now_ms)
        # The committer and the owned partitions only append to the queue: taking events changes nothing else.
        self._coordinator = CoordinatorLink(config, self._requests, self._hb)
        self._commits = Committer(config, self._requests, self._events.append, self._rejoin, now_ms)
        self._ownership = Ownership(self._events.append, self._rejoin)
        self._leader = Leadership()
        self._generation = NO_GENERATION_VALUE
        #: The subscription the last JoinGroup was sent with.
        self._joined_topics: frozenset = frozenset()
        #: The last assignment and its generation (an eager member's stickiness hint).
        self._last_assignment: tuple[frozenset, int] = (frozenset(), NO_GENERATION)
        #: A pattern subscription, compiled, and the topics the metadata named last (what it matches).
        self._pattern: Optional[re.Pattern[str]] = None
        self._known_topics: frozenset = frozenset()

    @property
    def generation(self) -> Generation:
        return self._generation

    @property
    def member_id(self) -> str:
        return self._generation.member_id

    @property
    def is_leader(self) -> bool:
        return self._leader.elected and self._generation.is_valid

    @property
    def assignment(self) -> frozenset:
        """Partitions the member owns now (what the app may consume)."""
        return self._ownership.partitions

    @property
    def protocol(self) -> RebalanceProtocol:
        return self.config.protocol

    @property
    def coordinator_id(self) -> Optional[int]:
        return self._coordinator.node_id

    @property
    def rejoin_needed(self) -> bool:
        return self._rejoin.needed

    @property
    def settled(self) -> bool:
        """Stable in a generation with no rejoin pending (what an adapter's poll waits for)."""
        return self._fsm.state is ClassicMemberState.STABLE and not self._rejoin.needed

    @property
    def heartbeat(self) -> HeartbeatTimer:
        return self._hb

    def metadata_topics(self) -> frozenset:
        """Topics whose partition counts the member needs (the leader: the whole group's)."""
        return self._subscription | self._leader.group_topics() if self.is_leader else self._subscription
