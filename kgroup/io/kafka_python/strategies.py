"""``partition_assignment_strategy`` entries → kgroup assignors.

Unchanged kafka-python code passes kafka-python assignor classes (or
instances).  kafka-python's own classes are mapped by their Kafka ``name`` to
kgroup's assignor of the same name, so the group speaks the same protocol
name and interoperates with stock members; an application's own
``AbstractPartitionAssignor`` subclass runs its own ``metadata`` /
``assign``.  Both are wrapped (:func:`kgroup.assignors.kafka_python.from_kafka_python`)
so the drop-in can call their ``on_assignment`` after every SyncGroup, as
stock kafka-python does.  kgroup assignor classes / instances and plain
names (``"cooperative-sticky"``) are accepted too.
"""
from __future__ import annotations

from typing import Iterable, Optional

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor

from kgroup.assignors import Assignor, get_assignor
from kgroup.assignors.kafka_python import KafkaPythonAssignor, WrappedKafkaPythonAssignor, from_kafka_python
from kgroup.errors import ConfigError, UnknownAssignorError

OPTION = "partition_assignment_strategy"


def resolve_assignor(entry: object, cluster=None) -> Assignor:
    """One strategy entry as a kgroup assignor instance."""
    if isinstance(entry, Assignor):
        return entry
    if isinstance(entry, type) and issubclass(entry, Assignor):
        return entry()
    if isinstance(entry, KafkaPythonAssignor):
        return entry.assignor  # kgroup's own assignor, adapted for stock kafka-python: unwrap it
    if isinstance(entry, AbstractPartitionAssignor) or (
            isinstance(entry, type) and issubclass(entry, AbstractPartitionAssignor)):
        return from_kafka_python(entry, cluster)
    if not isinstance(entry, str):
        raise ConfigError(
            f"{OPTION} entry {entry!r} is neither an assignor (kafka-python or kgroup) nor a name")
    try:
        return get_assignor(entry)
    except UnknownAssignorError as exc:
        raise ConfigError(f"{OPTION}: {exc}") from exc


def resolve_assignors(entries: Iterable[object], cluster=None) -> list[Assignor]:
    """All entries, in preference order, with duplicate names dropped.

    ``entries`` must be a list or tuple, as in kafka-python; a bare string
    would be read letter by letter, so it is refused.
    """
    check_strategy(entries)
    assignors: list[Assignor] = []
    seen: set[str] = set()
    for entry in entries:
        assignor = resolve_assignor(entry, cluster)
        if assignor.name not in seen:
            seen.add(assignor.name)
            assignors.append(assignor)
    if not assignors:
        raise ConfigError(f"{OPTION} names no assignor")
    return assignors


def check_strategy(entries: object) -> None:
    """Refuse a strategy value that is not a list or tuple of entries."""
    if isinstance(entries, (str, bytes)):
        raise ConfigError(f"{OPTION} must be a list of assignors, got the string {entries!r} "
                          f"(write [{entries!r}])")
    if not isinstance(entries, (list, tuple)):
        raise ConfigError(f"{OPTION} must be a list of assignors, got {entries!r}")


def kafka_python_assignor(assignors: Iterable[Assignor],
                          name: Optional[str]) -> Optional[WrappedKafkaPythonAssignor]:
    """The wrapped kafka-python assignor the group chose (``name``), if it is one."""
    for assignor in assignors:
        if assignor.name == name and isinstance(assignor, WrappedKafkaPythonAssignor):
            return assignor
    return None
