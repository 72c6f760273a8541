"""The broker seam: what a transport talks to on the broker side.

A transport (the in-process hub today, a wire server tomorrow) hands each
request to a :class:`BrokerBackend` together with the node it was sent to and
the :class:`RequestContext` of its request header, and routes the
:class:`Delivery` values the backend answers back to
whoever sent the request (matched by the caller's opaque ``request_key``).
Implementations: the in-memory cluster's coordinators
(:class:`kgroup.core.cluster.group_hosting.GroupHosting`) and a single
coordinator posing as one broker
(:class:`kgroup.core.coordinator.standalone.StandaloneCoordinator`).

Sans-I/O like the rest of the core: every call takes ``now_ms``; the
transport calls :meth:`BrokerBackend.handle_timer` when :meth:`BrokerBackend.get_timer` says
(aioquic's timer convention: docs/architecture.md, *Time*).

The values a backend can answer besides protocol responses, and the errors it
raises, are defined here so that a transport never reaches into a backend's
internals:

- :class:`BrokerUnreachable`, answered for a request whose broker is dead or
  cut off (a transport turns it into its own connection error);
- :class:`UnsupportedRequestError`, raised for a request type the backend
  does not serve (a transport answers it like any failed request, Kafka's
  UNKNOWN_SERVER_ERROR or a closed connection);
- :class:`InvalidRequestContextError`, raised for a malformed context.
"""
from __future__ import annotations

from typing import Hashable, List, Optional, Protocol

import attrs

from kgroup.core import consumer_group_messages as cg
from kgroup.core import messages as m
from kgroup.errors import KGroupError

__all__ = [
    "BrokerBackend",
    "BrokerUnreachable",
    "DEFAULT_CLIENT_HOST",
    "DEFAULT_CLIENT_ID",
    "Delivery",
    "InvalidRequestContextError",
    "RequestContext",
    "UnsupportedRequestError",
    "with_context",
]

#: Kafka's ``client.id`` default is empty; kgroup's members have always said "kgroup".
DEFAULT_CLIENT_ID = "kgroup"
#: How Kafka renders a client's address (``InetAddress.toString()``: "/" + address).
DEFAULT_CLIENT_HOST = "/127.0.0.1"


@attrs.frozen
class RequestContext:
    """Request-header data every request carries (Kafka's ``RequestContext``/``RequestHeader``).

    ``api_version`` is the version the request was sent with; ``None`` means the
    newest version kgroup implements for that API (an in-process client speaks
    every version).  A wire server fills it from the request header.
    """

    client_id: str = DEFAULT_CLIENT_ID
    client_host: str = DEFAULT_CLIENT_HOST
    api_version: Optional[int] = None

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.client_id, str) or not isinstance(self.client_host, str):
            raise InvalidRequestContextError(
                f"client_id and client_host must be strings, got {self.client_id!r}, {self.client_host!r}")
        if self.api_version is not None and (not isinstance(self.api_version, int) or self.api_version < 0):
            raise InvalidRequestContextError(
                f"api_version must be a non-negative int, got {self.api_version!r}")

    @classmethod
    def of(cls, request: object, client_id: str = DEFAULT_CLIENT_ID,
           client_host: str = DEFAULT_CLIENT_HOST) -> "RequestContext":
        """The context an in-process client sends ``request`` with.

        A JoinGroupRequest already states its header data (the coordinator keeps
        ``client_id``/``client_host`` per member and branches on ``api_version``),
        so its context is what it says; any other request gets the transport's.
        """
        if isinstance(request, m.JoinGroupRequest):
            return cls(request.client_id, request.client_host, request.api_version)
        return cls(client_id, client_host)


def with_context(request: object, context: Optional[RequestContext]) -> object:
    """``request`` with the header data of ``context`` stamped on it where the coordinator reads it.

    ``None`` (a caller that passed no context) keeps what the request says.

    JoinGroup and ConsumerGroupHeartbeat need it: the coordinator records the member's
    client id and host (DescribeGroups / ConsumerGroupDescribe show them) and the version
    changes the protocol (JoinGroup v4+ MEMBER_ID_REQUIRED, v9 static-member replacement;
    ConsumerGroupHeartbeat v1 client-generated member ids).
    """
    if context is None or not isinstance(request, (m.JoinGroupRequest, cg.ConsumerGroupHeartbeatRequest)):
        return request
    api_version = request.api_version if context.api_version is None else context.api_version
    if (request.client_id, request.client_host, request.api_version) == (
            context.client_id, context.client_host, api_version):
        return request
    return attrs.evolve(request, client_id=context.client_id, client_host=context.client_host,
                        api_version=api_version)


@attrs.frozen
class Delivery:
    """One answer a backend hands back: the response to the request sent under ``request_key``."""

    #: The caller's opaque key of the request being answered.
    request_key: Hashable
    #: A response value from kgroup.core.messages (or :class:`BrokerUnreachable`).
    response: object


@attrs.frozen
class BrokerUnreachable:
    """The answer for a request whose broker is dead or cut off: the connection failed."""

    node_id: Optional[int]


class InvalidRequestContextError(KGroupError, ValueError):
    """A request context with a malformed field (a wire server's header decoder should never build one)."""


class UnsupportedRequestError(KGroupError, TypeError):
    """The backend does not serve this request type.

    Derives from ``TypeError`` too, which is what backends raised before the seam had its own error.
    """


class BrokerBackend(Protocol):
    """The broker side of a transport: send a request to a node, say when next, do what is due.

    ``send`` and ``handle_timer`` return the deliveries that became ready, for any request
    sent earlier (a JoinGroup parked until the rebalance completes is answered by a
    later ``send`` or ``handle_timer``).  ``node_id`` ``None`` means any live broker (bootstrap).
    ``context`` ``None`` means the request states its own header data
    (:meth:`RequestContext.of` with the defaults).
    """

    def send(self, node_id: Optional[int], request_key: Hashable, request: object, now_ms: int,
             context: Optional[RequestContext] = None) -> List[Delivery]: ...

    def handle_timer(self, now_ms: int) -> List[Delivery]: ...

    def get_timer(self) -> Optional[int]: ...
