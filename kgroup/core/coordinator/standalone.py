"""One GroupCoordinator posing as a whole broker behind the broker seam (:mod:`kgroup.core.broker`).

It lives with the coordinator, not in the seam, so that the seam imports nothing above the core's
base modules.
"""
from __future__ import annotations

from typing import Hashable, List, Optional, Tuple

from kgroup.core import messages as m
from kgroup.core.broker import Delivery, RequestContext, with_context
from kgroup.core.coordinator.coordinator import GroupCoordinator
from kgroup.core.error_codes import ErrorCode

__all__ = ["StandaloneCoordinator"]


class StandaloneCoordinator:
    """A single GroupCoordinator posing as broker ``node_id`` (it answers FindCoordinator itself)."""

    def __init__(self, coordinator: GroupCoordinator, node_id: int = 0,
                 listener: Tuple[str, int] = ("in-process", 0)) -> None:
        self.coordinator = coordinator
        self.node_id = node_id
        #: The (host, port) FindCoordinator answers.
        self.listener = listener

    def send(self, node_id: Optional[int], request_key: Hashable, request: object, now_ms: int,
             context: Optional[RequestContext] = None) -> List[Delivery]:
        if isinstance(request, m.FindCoordinatorRequest):
            host, port = self.listener
            response = m.FindCoordinatorResponse(ErrorCode.NONE, self.node_id, host, port)
            return [Delivery(request_key, response)]
        return list(self.coordinator.handle(request_key, with_context(request, context), now_ms).deliveries)

    def handle_timer(self, now_ms: int) -> List[Delivery]:
        return list(self.coordinator.handle_timer(now_ms).deliveries)

    def get_timer(self) -> Optional[int]:
        return self.coordinator.get_timer()
