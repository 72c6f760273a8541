"""Partition assignors, found by their Kafka name.

>>> from kgroup.assignors import get_assignor
>>> get_assignor("cooperative-sticky").name
'cooperative-sticky'

Built-in assignors are always available; third-party ones register a class
(or a zero-argument factory) under the entry-point group ``kgroup.assignors``
with the assignor's Kafka name as the entry-point name.
"""
from __future__ import annotations

import importlib

from kgroup.assignors.base import Assignor, PartitionRacks, RebalanceProtocol
from kgroup.errors import UnknownAssignorError

__all__ = [
    "Assignor",
    "PartitionRacks",
    "RebalanceProtocol",
    "get_assignor",
    "known_assignors",
    "ENTRY_POINT_GROUP",
]

ENTRY_POINT_GROUP = "kgroup.assignors"

_BUILTIN = {
    "range": "kgroup.assignors.range:RangeAssignor",
    "roundrobin": "kgroup.assignors.roundrobin:RoundRobinAssignor",
    "sticky": "kgroup.assignors.sticky:StickyAssignor",
    "cooperative-sticky": "kgroup.assignors.cooperative_sticky:CooperativeStickyAssignor",
}


def _load(target: str):
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def _plugin_entry_points() -> dict:
    # Imported here, not at module level: importlib.metadata pulls in email.utils and with it
    # socket and selectors, which the pure core must not load (tests/test_import_purity.py).
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def known_assignors() -> list[str]:
    """Names of every assignor :func:`get_assignor` can return."""
    return sorted(set(_BUILTIN) | set(_plugin_entry_points()))


def get_assignor(name: str) -> Assignor:
    """Return a new assignor instance registered under ``name``.

    Raises :class:`~kgroup.errors.UnknownAssignorError` (listing the known
    names) when nothing is registered under it.
    """
    if name in _BUILTIN:
        factory = _load(_BUILTIN[name])
    else:
        entry_point = _plugin_entry_points().get(name)
        if entry_point is None:
            raise UnknownAssignorError(name, known_assignors())
        factory = entry_point.load()
    assignor = factory()
    if not isinstance(assignor, Assignor):
        raise TypeError(f"assignor {name!r} ({factory!r}) is not a kgroup.assignors.Assignor")
    return assignor
