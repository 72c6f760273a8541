"""In-memory, sans-I/O Kafka group coordinator (classic and KIP-848 consumer groups).

``GroupCoordinator.handle(request_key, request, now_ms)`` answers the
requests of ``kgroup.core.messages``; ``get_timer()`` says when the next
deadline is due and ``handle_timer(now_ms)`` fires what is due; records
returned with each result rebuild the state via ``load``.

Layout (docs/coordinator.md): :mod:`.coordinator` routes each request to the
manager that owns it: :mod:`.classic_group_manager` and :mod:`.classic_handlers`
for classic groups, :class:`kgroup.core.consumer_group.manager.ConsumerGroupManager`
for KIP-848 groups, :mod:`.offsets` and :mod:`.admin`; they share the one
:mod:`.context`.  What both group types share (config, offset records, the timer)
is in :mod:`kgroup.core.coordinator_common`.
"""
from kgroup.core.broker import Delivery
from kgroup.core.coordinator.coordinator import GroupCoordinator
from kgroup.core.coordinator.records import (
    GroupMetadataRecord,
    MemberMetadataRecord,
    MemberTombstone,
    PersistedGroup,
    PersistedView,
    Record,
    replay,
)
from kgroup.core.coordinator.results import CoordinatorResult
from kgroup.core.coordinator.state import GroupState
from kgroup.core.coordinator_common.config import GroupCoordinatorConfig

__all__ = [
    "GroupCoordinator",
    "GroupCoordinatorConfig",
    "CoordinatorResult",
    "Delivery",
    "GroupState",
    "Record",
    "GroupMetadataRecord",
    "MemberMetadataRecord",
    "MemberTombstone",
    "PersistedGroup",
    "PersistedView",
    "replay",
]
