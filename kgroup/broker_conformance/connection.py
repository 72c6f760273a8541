"""One blocking loopback socket per simulated client: send a kafka-python request now, read its answer later.

A scenario plays several members at once (a JoinGroup parks until the rebalance completes), so a
request's sending and the reading of its answer are separate steps; Kafka answers the requests of
one connection in order, so each member gets its own connection.  kafka-python's protocol classes
encode and decode; :func:`kgroup.testing.raw_kafka_connection.response_class_of` finds the answer's
class.
"""
from __future__ import annotations

import select
import socket
import struct
from collections import deque
from typing import Any, Deque, Tuple

from kgroup.errors import KGroupError
from kgroup.testing.raw_kafka_connection import response_class_of


class ConnectionClosedError(KGroupError):
    """The broker closed the connection instead of answering."""


class UndecodableAnswerError(KGroupError):
    """The broker's answer does not decode as the response to the request sent."""


class AnswerTimeoutError(KGroupError):
    """No answer came within the scenario's bound."""


def parse_address(address: str) -> Tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise KGroupError(f"not a HOST:PORT address: {address!r}")
    return host, int(port)


class BrokerConnection:
    def __init__(self, address: str, client_id: str, timeout_s: float = 10.0) -> None:
        self.address = address
        self.client_id = client_id
        self._sock = socket.create_connection(parse_address(address), timeout=timeout_s)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._correlation_id = 0
        self._in_flight: Deque[Tuple[int, Any]] = deque()

    def send(self, request: Any) -> None:
        self._correlation_id += 1
        request.with_header(correlation_id=self._correlation_id, client_id=self.client_id)
        body = bytes(request.encode(header=True))
        self._sock.sendall(struct.pack(">i", len(body)) + body)
        self._in_flight.append((self._correlation_id, request))

    def answered_within(self, timeout_s: float) -> bool:
        """Whether the answer to the oldest request in flight (or an EOF) is readable within the bound."""
        readable, _, _ = select.select([self._sock], [], [], timeout_s)
        return bool(readable)

    def receive(self, timeout_s: float = 10.0) -> Any:
        """The decoded answer to the oldest request in flight."""
        if not self._in_flight:
            raise KGroupError("receive() with no request in flight")
        correlation_id, request = self._in_flight.popleft()
        (size,) = struct.unpack(">i", self._read_exactly(4, timeout_s, request))
        frame = self._read_exactly(size, timeout_s, request)
        try:
            response = response_class_of(request).decode(frame, version=request.API_VERSION, header=True)
        except Exception as error:  # bytes from a broker under test: any decoding failure is its answer
            raise UndecodableAnswerError(
                f"{type(request).__name__} v{request.API_VERSION}: the {size}-byte answer does not decode "
                f"({type(error).__name__})") from None
        if response.header.correlation_id != correlation_id:
            raise KGroupError(f"{type(request).__name__}: answer carries correlation id "
                              f"{response.header.correlation_id}, expected {correlation_id}")
        return response

    def request(self, request: Any, timeout_s: float = 10.0) -> Any:
        self.send(request)
        return self.receive(timeout_s)

    def _read_exactly(self, count: int, timeout_s: float, request: Any) -> bytes:
        self._sock.settimeout(timeout_s)
        chunks = []
        while count:
            try:
                chunk = self._sock.recv(min(count, 1 << 20))
            except socket.timeout as exc:
                raise AnswerTimeoutError(
                    f"no answer to {type(request).__name__} within {timeout_s} s") from exc
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise ConnectionClosedError(f"the broker closed the connection instead of answering "
                                            f"{type(request).__name__}")
            chunks.append(chunk)
            count -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self._sock.close()
