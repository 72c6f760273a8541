"""One blocking socket that sends kafka-python request objects and decodes the answers.

Used where a test or a tool must say exactly which request goes out (the conformance scripts, the
Apache Kafka launcher's readiness probe): no client library in between choosing versions, retrying
or batching.  kafka-python's ``kafka.protocol`` classes encode and decode; nothing is hand-written.
"""
from __future__ import annotations

import socket
import struct
import sys
from typing import Any, Optional, Tuple, Union

from kgroup.errors import KGroupError


class RawConnectionClosedError(KGroupError):
    """The broker closed the connection instead of answering a request."""


def response_class_of(request: Any) -> Any:
    """The response class of a kafka-python request object (FooRequest_vN -> FooResponse_vN)."""
    module = sys.modules[type(request).__module__]
    return getattr(module, type(request).__name__.replace("Request", "Response"))


class RawKafkaConnection:
    """A blocking loopback connection to one broker; ``request()`` sends one request and waits."""

    def __init__(self, address: Union[str, Tuple[str, int]], timeout_s: float = 10.0,
                 client_id: str = "kgroup-raw") -> None:
        if isinstance(address, str):
            host, port = address.rsplit(":", 1)
            address = (host, int(port))
        self.address = address
        self.client_id = client_id
        self._sock = socket.create_connection(address, timeout=timeout_s)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._correlation_id = 0

    def request(self, request: Any, timeout_s: float = 10.0) -> Any:
        """Send ``request`` and return its decoded response (the header's correlation id checked)."""
        self._correlation_id += 1
        request.with_header(correlation_id=self._correlation_id, client_id=self.client_id)
        body = bytes(request.encode(header=True))
        self._sock.settimeout(timeout_s)
        self._sock.sendall(struct.pack(">i", len(body)) + body)
        (size,) = struct.unpack(">i", self._read_exactly(4, request))
        frame = self._read_exactly(size, request)
        response = response_class_of(request).decode(frame, version=request.API_VERSION, header=True)
        if response.header.correlation_id != self._correlation_id:
            raise RawConnectionClosedError(
                f"{type(request).__name__}: answer carries correlation id {response.header.correlation_id}, "
                f"expected {self._correlation_id}")
        return response

    def _read_exactly(self, count: int, request: Any) -> bytes:
        chunks = []
        while count:
            chunk = self._sock.recv(min(count, 1 << 20))
            if not chunk:
                raise RawConnectionClosedError(
                    f"{self.address[0]}:{self.address[1]} closed the connection instead of answering "
                    f"{type(request).__name__}")
            chunks.append(chunk)
            count -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> "RawKafkaConnection":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def send_raw_request(address: Union[str, Tuple[str, int]], request: Any,
                     timeout_s: Optional[float] = 10.0) -> Any:
    """Open a connection, send one request, return its response, close."""
    with RawKafkaConnection(address, timeout_s=timeout_s or 10.0) as connection:
        return connection.request(request, timeout_s=timeout_s or 10.0)
