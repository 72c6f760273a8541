"""What one call into the coordinator hands back to its host."""
from __future__ import annotations

import attrs

from kgroup.core.broker import Delivery
from kgroup.core.coordinator.records import Record


@attrs.frozen
class CoordinatorResult:
    deliveries: tuple[Delivery, ...] = ()
    #: Records to persist before the deliveries are released (a hosting cluster
    #: appends them to the group's __consumer_offsets partition first).
    records: tuple[Record, ...] = ()
