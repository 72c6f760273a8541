"""Partition assignors, found by their Kafka name.

>>> from kgroup.assignors import get_assignor
>>> get_assignor("cooperative-sticky").name
'cooperative-sticky'

Built-in assignors are always available; third-party ones register a class
(or a zero-argument factory) under the entry-point group ``kgroup.assignors``
with the assignor's Kafka name as the entry-point name.

Server-side assignors (KIP-848, the coordinator computes the assignment) are
found the same way by :func:`get_server_assignor`, built-ins ``uniform``,
``range`` and kgroup's ``uniform-rack-aware`` plus the entry-point group
``kgroup.server_assignors``; their names live apart from the client-side ones because both protocols have a
``range`` with a different interface.
"""
from __future__ import annotations

import importlib
from typing import Iterable

from kgroup.assignors.base import Assignor, PartitionRacks, RebalanceProtocol
from kgroup.assignors.server_base import AssignmentMember, ServerAssignor
from kgroup.errors import UnknownAssignorError

__all__ = [
    "Assignor",
    "PartitionRacks",
    "RebalanceProtocol",
    "get_assignor",
    "known_assignors",
    "ENTRY_POINT_GROUP",
    "AssignmentMember",
    "ServerAssignor",
    "get_server_assignor",
    "known_server_assignors",
    "unknown_server_assignors",
    "SERVER_ENTRY_POINT_GROUP",
]

ENTRY_POINT_GROUP = "kgroup.assignors"
SERVER_ENTRY_POINT_GROUP = "kgroup.server_assignors"

_BUILTIN = {
    "range": "kgroup.assignors.range:RangeAssignor",
    "roundrobin": "kgroup.assignors.roundrobin:RoundRobinAssignor",
    "sticky": "kgroup.assignors.sticky:StickyAssignor",
    "cooperative-sticky": "kgroup.assignors.cooperative_sticky:CooperativeStickyAssignor",
}


#: Kafka's group.consumer.assignors default order: the first is the group's default.
_BUILTIN_SERVER = {
    "uniform": "kgroup.assignors.uniform:UniformAssignor",
    "range": "kgroup.assignors.server_range:ServerRangeAssignor",
    # Not in Kafka (apache/kafka PR #20000 is open): kgroup's, never the group's default.
    "uniform-rack-aware": "kgroup.assignors.uniform_rack_aware:UniformRackAwareAssignor",
}


def _load(target: str):
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def _plugin_entry_points(group: str = ENTRY_POINT_GROUP) -> dict:
    # Imported here, not at module level: importlib.metadata pulls in email.utils and with it
    # socket and selectors, which the pure core must not load (tests/test_import_purity.py).
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=group)}


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


def known_server_assignors() -> list[str]:
    """Names of every server-side assignor :func:`get_server_assignor` can return."""
    return sorted(set(_BUILTIN_SERVER) | set(_plugin_entry_points(SERVER_ENTRY_POINT_GROUP)))


def unknown_server_assignors(names: Iterable[str]) -> list[str]:
    """The names among ``names`` that no server-side assignor is registered under, sorted.

    Plugins are looked up only for names that are not built in: reading every installed package's
    entry points costs tens of milliseconds of ``kgroup serve``'s start."""
    not_builtin = set(names) - set(_BUILTIN_SERVER)
    if not not_builtin:
        return []
    return sorted(not_builtin - set(_plugin_entry_points(SERVER_ENTRY_POINT_GROUP)))


def get_server_assignor(name: str) -> ServerAssignor:
    """Return a new server-side (KIP-848) assignor registered under ``name``.

    Raises :class:`~kgroup.errors.UnknownAssignorError` when nothing is registered under it.
    """
    if name in _BUILTIN_SERVER:
        factory = _load(_BUILTIN_SERVER[name])
    else:
        entry_point = _plugin_entry_points(SERVER_ENTRY_POINT_GROUP).get(name)
        if entry_point is None:
            raise UnknownAssignorError(name, known_server_assignors())
        factory = entry_point.load()
    assignor = factory()
    if not isinstance(assignor, ServerAssignor):
        raise TypeError(f"server assignor {name!r} ({factory!r}) is not a kgroup.assignors.ServerAssignor")
    return assignor
