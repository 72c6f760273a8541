"""kafka-python's rebalance callback contract over ``SubscriptionBridge`` (split from
``ConsumerCoordinator``): when the listener hears of a revocation, a loss or an assignment, and the
assignor's ``on_assignment``.  Runs on the polling thread only, as the bridge does.
"""
from __future__ import annotations

import logging
from typing import Callable, Optional, Union

from kgroup.assignors import RebalanceProtocol
from kgroup.core.member import MemberConfig, PartitionsAssigned, PartitionsLost, PartitionsRevoked
from kgroup.io.kafka_python.strategies import kafka_python_assignor
from kgroup.io.kafka_python.subscription import SubscriptionBridge

#: The drop-in coordinator's logger: an application's logging set-up keeps working after the split.
log = logging.getLogger("kgroup.io.kafka_python.coordinator")


class RebalanceCallbacks:
    def __init__(self, bridge: SubscriptionBridge, member_config: Optional[MemberConfig],
                 server_resolves_pattern: Callable[[], bool]) -> None:
        self._bridge = bridge
        #: The classic member's settings (its assignors); None for a KIP-848 member.
        self._member_config = member_config
        self._server_resolves_pattern = server_resolves_pattern
        #: A revocation (or loss) reached the app since the last assignment (eager listener contract).
        self._revocation_delivered = False

    def revoked(self, event: Union[PartitionsRevoked, PartitionsLost]) -> Optional[BaseException]:
        self._revocation_delivered = True
        return self._bridge.revoke(event.partitions, lost=isinstance(event, PartitionsLost))

    def left(self) -> None:
        """The member left the group: a later subscription starts a new rebalance."""
        self._revocation_delivered = False

    def assigned(self, event: PartitionsAssigned) -> Optional[BaseException]:
        """A rebalance completed: the assignor's ``on_assignment``, then the listener.

        Listener contract (kafka-python 3.0 ``ConsumerCoordinator._on_join_prepare`` /
        ``_on_join_complete``; Java ``ConsumerCoordinator.onJoinPrepare`` /
        ``onJoinComplete``): EAGER calls ``on_partitions_revoked`` and then
        ``on_partitions_assigned`` (the whole assignment) once per rebalance,
        even with nothing to revoke or nothing assigned - unless the old
        partitions were lost, which ``on_partitions_lost`` reported.  The
        member emits no event for an empty revocation, so it is delivered
        here, just before the assignment.  COOPERATIVE calls
        ``on_partitions_revoked`` only for partitions taken away and
        ``on_partitions_assigned`` with the added ones, even if none (Java).
        """
        failure: Optional[BaseException] = None
        if self._member_config is None:
            # KIP-848: the coordinator assigned (no client assignor); incremental, like COOPERATIVE.
            return self._bridge.assign(event.assignment, notify_empty=True, report_all=False,
                                       adopt_topics=self._server_resolves_pattern())
        wrapped = kafka_python_assignor(self._member_config.assignors, event.generation.protocol_name)
        if wrapped is not None:
            try:
                wrapped.on_assignment(sorted(event.assignment), event.user_data,
                                      event.generation.generation_id)
            except Exception as exc:  # the app's assignor: raised from poll() like a listener's error
                log.exception("assignor %s failed in on_assignment", wrapped.name)
                failure = exc
        eager = self._member_config.protocol is RebalanceProtocol.EAGER
        if eager and not self._revocation_delivered:
            revoke_failure = self._bridge.revoke_nothing()
            failure = failure or revoke_failure
        self._revocation_delivered = False
        assign_failure = self._bridge.assign(event.assignment, notify_empty=True, report_all=eager)
        return failure or assign_failure  # the first one, as Java's firstException
