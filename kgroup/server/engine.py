"""The wire server's sans-I/O engine: request frames in, response frames (and closes) out.

One engine serves every broker of one in-memory cluster.  The network layer hands it each
request frame with the connection and broker it arrived on and the time; the engine
answers with :class:`Reply` values addressed to connections, now or later (a JoinGroup
parked until the rebalance completes, an acks=all produce held until the high watermark
covers it, a fetch waiting for data, a response delayed by a fault).  Like the core it
reads no clock and does no I/O, so a test can drive it with a mock clock frame by frame.

Kafka processes one request per connection at a time and answers in order; the network
layer keeps that rule (it reads a connection's next request only after answering the
previous one), which is what lets a parked JoinGroup hold its connection as in Kafka.
"""
from __future__ import annotations

import itertools
import logging
from collections import deque
from typing import Any, Callable, Deque, Dict, Hashable, Iterator, List, Optional

import attrs
from kafka.protocol.api_key import ApiKey
from kafka.protocol.metadata import MetadataResponse

from kgroup.core.broker import BrokerUnreachable, RequestContext
from kgroup.core.cluster.group_hosting import GroupHosting
from kgroup.core.cluster.transaction_hosting import TransactionHosting
from kgroup.core.coordinator import Delivery
from kgroup.server.apis import SERVED_APIS
from kgroup.server.apis.api_versions import api_versions_response
from kgroup.server.apis.definition import NO_RESPONSE, AwaitAppends, AwaitData, GroupCodec, InSlices
from kgroup.server.data_plane import DataPlane, ProduceWait
from kgroup.server.faults import FaultRules, RequestTrace, RequestTraceEntry, WireFaultKind, error_codes_of
from kgroup.server.transactions import transaction_hosting_for
from kgroup.server.frames import (
    DecodedRequest, FrameError, RequestFrame, UnsupportedRequestVersion, decode_request, encode_response,
    peek_client_id, peek_header, response_version_for,
)
from kgroup.core.error_codes import ErrorCode

__all__ = ["Reply", "ServerEngine"]

log = logging.getLogger("kgroup.server")


@attrs.frozen
class Reply:
    """What to do on a connection: send ``data`` (a whole response frame), then close if ``close``.

    Neither (an acks=0 produce) means the request is done without an answer: the connection
    goes on to its next request."""

    connection_id: int
    data: Optional[bytes] = None
    close: bool = False
    #: A large answer's encoding, left to the caller (the network layer runs it off the event
    #: loop): call it for ``data``.  None for every answer small enough to encode at once.
    encode: Optional[Callable[[], bytes]] = None

    def frame(self) -> Optional[bytes]:
        """The response frame to send, encoding a deferred answer here if need be."""
        return self.encode() if self.encode is not None else self.data


@attrs.define
class _Connection:
    node_id: int
    client_host: str
    client_id: str = ""


@attrs.define
class _InFlight:
    """A request being answered: which connection, what it asked, what is still missing."""

    connection_id: int
    node_id: int
    decoded: DecodedRequest
    trace: RequestTraceEntry
    #: Core answers of a group request, one slot per core request it stands for.
    parts: List[Any] = attrs.field(factory=list)
    #: The core requests a group request stands for (what ``parts`` answer).
    core_requests: List[Any] = attrs.field(factory=list)
    produce_waits: List[ProduceWait] = attrs.field(factory=list)
    produce_response: Any = None
    fetch_deadline_ms: Optional[int] = None
    #: The parked fetch: how to read its answer and what that answer depends on.
    awaiting_data: Optional[AwaitData] = None
    #: What the parked fetch's answer depends on, when last evaluated (``awaiting_data.state()``).
    fetch_state: Any = None
    produce_deadline_ms: Optional[int] = None
    #: Extra delay a fault put on the answer.
    delay_ms: int = 0


@attrs.define
class _Job:
    """A request answered in slices between other work (see :meth:`ServerEngine.work`)."""

    request_id: int
    flight: _InFlight
    steps: Iterator[Any]


