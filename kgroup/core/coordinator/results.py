"""What one call into the coordinator hands back to its host."""
from __future__ import annotations

from typing import Hashable

import attrs

from kgroup.core.coordinator.records import Record


@attrs.frozen
class Delivery:
    #: The caller's opaque key of the request being answered.
    request_key: Hashable
    #: A response value from kgroup.core.messages.
    response: object


@attrs.frozen
class CoordinatorResult:
    deliveries: tuple[Delivery, ...] = ()
    #: Records to persist before the deliveries are released (a hosting cluster
    #: appends them to the group's __consumer_offsets partition first).
    records: tuple[Record, ...] = ()
