"""``partition_assignment_strategy`` entries → kgroup assignors.

Unchanged kafka-python code passes kafka-python assignor classes (or
instances); those are mapped by their Kafka ``name`` to kgroup's assignor
of the same name, so the group speaks the same protocol name and interoperates
with stock members.  kgroup assignor classes / instances and plain names
(``"cooperative-sticky"``) are accepted too.
"""
from __future__ import annotations

from typing import Iterable

from kgroup.assignors import Assignor, RebalanceProtocol, get_assignor
from kgroup.errors import ConfigError, UnknownAssignorError


def resolve_assignor(entry: object) -> Assignor:
    """One strategy entry as a kgroup assignor instance."""
    if isinstance(entry, Assignor):
        return entry
    if isinstance(entry, type) and issubclass(entry, Assignor):
        return entry()
    if isinstance(entry, str):
        name = entry
    else:
        # kafka-python's AbstractPartitionAssignor classes and instances both
        # carry the protocol name as ``name``.
        name = getattr(entry, "name", None)
        if not isinstance(name, str):
            raise ConfigError(f"partition_assignment_strategy entry {entry!r} has no assignor name")
    try:
        return get_assignor(name)
    except UnknownAssignorError as exc:
        raise ConfigError(f"partition_assignment_strategy: {exc}") from exc


def resolve_assignors(entries: Iterable[object]) -> list[Assignor]:
    """All entries, in preference order, with duplicate names dropped."""
    assignors: list[Assignor] = []
    seen: set[str] = set()
    for entry in entries:
        assignor = resolve_assignor(entry)
        if assignor.name not in seen:
            seen.add(assignor.name)
            assignors.append(assignor)
    if not assignors:
        raise ConfigError("partition_assignment_strategy names no assignor")
    return assignors


def common_protocol(assignors: Iterable[Assignor]) -> RebalanceProtocol:
    """The highest rebalance protocol every assignor supports (KIP-429)."""
    assignors = list(assignors)
    common = set(RebalanceProtocol)
    for assignor in assignors:
        common &= set(assignor.supported_protocols)
    if not common:
        names = ", ".join(a.name for a in assignors)
        raise ConfigError(f"assignors {names} share no rebalance protocol (mixing EAGER-only and COOPERATIVE-only)")
    return max(common)