@attrs.define
class _Delayed:
    due_ms: int
    reply: Reply


class ServerEngine:
    def __init__(self, hosting: GroupHosting, data_plane: DataPlane, now_ms: int,
                 transactions: Optional[TransactionHosting] = None) -> None:
        self.hosting = hosting
        #: The transaction coordinators: the group path sends them the transaction APIs (and
        #: FindCoordinator for a transactional id); the group hosting gets everything else.
        self.transactions = transactions if transactions is not None else transaction_hosting_for(
            hosting, data_plane, data_plane.config, now_ms)
        self.cluster = hosting.cluster
        self.data = data_plane
        # KIP-890 part 1: partition leaders ask these coordinators before a transaction's first batch.
        data_plane.transaction_verifier = self.transactions
        self.faults = FaultRules()
        #: The latest requests and how they were answered, in arrival order (a bounded ring).
        self.trace = RequestTrace(data_plane.config.trace_entries)
        self._connections: Dict[int, _Connection] = {}
        self._in_flight: Dict[int, _InFlight] = {}
        self._delayed: List[_Delayed] = []
        #: Requests answered in slices, oldest first (a Metadata request naming 300,000 topics).
        self._jobs: Deque[_Job] = deque()
        self._ids = itertools.count(1)
        self._now_ms = now_ms
        #: ``hosting.get_timer()`` while nothing changed it (None: unknown, ask again).
        self._hosting_deadline_ms: Optional[int] = None
        #: Called with (core request, core answer, now_ms) for every group-API answer, on the
        #: server's thread: how an embedding application watches a group (kgroup_spark records
        #: partition ownership this way) without polling the coordinator.
        self.group_observers: List[Callable[[Any, Any, int], None]] = []

    # -- connections -------------------------------------------------------------------------

    def connection_opened(self, connection_id: int, node_id: int, client_host: str) -> None:
        self._connections[connection_id] = _Connection(node_id, client_host)

    def connection_closed(self, connection_id: int) -> None:
        """Forget a connection; requests still parked for it are answered into the void."""
        self._connections.pop(connection_id, None)

    def connections(self, client_id: Optional[str] = None, node_id: Optional[int] = None) -> List[int]:
        return [cid for cid, c in self._connections.items()
                if (client_id is None or c.client_id == client_id)
                and (node_id is None or c.node_id == node_id)]

    # -- requests ----------------------------------------------------------------------------

    @staticmethod
    def decode(frame: RequestFrame) -> Any:
        """What :meth:`handle` makes of ``frame``: the DecodedRequest, or the FrameError or
        UnsupportedRequestVersion it raised.  Pure, so a caller may run it on another thread for
        a large frame and pass the outcome to ``handle(..., decoded=outcome)``."""
        try:
            return decode_request(frame)
        except (FrameError, UnsupportedRequestVersion) as error:
            return error

    def handle(self, connection_id: int, frame: RequestFrame, now_ms: int,
               decoded: Any = None) -> List[Reply]:
        """Answer one request frame (its length prefix already removed); ``decoded`` is
        :meth:`decode`'s outcome for it when the caller decoded it already."""
        out = self._advance(now_ms)
        connection = self._connections.get(connection_id)
        if connection is None:
            raise KeyError(f"connection {connection_id} was never opened")
        if connection.node_id not in self.cluster.live_brokers():
            # The broker died or was cut off: its connections are gone as on a real cluster.
            out.append(Reply(connection_id, close=True))
            return out
        try:
            if decoded is None:
                decoded = decode_request(frame)
            elif isinstance(decoded, Exception):
                raise decoded
        except UnsupportedRequestVersion as unsupported:
            connection.client_id = _client_id(frame, connection)
            out.append(self._unsupported(connection_id, connection, unsupported, now_ms))
            return out
        except FrameError as error:
            connection.client_id = _client_id(frame, connection)
            log.warning("closing connection %d from %s to broker %d: %s", connection_id,
                        connection.client_host, connection.node_id, error)
            self.trace.append(self._frame_trace(connection_id, connection, frame, now_ms, str(error)))
            out.append(Reply(connection_id, close=True))
            return out
        connection.client_id = decoded.client_id
        entry = RequestTraceEntry(node_id=connection.node_id, connection_id=connection_id,
                                  client_id=decoded.client_id, api=decoded.api_key.name,
                                  api_version=decoded.api_version, correlation_id=decoded.correlation_id,
                                  received_ms=now_ms, group_id=_group_of(decoded.request))
        self.trace.append(entry)
        request_id = next(self._ids)
        flight = _InFlight(connection_id, connection.node_id, decoded, entry)
        action = self.faults.match(decoded.api_key.name, decoded.client_id, entry.group_id)
        if action is not None:
            entry.fault = action.describe()
            if action.kind is WireFaultKind.DROP:
                entry.outcome = "dropped"
                return out
            if action.kind is WireFaultKind.CLOSE:
                entry.outcome = "closed"
                out.append(Reply(connection_id, close=True))
                return out
            if action.kind is WireFaultKind.FAIL:
                out.extend(self._answer(flight, self._error_answer(decoded, action.error_code), now_ms))
                return out
            flight.delay_ms = action.delay_ms
        self._in_flight[request_id] = flight
        try:
            out.extend(self._dispatch(request_id, flight, connection, now_ms))
        except Exception as error:  # a bug must cost one request, never the server
            log.exception("%s v%d from %r failed", decoded.api_key.name, decoded.api_version,
                          decoded.client_id)
            self._in_flight.pop(request_id, None)
            entry.fault = entry.fault or f"handler raised {type(error).__name__}"
            failed = self._error_answer(decoded, ErrorCode.UNKNOWN_SERVER_ERROR)
            out.extend(self._answer(flight, failed, now_ms))
        out.extend(self._settle(now_ms))
        return out

    def handle_timer(self, now_ms: int) -> List[Reply]:
        """Do what is due by ``now_ms`` (coordinator deadlines, replication, fetch waits, delays)."""
        out = self._advance(now_ms)
        out.extend(self._settle(now_ms))
        return out

    def get_timer(self) -> Optional[int]:
        deadlines = [d for d in (self._hosting_deadline(),) if d is not None]
        for flight in self._in_flight.values():
            for deadline in (flight.fetch_deadline_ms, flight.produce_deadline_ms):
                if deadline is not None:
                    deadlines.append(deadline)
        deadlines.extend(d.due_ms for d in self._delayed)
        return min(deadlines) if deadlines else None

    def apply_fault(self, now_ms: int, action) -> List[Reply]:
        """Run a cluster fault (``action(now_ms)`` returning deliveries) and answer what it released."""
        out = self._advance(now_ms)
        self._hosting_deadline_ms = None
        out.extend(self._route(action(now_ms), now_ms))
        out.extend(self._route(self.transactions.handle_timer(now_ms), now_ms))   # follow the failover
        out.extend(self._settle(now_ms))
        return out

    def has_work(self) -> bool:
        """Whether a request answered in slices is still being worked on (call :meth:`work`)."""
        return bool(self._jobs)

    def work(self, now_ms: int) -> List[Reply]:
        """Do one slice of the oldest sliced request (a few milliseconds at most); its answer
        once the last slice is done.  The caller serves other clients between calls."""
        if not self._jobs:
            return []
        job = self._jobs[0]
        try:
            next(job.steps)
        except StopIteration as done:
            self._jobs.popleft()
            self._in_flight.pop(job.request_id, None)
            return self._answer(job.flight, done.value, now_ms)
        except Exception as error:  # as in handle: a bug costs one request, never the server
            self._jobs.popleft()
            self._in_flight.pop(job.request_id, None)
            decoded = job.flight.decoded
            log.exception("%s v%d from %r failed", decoded.api_key.name, decoded.api_version,
                          decoded.client_id)
            job.flight.trace.fault = job.flight.trace.fault or f"handler raised {type(error).__name__}"
            failed = self._error_answer(decoded, ErrorCode.UNKNOWN_SERVER_ERROR)
            return self._answer(job.flight, failed, now_ms)
        self._jobs.rotate(-1)  # round robin between sliced requests
        return []

    # -- dispatch ----------------------------------------------------------------------------

    @staticmethod
    def _error_answer(decoded: DecodedRequest, code: int) -> Any:
        return SERVED_APIS[decoded.api_key].error_answer(decoded.request, decoded.api_version, code)

    def _dispatch(self, request_id: int, flight: _InFlight, connection: _Connection,
                  now_ms: int) -> List[Reply]:
        decoded = flight.decoded
        api = SERVED_APIS[decoded.api_key]
        if api.group is not None:
            return self._send_group(request_id, flight, connection, api.group, now_ms)
        assert api.handle is not None
        outcome = api.handle(self.data, flight.node_id, decoded.request, decoded.api_version)
        if outcome is NO_RESPONSE:
            self._in_flight.pop(request_id)
            flight.trace.outcome = "no response (acks=0)"
            flight.trace.answered_ms = now_ms
            return [Reply(flight.connection_id)]  # nothing to send; the connection reads on
        if isinstance(outcome, AwaitAppends):
            flight.produce_response = outcome.response
            flight.produce_waits = outcome.waits
            flight.produce_deadline_ms = now_ms + max(outcome.timeout_ms, 0) if outcome.waits else None
            return []
        if isinstance(outcome, AwaitData):
            flight.awaiting_data = outcome
            flight.fetch_deadline_ms = now_ms + max(outcome.max_wait_ms, 0)
            return []
        if isinstance(outcome, InSlices):
            self._jobs.append(_Job(request_id, flight, outcome.steps))
            return []
        self._in_flight.pop(request_id)
        return self._answer(flight, outcome, now_ms)

    def _send_group(self, request_id: int, flight: _InFlight, connection: _Connection, codec: GroupCodec,
                    now_ms: int) -> List[Reply]:
        decoded = flight.decoded
        core_requests = codec.to_core(decoded.request, decoded.api_version, self.data)
        flight.parts = [None] * len(core_requests)
        flight.core_requests = list(core_requests)
        context = RequestContext(decoded.client_id, "/" + connection.client_host, decoded.api_version)
        out: List[Reply] = []
        if not core_requests:
            self._in_flight.pop(request_id)
            return self._answer(flight, codec.to_struct([], decoded.api_version, decoded.request, self.data),
                                now_ms)
        self._hosting_deadline_ms = None
        for index, core_request in enumerate(core_requests):
            backend = self.transactions if self.transactions.handles(core_request) else self.hosting
            deliveries = backend.send(flight.node_id, (request_id, index), core_request, now_ms, context)
            out.extend(self._route(deliveries, now_ms))
        return out

    def _route(self, deliveries: List[Delivery], now_ms: int) -> List[Reply]:
        """Hand the coordinators' answers to the requests they belong to; answer completed ones."""
        out: List[Reply] = []
        for delivery in deliveries:
            key: Hashable = delivery.request_key
            if not isinstance(key, tuple):
                continue
            request_id, index = key
            flight = self._in_flight.get(request_id)
            if flight is None:
                continue
            if isinstance(delivery.response, BrokerUnreachable):
                # The broker died holding the request: the client sees its connection drop.
                self._in_flight.pop(request_id)
                flight.trace.outcome = "broker unreachable"
                flight.trace.answered_ms = now_ms
                out.append(Reply(flight.connection_id, close=True))
                continue
            flight.parts[index] = delivery.response
            for observer in self.group_observers:
                observer(flight.core_requests[index], delivery.response, now_ms)
            if all(part is not None for part in flight.parts):
                self._in_flight.pop(request_id)
                decoded = flight.decoded
                codec = SERVED_APIS[decoded.api_key].group
                assert codec is not None
                out.extend(self._answer(flight, codec.to_struct(
                    flight.parts, decoded.api_version, decoded.request, self.data), now_ms))
        return out

    # -- waiting requests --------------------------------------------------------------------

    def _hosting_deadline(self) -> Optional[int]:
        if self._hosting_deadline_ms is None:
            deadlines = [d for d in (self.hosting.get_timer(), self.transactions.get_timer())
                         if d is not None]
            self._hosting_deadline_ms = min(deadlines) if deadlines else None
        return self._hosting_deadline_ms

    def _advance(self, now_ms: int) -> List[Reply]:
        self._now_ms = max(self._now_ms, now_ms)
        deadline = self._hosting_deadline_ms
        if deadline is not None and self._now_ms < deadline:
            # Nothing of the group side is due (no replication round, coordinator timer or load)
            # and nothing touched it since its deadline was read: hosting.handle_timer would only
            # move the cluster's clock.  Skipping it keeps a produce or fetch from walking every
            # __consumer_offsets slot.
            self.cluster.handle_timer(self._now_ms)
            return []
        self._hosting_deadline_ms = None
        out = self._route(self.hosting.handle_timer(self._now_ms), self._now_ms)
        out.extend(self._route(self.transactions.handle_timer(self._now_ms), self._now_ms))
        return out

    def _settle(self, now_ms: int) -> List[Reply]:
        """Answer produces whose appends resolved, fetches with enough data or out of time, due delays."""
        out: List[Reply] = []
        for request_id, flight in list(self._in_flight.items()):
            if flight.produce_response is not None:
                pending = [w for w in flight.produce_waits if not self.data.settle(w)]
                flight.produce_waits = pending
                deadline = flight.produce_deadline_ms
                if pending and deadline is not None and now_ms >= deadline:
                    for wait in pending:
                        wait.result.error_code = ErrorCode.REQUEST_TIMED_OUT
                    pending = []
                if not pending:
                    del self._in_flight[request_id]
                    out.extend(self._answer(flight, flight.produce_response, now_ms))
            elif flight.fetch_deadline_ms is not None and flight.awaiting_data is not None:
                waiting = flight.awaiting_data
                if now_ms < flight.fetch_deadline_ms:
                    # A parked fetch is re-read only when a partition it reads changed (new data,
                    # leader or topic), not on every request the server handles.
                    state = waiting.state()
                    if state == flight.fetch_state:
                        continue
                    flight.fetch_state = state
                response, size, erred = waiting.read()
                if erred or size >= waiting.min_bytes or now_ms >= flight.fetch_deadline_ms:
                    del self._in_flight[request_id]
                    out.extend(self._answer(flight, response, now_ms))
        due = [d for d in self._delayed if d.due_ms <= now_ms]
        if due:
            self._delayed = [d for d in self._delayed if d.due_ms > now_ms]
            out.extend(d.reply for d in due)
        return out

    # -- answers ---------------------------------------------------------------------------

    def _answer(self, flight: _InFlight, response: Any, now_ms: int) -> List[Reply]:
        decoded = flight.decoded
        entry = flight.trace
        if entry.outcome == "pending":
            entry.outcome = "answered"
        if _entries_in(response) > DEFERRED_ENCODING_ENTRIES:
            # Encoding it takes long: the caller does it (off the event loop), the trace's error
            # codes with it.  Nothing changes the response once answered, so that is safe.
            reply = Reply(flight.connection_id, encode=_Encoding(
                response, decoded.api_version, decoded.correlation_id, entry if self.trace.enabled else None,
                decoded.request))
        else:
            data = encode_response(response, decoded.api_version, decoded.correlation_id)
            if self.trace.enabled:
                entry.error_codes = error_codes_of(response)
            reply = Reply(flight.connection_id, data)
        if flight.delay_ms > 0:
            entry.answered_ms = now_ms + flight.delay_ms
            self._delayed.append(_Delayed(now_ms + flight.delay_ms, reply))
            return []
        entry.answered_ms = now_ms
        return [reply]

    def _unsupported(self, connection_id: int, connection: _Connection,
                     unsupported: UnsupportedRequestVersion, now_ms: int) -> Reply:
        api, version = unsupported.api_key, unsupported.api_version
        entry = RequestTraceEntry(node_id=connection.node_id, connection_id=connection_id,
                                  client_id=connection.client_id, api=api.name, api_version=version,
                                  correlation_id=unsupported.correlation_id, received_ms=now_ms,
                                  answered_ms=now_ms, outcome="unsupported version")
        self.trace.append(entry)
        if api is ApiKey.ApiVersions:
            # KIP-511: a v0-shaped body (and v0 header) whatever version was asked, so any client can retry.
            response = api_versions_response(0, ErrorCode.UNSUPPORTED_VERSION)
            entry.error_codes = (int(ErrorCode.UNSUPPORTED_VERSION),)
            return Reply(connection_id, encode_response(response, 0, unsupported.correlation_id))
        encodable = response_version_for(api, version)
        if unsupported.request is None or encodable is None:
            log.warning("closing connection %d from %s: %s, and kafka-python cannot encode an answer at that "
                        "version", connection_id, connection.client_host, unsupported)
            entry.outcome = "closed: unsupported version"
            return Reply(connection_id, close=True)
        response = SERVED_APIS[api].error_answer(unsupported.request, encodable,
                                                 ErrorCode.UNSUPPORTED_VERSION)
        entry.error_codes = (int(ErrorCode.UNSUPPORTED_VERSION),)
        return Reply(connection_id, encode_response(response, encodable, unsupported.correlation_id))

    @staticmethod
    def _frame_trace(connection_id: int, connection: _Connection, frame: RequestFrame, now_ms: int,
                     why: str) -> RequestTraceEntry:
        try:
            api_key, version, correlation_id = peek_header(frame)
            api = ApiKey(api_key).name if api_key in ApiKey._value2member_map_ else str(api_key)
        except (FrameError, ValueError):
            api, version, correlation_id = "?", -1, -1
        return RequestTraceEntry(node_id=connection.node_id, connection_id=connection_id,
                                 client_id=connection.client_id, api=api, api_version=version,
                                 correlation_id=correlation_id, received_ms=now_ms, answered_ms=now_ms,
                                 outcome=f"closed: {why}")


