"""In-memory, sans-I/O Kafka group coordinator (classic group protocol).

``GroupCoordinator.handle(request_key, request, now_ms)`` answers the
requests of ``kgroup.core.messages``; ``on_timers`` fires due deadlines;
records returned with each result rebuild the state via ``load``.
"""
from kgroup.core.coordinator.config import GroupCoordinatorConfig
from kgroup.core.coordinator.coordinator import GroupCoordinator
from kgroup.core.coordinator.group import GroupInvariantViolation
from kgroup.core.coordinator.records import (
    GroupMetadataRecord,
    GroupTombstone,
    MemberMetadataRecord,
    MemberTombstone,
    OffsetCommitRecord,
    OffsetTombstone,
    PersistedGroup,
    PersistedView,
    Record,
    replay,
)
from kgroup.core.coordinator.results import CoordinatorResult, Delivery
from kgroup.core.coordinator.state import GroupState

__all__ = [
    "GroupCoordinator",
    "GroupCoordinatorConfig",
    "CoordinatorResult",
    "Delivery",
    "GroupState",
    "GroupInvariantViolation",
    "Record",
    "GroupMetadataRecord",
    "MemberMetadataRecord",
    "MemberTombstone",
    "GroupTombstone",
    "OffsetCommitRecord",
    "OffsetTombstone",
    "PersistedGroup",
    "PersistedView",
    "replay",
]
