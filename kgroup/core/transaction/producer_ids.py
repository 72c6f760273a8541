"""The one producer-id counter of a cluster (Kafka's ``ProducerIdManager``).

Kafka's brokers take blocks of ids from the controller so no two producers ever share one;
kgroup's cluster is one process, so one counter does: idempotent producers (InitProducerId
without a transactional id) and every transaction coordinator draw from it, and a coordinator
that loads ids from its log moves it past them.
"""
from __future__ import annotations

from kgroup.errors import ConfigError


class ProducerIdAllocator:
    __slots__ = ("_next",)

    def __init__(self, first_producer_id: int = 0) -> None:
        if first_producer_id < 0:
            raise ConfigError(f"first_producer_id must be >= 0, got {first_producer_id}")
        self._next = first_producer_id

    def generate(self) -> int:
        """A producer id no producer of this cluster has had."""
        producer_id = self._next
        self._next += 1
        return producer_id

    def observe(self, producer_id: int) -> None:
        """``producer_id`` is in use (read back from a log): never hand it out."""
        if producer_id >= self._next:
            self._next = producer_id + 1

    @property
    def next_producer_id(self) -> int:
        return self._next
