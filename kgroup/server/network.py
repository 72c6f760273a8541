"""asyncio glue: one listener per in-memory broker, connections framing requests into the engine.

Thin on purpose: a connection cuts its byte stream into frames (Kafka's 4-byte size
prefix), hands one frame at a time to :class:`~kgroup.server.engine.ServerEngine` and
writes back what the engine answers.  A single timer wakes the engine at its next deadline
(:meth:`Network.get_timer` / :meth:`Network.handle_timer`: the network is the server's timed component).

Backpressure, as Kafka's SocketServer mutes a channel (Selector.mute) from the moment it
reads a request until that request's response has been sent in full: a connection hands
its next request to the engine only after the previous answer left the process (the
transport's write buffer is empty: its high-water mark is 0), and stops reading from the
socket while a complete request is waiting behind the one in progress.  So responses go
out in request order, and a client that sends without reading holds at most one response
and one queued request of server memory; the rest waits in its own socket buffers.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import itertools
import logging
import socket
import struct
from collections import deque
from typing import Any, Callable, Deque, Dict, List, Optional

from kgroup.io.clock import Clock
from kgroup.server.engine import Reply, ServerEngine
from kgroup.server.frames import MAX_FRAME_BYTES, RequestFrame

__all__ = ["Network"]

log = logging.getLogger("kgroup.server")
_SIZE = struct.Struct(">i")
_API_KEY = struct.Struct(">h")
#: A request frame this large is decoded on the codec thread (64 KiB: a Metadata request naming
#: ~7,000 topics, ~10 ms of decoding; every common request is far smaller).
LARGE_FRAME_BYTES = 65_536
#: API keys whose frames are decoded on the loop whatever their size: a Produce request's bytes are
#: its records, which kafka-python decodes as one slice (~20 us for 1 MB), so the codec thread only
#: adds two thread hops and GIL hand-offs (up to sys.getswitchinterval, 5 ms) to every request.
_DECODED_ON_LOOP = frozenset({0})  # Produce
#: API keys whose large frames go to the engine as the bytearray they were read into.
_READ_IN_PLACE = frozenset({0})  # Produce
#: Each connection's buffer for frames read whole (16 KiB: small, as every connection holds one;
#: most requests but Produce fit).  A larger frame gets a buffer of its own, sized to it.
STAGING_BYTES = 16_384
#: A larger frame is read into a buffer of its own, reserved up to this size at once (1 MiB: a
#: producer's usual request, librdkafka's message.max.bytes) and grown as more arrives past it.
LARGE_RESERVE_BYTES = 1_048_576


class _ClientSocket(asyncio.BufferedProtocol):
    """One client connection.  A BufferedProtocol: the kernel copies what arrives straight into
    our buffers (``get_buffer``), so a produced megabyte is not copied three more times on its way
    to the engine (asyncio's chunk, our reassembly buffer, the frame): small frames are cut out of
    a fixed staging buffer, and a frame too big for it is read into a buffer of its own."""

    def __init__(self, network: "Network", node_id: int) -> None:
        self.network = network
        self.node_id = node_id
        self.connection_id = next(network.connection_ids)
        self.transport: Optional[asyncio.Transport] = None
        #: Bytes read but not yet cut into frames are ``_staging[_start:_staged]``.
        self._staging = bytearray(STAGING_BYTES)
        self._start = 0
        self._staged = 0
        #: The frame being read into its own buffer (too big for the staging one): its body so far is
        #: ``_large[:_large_filled]`` of ``_large_size`` bytes.
        self._large: Optional[bytearray] = None
        self._large_filled = 0
        self._large_size = 0
        self._frames: Deque[RequestFrame] = deque()
        self._busy = False
        #: The previous answer is still in the transport's buffer (the client is not reading).
        self._writing_paused = False
        self._reading_paused = False
        self.closed = False

    def held_bytes(self) -> int:
        """Request bytes held for this connection: read but not yet handled."""
        large = len(self._large) if self._large is not None else 0
        return self._staged - self._start + large + sum(len(frame) for frame in self._frames)

    # -- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        host = peer[0] if peer else "unknown"
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # pause_writing as soon as an answer does not fit in the kernel's buffer; resume_writing once
        # it all went out.
        transport.set_write_buffer_limits(high=0, low=0)
        self.network.opened(self, host)

    def get_buffer(self, sizehint: int) -> memoryview:
        large = self._large
        if large is not None:
            if self._large_filled == len(large):
                # A frame past LARGE_RESERVE_BYTES: its buffer grows as its bytes come, so a client
                # announcing a huge frame holds at most twice what it has sent.
                large.extend(bytes(min(len(large), self._large_size - len(large))))
            return memoryview(large)[self._large_filled:]
        if self._staged == len(self._staging):
            # Only the start of a frame that fits is left: move it to the front (same length: allowed
            # while asyncio may still hold a view of the buffer).
            kept = self._staged - self._start
            self._staging[:kept] = self._staging[self._start:self._staged]
            self._start, self._staged = 0, kept
        return memoryview(self._staging)[self._staged:]

    def buffer_updated(self, nbytes: int) -> None:
        large = self._large
        if large is not None:
            self._large_filled += nbytes
            if self._large_filled < self._large_size:
                return
            self._large = None
            # A Produce request is handed on as it was read (its records are read and stored in place,
            # and a copy of a fresh megabyte costs more in page faults than in copying); any other
            # frame as bytes.
            self._frames.append(large if _API_KEY.unpack_from(large)[0] in _READ_IN_PLACE else bytes(large))
        else:
            self._staged += nbytes
        if not self._cut_frames():
            return
        self._next()
        if self._frames and not self._reading_paused and not self.closed and self.transport is not None:
            # A request is waiting behind the one in progress: read no more until it is taken.
            self._reading_paused = True
            self.transport.pause_reading()

    def _cut_frames(self) -> bool:
        """Cut the complete frames out of the staging buffer; False if the connection was closed."""
        staging, start, staged = self._staging, self._start, self._staged
        while staged - start >= 4:
            (size,) = _SIZE.unpack_from(staging, start)
            if size < 0 or size > MAX_FRAME_BYTES:
                log.warning("closing connection %d to broker %d: frame size %d outside 0..%d",
                            self.connection_id, self.node_id, size, MAX_FRAME_BYTES)
                self.close()
                return False
            end = start + 4 + size
            if end <= staged:
                with memoryview(staging) as view:
                    self._frames.append(bytes(view[start + 4:end]))
                start = end
                continue
            if 4 + size > len(staging):
                # Too big for the staging buffer: the rest of its body is read into its own buffer.
                have = staged - start - 4
                large = bytearray(min(size, LARGE_RESERVE_BYTES))
                large[:have] = staging[start + 4:staged]
                self._large, self._large_filled, self._large_size = large, have, size
                start = staged
            break  # the frames completed so far are handled now, not once this one is complete
        if start == staged:
            start = staged = 0
        self._start, self._staged = start, staged
        return True

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._next()

    def connection_lost(self, exc) -> None:
        if not self.closed and (self._large is not None or self._staged > self._start):
            # The client went away in the middle of a request: what it sent so far is dropped.
            if self._large is not None:
                received, expected = 4 + self._large_filled, f" of {self._large_size + 4}"
            else:
                received = self._staged - self._start
                expected = (f" of {_SIZE.unpack_from(self._staging, self._start)[0] + 4}" if received >= 4
                            else "")
            log.warning("connection %d to broker %d closed by the client mid-request (%d%s bytes received); "
                        "the partial request is dropped", self.connection_id, self.node_id, received,
                        expected)
        self.closed = True
        self.network.lost(self)

    # -- engine side ------------------------------------------------------------------------------

    def _next(self) -> None:
        if self._busy or self._writing_paused or self.closed or not self._frames:
            return
        self._busy = True
        frame = self._frames.popleft()
        if self._reading_paused and not self._frames and self.transport is not None:
            self._reading_paused = False
            self.transport.resume_reading()
        self.network.handle(self, frame)

    def deliver(self, reply: Reply) -> None:
        if self.closed or self.transport is None:
            return
        if reply.encode is not None:
            # A large answer: encoded on the codec thread; this connection waits (busy) for it.
            self.network.encode_off_loop(self, reply)
            return
        if reply.data is not None:
            self.transport.write(reply.data)
        self.network.answered(self)
        if reply.close:
            self.close()
            return
        self._busy = False
        # Next request on the next loop turn: a reply can come from inside another connection's handling.
        asyncio.get_running_loop().call_soon(self._next)

    def close(self) -> None:
        if not self.closed and self.transport is not None:
            self.closed = True
            self.transport.close()
            self.network.lost(self)


class Network:
    """Listeners and connections of every broker, on one event loop."""

    def buffered_bytes(self) -> int:
        """Bytes held for every connection: answers not yet taken by the kernel and requests read
        but not yet handled (what a client that stops reading can make the server keep)."""
        total = 0
        for connection in self.connections.values():
            transport = connection.transport
            if transport is not None and not connection.closed:
                total += transport.get_write_buffer_size()
            total += connection.held_bytes()
        return total

    def __init__(self, engine: ServerEngine, clock: Clock, host: str, real_time: bool) -> None:
        self.engine = engine
        self.clock = clock
        self.host = host
        self.real_time = real_time
        self.connection_ids = itertools.count(1)
        self.connections: Dict[int, _ClientSocket] = {}
        self.servers: Dict[int, asyncio.AbstractServer] = {}
        self._timer: Optional[asyncio.TimerHandle] = None
        #: The engine deadline ``_timer`` is armed for.
        self._timer_deadline_ms: Optional[int] = None
        #: Decodes large request frames and encodes large answers off the event loop: pure work
        #: that would otherwise hold every other client for seconds (a 2.7 MB Metadata request
        #: takes ~0.5 s to decode).  One thread, so big requests queue rather than pile up memory.
        self._codec = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgroup-codec")
        self._work_scheduled = False
        #: What holds the cyclic garbage collector off (connection ids with a large request in
        #: progress, "sliced" while the engine has sliced work): see _hold_gc.
        self._gc_holders: set = set()
        self._gc_was_enabled = False

    # -- listeners ----------------------------------------------------------------------------

    async def listen(self, node_id: int, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        self.servers[node_id] = await loop.create_server(lambda: _ClientSocket(self, node_id), sock=sock)

    def stop_listening(self, node_id: int) -> None:
        """Close a broker's listener and every connection to it (the broker is gone)."""
        server = self.servers.pop(node_id, None)
        if server is not None:
            server.close()
        for connection in list(self.connections.values()):
            if connection.node_id == node_id:
                connection.close()

    def close_connections(self, connection_ids: List[int]) -> None:
        for connection_id in connection_ids:
            connection = self.connections.get(connection_id)
            if connection is not None:
                connection.close()

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for node_id in list(self.servers):
            self.stop_listening(node_id)
        self._codec.shutdown(wait=False, cancel_futures=True)
        for holder in list(self._gc_holders):
            self._release_gc(holder)

    # -- connections --------------------------------------------------------------------------

    def opened(self, connection: _ClientSocket, host: str) -> None:
        self.connections[connection.connection_id] = connection
        self.engine.connection_opened(connection.connection_id, connection.node_id, host)

    def lost(self, connection: _ClientSocket) -> None:
        self._release_gc(connection.connection_id)
        if self.connections.pop(connection.connection_id, None) is not None:
            self.engine.connection_closed(connection.connection_id)

    def answered(self, connection: _ClientSocket) -> None:
        """A connection's answer went out: its large request, if it was one, is over."""
        if self._gc_holders:
            self._release_gc(connection.connection_id)

    def _hold_gc(self, holder: Any) -> None:
        """Keep the cyclic GC from running while a large request is in progress.

        Decoding, answering and encoding one 300,000-topic request allocates millions of objects,
        which triggers full collections; a full collection walks the whole heap in one C call that
        never lets the event loop's thread have the GIL (~0.5 s).  The objects are acyclic and go
        with their last reference, so the collector is only postponed until the request is done."""
        if not self._gc_holders:
            self._gc_was_enabled = gc.isenabled()
            gc.disable()
        self._gc_holders.add(holder)

    def _release_gc(self, holder: Any) -> None:
        if holder in self._gc_holders:
            self._gc_holders.discard(holder)
            if not self._gc_holders and self._gc_was_enabled:
                gc.enable()

    def handle(self, connection: _ClientSocket, frame: RequestFrame) -> None:
        if len(frame) >= LARGE_FRAME_BYTES and _API_KEY.unpack_from(frame)[0] not in _DECODED_ON_LOOP:
            self._hold_gc(connection.connection_id)
            self._off_loop(connection, self.engine.decode, frame,
                           lambda decoded: self._handle(connection, frame, decoded))
            return
        self._handle(connection, frame, None)

    def _handle(self, connection: _ClientSocket, frame: RequestFrame, decoded: Any) -> None:
        if connection.closed:
            return
        try:
            replies = self.engine.handle(connection.connection_id, frame, self.clock(), decoded)
        except Exception:  # one bad request closes its own connection, never the server
            log.exception("closing connection %d to broker %d: the engine failed on its request",
                          connection.connection_id, connection.node_id)
            connection.close()
            return
        self.dispatch(replies)

    def encode_off_loop(self, connection: _ClientSocket, reply: Reply) -> None:
        encode = reply.encode
        assert encode is not None
        self._hold_gc(connection.connection_id)
        self._off_loop(connection, lambda _: encode(), None,
                       lambda data: connection.deliver(Reply(reply.connection_id, data, reply.close)))

    def _off_loop(self, connection: _ClientSocket, work: Callable[[Any], Any], argument: Any,
                  then: Callable[[Any], None]) -> None:
        """Run ``work(argument)`` on the codec thread, then ``then(result)`` back on the loop."""
        future = asyncio.get_running_loop().run_in_executor(self._codec, work, argument)

        def done(finished: "asyncio.Future[Any]") -> None:
            if finished.cancelled() or connection.closed:
                return
            error = finished.exception()
            if error is not None:
                log.error("closing connection %d to broker %d: %s failed off the loop: %r",
                          connection.connection_id, connection.node_id, work, error)
                connection.close()
                return
            then(finished.result())
        future.add_done_callback(done)

    def dispatch(self, replies: List[Reply]) -> None:
        for reply in replies:
            connection = self.connections.get(reply.connection_id)
            if connection is not None:
                connection.deliver(reply)
        self.schedule()
        if self.engine.has_work():
            self._hold_gc("sliced")
            if not self._work_scheduled:
                self._work_scheduled = True
                asyncio.get_running_loop().call_soon(self._work)
        else:
            self._release_gc("sliced")

    def _work(self) -> None:
        """One slice of a request the engine answers in slices; the loop polls its sockets and
        runs every other ready callback before the next slice."""
        self._work_scheduled = False
        self.dispatch(self.engine.work(self.clock()))

    # -- time -----------------------------------------------------------------------------------

    def get_timer(self) -> Optional[int]:
        return self.engine.get_timer()

    def handle_timer(self, now_ms: int) -> None:
        """Do what the engine has due at ``now_ms`` and send what it answers (on the loop)."""
        self._timer = None
        self.dispatch(self.engine.handle_timer(now_ms))

    def schedule(self) -> None:
        """(Re)arm the event loop's timer for the next deadline (real clock only: a mock clock is
        moved by ``KafkaServer.advance``)."""
        if not self.real_time:
            return
        deadline = self.get_timer()
        if self._timer is not None:
            if deadline == self._timer_deadline_ms:
                return  # armed for it already: re-arming after every request only churned the loop's heap
            self._timer.cancel()
            self._timer = None
        if deadline is None:
            return
        delay_s = max(0, deadline - self.clock()) / 1000
        self._timer_deadline_ms = deadline
        self._timer = asyncio.get_running_loop().call_later(delay_s, self._on_real_timer)

    def _on_real_timer(self) -> None:
        self.handle_timer(self.clock())