#: How many topics of a large request or answer are freed at a time.
FREE_SLICE_ITEMS = 2_000
#: An answer with more entries (topics and partitions) than this is encoded by the caller.
DEFERRED_ENCODING_ENTRIES = 20_000


def _entries_in(response: Any) -> int:
    """Topics plus partitions of a Metadata answer (the one answer that can list millions)."""
    topics = getattr(response, "topics", None)
    if not isinstance(response, MetadataResponse) or not topics:
        return 0
    return len(topics) + sum(len(t.partitions or ()) for t in topics)


class _Encoding:
    """A deferred answer's encoding (and its trace error codes): a pure function of the response.

    It also takes the last references to the response and the request, and frees them where it
    runs, a slice at a time: freeing 300,000 structs in one go is one C call (~0.1 s) that no
    other thread can interrupt."""

    def __init__(self, response: Any, version: int, correlation_id: int, entry: Optional[RequestTraceEntry],
                 request: Any) -> None:
        self._held: List[Any] = [response, request]
        self._version = version
        self._correlation_id = correlation_id
        self._entry = entry

    def __call__(self) -> bytes:
        response = self._held[0]
        if self._entry is not None:
            self._entry.error_codes = error_codes_of(response)
        data = encode_response(response, self._version, self._correlation_id)
        held, self._held = self._held, []
        del response
        for struct in held:
            items = getattr(struct, "topics", None)
            if isinstance(items, list):
                while items:
                    del items[-FREE_SLICE_ITEMS:]
        return data


def _client_id(frame: RequestFrame, connection: _Connection) -> str:
    """The client id a request that did not decode names in its header, else the connection's last."""
    found = peek_client_id(frame)
    return connection.client_id if found is None else found


def _group_of(request: Any) -> Optional[str]:
    group_id = getattr(request, "group_id", None)
    return group_id if isinstance(group_id, str) else None
