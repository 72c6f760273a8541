"""How many members of a classic group support each protocol, and the vote (split from Group).

Kafka's ClassicGroup keeps supportedProtocols as a count per name so the protocol check of a
JoinGroup is O(its protocols), not a scan of the members.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping


class ProtocolSupport:
    def __init__(self) -> None:
        self._counts: Counter = Counter()

    @property
    def counts(self) -> Mapping[str, int]:
        return self._counts

    def add(self, protocol_names: Iterable[str]) -> None:
        self._counts.update(protocol_names)

    def remove(self, protocol_names: Iterable[str]) -> None:
        self._counts.subtract(protocol_names)

    def supported_by_all(self, protocol_names: Iterable[str], member_count: int) -> bool:
        return any(self._counts[name] == member_count for name in protocol_names)

    def candidates(self, member_count: int) -> list[str]:
        """The protocols every one of ``member_count`` members supports (Kafka's candidateProtocols)."""
        return [name for name, count in self._counts.items() if count == member_count]
