"""Group inputs shared by the assignor tests (imported, holds no tests)."""
from __future__ import annotations

from kgroup.values import Subscription


def identical_group(members: int, topics: int, partitions: int):
    """``members`` members all subscribed to ``topics`` topics of ``partitions`` partitions each."""
    names = [f"topic-{i}" for i in range(topics)]
    return {t: partitions for t in names}, {f"member-{i:05d}": Subscription(names) for i in range(members)}
