"""The group hosting and the transaction hosting behind one broker seam (issue 26).

An in-process cluster with transactions (``InMemoryKafka(transactions=True)``, the simulator's
exactly-once mode) puts this backend behind its hub, as the wire server's engine routes requests
(kgroup/server/engine.py): transaction APIs and FindCoordinator for a transactional id go to the
:class:`~kgroup.core.cluster.transaction_hosting.TransactionHosting`, everything else to the
:class:`~kgroup.core.cluster.group_hosting.GroupHosting`.
"""
from __future__ import annotations

from typing import Hashable, List, Optional

from kgroup.core.broker import Delivery, RequestContext
from kgroup.core.cluster.group_hosting import GroupHosting
from kgroup.core.cluster.transaction_hosting import TransactionHosting

__all__ = ["TransactionalBackend"]


class TransactionalBackend:
    """The group hosting and the transaction hosting behind one hub (kgroup/server/engine.py's routing)."""

    def __init__(self, groups: GroupHosting, transactions: TransactionHosting) -> None:
        self.groups = groups
        self.transactions = transactions

    def send(self, node_id: Optional[int], request_key: Hashable, request: object, now_ms: int,
             context: Optional[RequestContext] = None) -> List[Delivery]:
        if self.transactions.handles(request):
            if node_id is None:
                # A bootstrap request: the group hosting's choice, the lowest live broker.
                live = self.groups.cluster.live_brokers()
                node_id = min(live) if live else None
            out = self.transactions.send(node_id, request_key, request, now_ms, context)
            return out + self.groups.handle_timer(now_ms)  # markers may have released group answers
        out = self.groups.send(node_id, request_key, request, now_ms, context)
        return out + self.transactions.handle_timer(now_ms)

    def handle_timer(self, now_ms: int) -> List[Delivery]:
        return self.groups.handle_timer(now_ms) + self.transactions.handle_timer(now_ms)

    def get_timer(self) -> Optional[int]:
        deadlines = [d for d in (self.groups.get_timer(), self.transactions.get_timer()) if d is not None]
        return min(deadlines) if deadlines else None
