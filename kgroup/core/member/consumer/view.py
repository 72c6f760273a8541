"""A KIP-848 member's state, and what an adapter may read of it.

:class:`ConsumerMemberView` builds the state one member keeps - its state
machine, requests, events, heartbeat schedule and sent fields, commits,
reconciliation, member id and epoch, owned / current / target assignments -
and answers the adapter's questions; it changes nothing.
:class:`~kgroup.core.member.consumer.member.ConsumerProtocolMember`
(``member.py``) is the protocol that does, as the classic member splits
``view.py`` from ``member.py``.
"""
from __future__ import annotations

from typing import Optional

from kgroup.core.consumer_group_messages import JOIN_GROUP_MEMBER_EPOCH
from kgroup.core.member.consumer.committer import ConsumerCommitter
from kgroup.core.member.consumer.config import ConsumerProtocolConfig
from kgroup.core.member.consumer.heartbeat_fields import SentFields
from kgroup.core.member.consumer.heartbeat_schedule import HeartbeatSchedule
from kgroup.core.member.consumer.local_assignment import NO_ASSIGNMENT, LocalAssignment
from kgroup.core.member.consumer.member_id import RandomBytes, generate_member_id
from kgroup.core.member.consumer.reconciliation import ReconcileStep, Reconciliation
from kgroup.core.member.consumer.states import (
    NOT_IN_GROUP,
    ConsumerMemberState,
    new_consumer_member_state_machine,
)
from kgroup.core.member.shared.base import MemberBase
from kgroup.core.member.shared.events import Generation

#: What ``PartitionsAssigned.generation.protocol_name`` says for this protocol.
CONSUMER_PROTOCOL_NAME = "consumer"
_S = ConsumerMemberState


class ConsumerMemberView(MemberBase[ConsumerMemberState]):
    """One KIP-848 member's state and its read-only API (``ConsumerProtocolMember`` adds the protocol)."""

    _commits: ConsumerCommitter

    def __init__(self, config: ConsumerProtocolConfig, now_ms: int, random_bytes: RandomBytes) -> None:
        super().__init__(config, new_consumer_member_state_machine(f"consumer-member[{config.group_id}]"),
                         _S.FATAL, now_ms)
        self.config: ConsumerProtocolConfig = config
        self._schedule = HeartbeatSchedule(config.retry_backoff_ms, config.backoff_cap_ms,
                                           config.max_poll_interval_ms, now_ms)
        self._sent_fields = SentFields()
        self._commits = ConsumerCommitter(config, self._requests, self._events.append, now_ms)
        self._reconciliation = Reconciliation(f"reconciliation[{config.group_id}]")
        self.coordinator_id: Optional[int] = None
        #: KIP-1082 (v1): made once, kept for the member's life; v0: "" until the coordinator names it.
        self.member_id = generate_member_id(random_bytes) if config.client_generates_member_id else ""
        self.member_epoch = JOIN_GROUP_MEMBER_EPOCH
        #: Joins so far: a commit or heartbeat answer of an earlier membership is stale.
        self._membership = 0
        self._subscription_updated = False
        #: What the application may consume now.
        self._owned: frozenset = frozenset()
        #: The last assignment reconciled, and the last one the coordinator sent.
        self._current: LocalAssignment = NO_ASSIGNMENT
        self._target: LocalAssignment = NO_ASSIGNMENT
        #: The release event (lost / revoked) a FENCED, STALE or PREPARE_LEAVING member waits on.
        self._release_seq = 0
        #: Kafka ``isPollTimerExpired``: the member left because the application stopped polling.
        self._left_on_poll_timeout = False
        #: The application polled again after that: a STALE member rejoins once released.
        self._stale_may_rejoin = False
        self._stay_in_group_on_close = False

    # -- what an adapter reads ------------------------------------------------------

    @property
    def assignment(self) -> frozenset:
        """Partitions the member owns now (what the application may consume)."""
        return self._owned

    @property
    def generation(self) -> Generation:
        """Kafka's group metadata for this protocol: (member epoch, member id)."""
        return Generation(self.member_epoch, self.member_id, CONSUMER_PROTOCOL_NAME)

    @property
    def heartbeat_interval_ms(self) -> int:
        """The coordinator's heartbeat interval (0 until its first answer)."""
        return self._schedule.interval_ms

    @property
    def target_assignment(self) -> frozenset:
        return self._target.partitions

    @property
    def reconciliation_step(self) -> ReconcileStep:
        return self._reconciliation.step

    @property
    def is_leader(self) -> bool:
        return False  # the coordinator assigns (KIP-848)

    @property
    def rejoin_needed(self) -> bool:
        return self._fsm.state in (_S.JOINING, _S.FENCED, _S.STALE)

    @property
    def settled(self) -> bool:
        """Stable with nothing left to reconcile."""
        return self._fsm.state is _S.STABLE and not self._reconciliation.in_progress

    def _subscribed(self) -> bool:
        """Subscribed to topic names or to a regex."""
        # A pattern alone subscribes: the coordinator resolves it (SubscribedTopicRegex).
        return bool(self._subscription) or self._subscription_pattern is not None

    def _out_of_group(self) -> bool:
        return self._fsm.state in NOT_IN_GROUP
