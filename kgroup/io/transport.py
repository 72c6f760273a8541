"""The one interface between a member's protocol driver and the network.

A transport carries :mod:`kgroup.core.messages` requests to a broker and
hands back their responses.  It is poll-based, like kafka-python's client:
``send`` never blocks, ``poll`` waits at most ``timeout_ms`` and returns
what completed.  Implementations: the in-process transport (kgroup's
in-memory coordinator or cluster) and kafka-python's network client (a real
broker).  The caller serialises access (one lock), so implementations need
not be thread-safe beyond what ``wakeup`` promises.
"""
from __future__ import annotations

import abc
from typing import Optional, Union

import attrs

from kgroup.errors import KGroupError

#: ``None`` sends to any live broker (bootstrap): what FindCoordinator uses.
NodeId = Optional[int]


class TransportError(KGroupError):
    """The request may not have reached the broker (disconnect, timeout)."""


@attrs.frozen
class Completion:
    correlation_id: int
    #: The response value, or the TransportError that ended the request.
    result: Union[object, TransportError]


class Transport(abc.ABC):
    @abc.abstractmethod
    def send(self, request: object, node_id: NodeId = None) -> int:
        """Queue ``request`` for ``node_id``; return its correlation id."""

    @abc.abstractmethod
    def poll(self, timeout_ms: int) -> list[Completion]:
        """Wait up to ``timeout_ms`` for completions; return those that arrived."""

    def wakeup(self) -> None:
        """Make a ``poll`` blocked in another thread return early (thread-safe)."""

    def close(self) -> None:
        """Release sockets or threads the transport owns."""
