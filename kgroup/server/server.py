"""``KafkaServer``: the in-memory cluster served over the Kafka wire protocol on loopback ports.

    from kgroup.server import KafkaServer

    with KafkaServer(brokers=3) as server:
        server.create_topic("orders", partitions=6)
        consumer = kafka.KafkaConsumer("orders", bootstrap_servers=server.bootstrap_servers, ...)
        server.kill_broker(server.coordinator_node("billing"))   # clients fail over
        server.fail_next("Heartbeat", error_code=27)              # REBALANCE_IN_PROGRESS once

The event loop runs in a daemon thread; every method here is thread-safe (it runs its work
on that loop and waits for it).  With ``clock=MockClock()`` time moves only through
:meth:`KafkaServer.advance`; otherwise it is the monotonic clock.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from typing import Any, Callable, List, Optional, TypeVar, cast

import attrs

from kgroup.core.cluster.config import ClusterConfig
from kgroup.core.cluster.group_hosting import GroupHosting, GroupHostingConfig
from kgroup.core.cluster.state_machine import ClusterStateMachine
from kgroup.core.consumer_group_messages import (
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, DescribedConsumerGroup,
)
from kgroup.core.error_codes import ErrorCode
from kgroup.errors import ConfigError, KGroupError
from kgroup.io.clock import Clock, MockClock, monotonic_ms, run_timers_through
from kgroup.server.config import ServerConfig
from kgroup.server.data_plane import DataPlane
from kgroup.server.engine import ServerEngine
from kgroup.server.faults import FaultAction, FaultRule, RequestTraceEntry, WireFaultKind
from kgroup.server.network import Network

__all__ = ["KafkaServer"]

log = logging.getLogger("kgroup.server")
T = TypeVar("T")


class ServerNotRunningError(KGroupError, RuntimeError):
    """The server was used before ``start()`` or after ``stop()``."""


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.setblocking(False)
    return sock


class KafkaServer:
    def __init__(self, config: Optional[ServerConfig] = None, *, clock: Optional[MockClock] = None,
                 **options: Any) -> None:
        """``options`` are :class:`ServerConfig` fields (``brokers=3``, ``port=9092``...), applied on
        top of ``config``."""
        try:
            self.config = attrs.evolve(config or ServerConfig(), **options)
        except TypeError as error:
            raise ConfigError(f"unknown KafkaServer option: {error}") from None
        self._mock_clock = clock
        self._clock: Clock = clock if clock is not None else monotonic_ms
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._ports: dict = {}
        self.cluster: Optional[ClusterStateMachine] = None
        self.hosting: Optional[GroupHosting] = None
        self.engine: Optional[ServerEngine] = None
        self._network: Optional[Network] = None

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> "KafkaServer":
        if self._loop is not None:
            return self
        config = self.config
        sockets = {}
        try:
            for index, node_id in enumerate(config.broker_ids):
                sockets[node_id] = _bind(config.host, config.port + index if config.port else 0)
        except OSError:
            for sock in sockets.values():
                sock.close()
            raise
        self._ports = {node_id: sock.getsockname()[1] for node_id, sock in sockets.items()}
        now_ms = self._clock()
        cluster_config = ClusterConfig(
            broker_ids=config.broker_ids,
            default_replication_factor=min(config.default_replication_factor, config.brokers),
            min_insync_replicas=config.min_insync_replicas,
            listeners={node_id: (config.host, port) for node_id, port in self._ports.items()},
            broker_racks=config.broker_racks)
        self.cluster = ClusterStateMachine(cluster_config, now_ms=now_ms)
        self.hosting = GroupHosting(self.cluster, GroupHostingConfig(
            offsets_topic_partitions=config.offsets_partitions, offsets_topic_replication_factor=3,
            group_load_time_ms=config.group_load_time_ms, coordinator=config.coordinator,
            eager_replication=True), now_ms)
        self.engine = ServerEngine(self.hosting, DataPlane(self.cluster, config), now_ms)
        self._network = Network(self.engine, self._clock, config.host, real_time=self._mock_clock is None)
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="kgroup-server", daemon=True)
        self._thread.start()

        async def listen_all() -> None:
            assert self._network is not None
            for node_id, sock in sockets.items():
                await self._network.listen(node_id, sock)
            self._network.schedule()

        self._call(listen_all())
        log.info("kgroup server listening on %s", self.bootstrap_servers)
        return self

    def stop(self) -> None:
        loop, self._loop = self._loop, None
        if loop is None:
            return
        network = self._network
        if network is not None:
            asyncio.run_coroutine_threadsafe(network.close(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=10)
        loop.close()

    def __enter__(self) -> "KafkaServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- addresses ------------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of every broker, comma-separated (what every client's bootstrap setting takes)."""
        return ",".join(f"{self.config.host}:{port}" for _, port in sorted(self._ports.items()))

    @property
    def live_bootstrap_servers(self) -> str:
        """``host:port`` of the brokers listening now (not killed): for a client created after a
        fault, since kafka-python 3.0 can back off on a dead bootstrap address past its timeout."""
        def work() -> List[int]:
            assert self._network is not None
            return sorted(self._network.servers)
        return ",".join(self.listener(node_id) for node_id in self._call(work))

    def listener(self, node_id: int) -> str:
        return f"{self.config.host}:{self._ports[node_id]}"

    # -- running work on the loop ----------------------------------------------------------------

    def _call(self, work: Any) -> Any:
        """Run a coroutine or a zero-argument function on the loop thread and return its result."""
        loop = self._loop
        if loop is None:
            raise ServerNotRunningError(
                "the server is not running: call start() or use it as a context manager")
        if threading.current_thread() is self._thread:
            raise ServerNotRunningError("KafkaServer methods are for other threads, not the server's own")
        if asyncio.iscoroutine(work):
            return asyncio.run_coroutine_threadsafe(work, loop).result(timeout=30)

        async def run() -> Any:
            return work()
        return asyncio.run_coroutine_threadsafe(run(), loop).result(timeout=30)

    def _engine_call(self, action: Callable[[ServerEngine, int], List]) -> None:
        """Run ``action(engine, now_ms)`` on the loop and deliver the replies it produced."""
        def work() -> None:
            assert self.engine is not None and self._network is not None
            self._network.dispatch(action(self.engine, self._clock()))
        self._call(work)

    def _cluster_fault(self, fault: Callable[[GroupHosting, int], List]) -> None:
        def action(engine: ServerEngine, now_ms: int) -> List:
            return engine.apply_fault(now_ms, lambda now: fault(engine.hosting, now))
        self._engine_call(action)

    # -- time (mock clock) ------------------------------------------------------------------------

    def advance(self, delta_ms: int) -> None:
        """Move a mock clock forward, handling every deadline on the way at its own time."""
        clock = self._mock_clock
        if clock is None:
            raise ConfigError("advance() needs a server started with clock=MockClock()")
        target = clock() + delta_ms

        def work() -> None:
            assert self._network is not None
            run_timers_through(clock, self._network, target)
        self._call(work)

    # -- topics and groups --------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, replication_factor: Optional[int] = None) -> None:
        def work() -> None:
            assert self.engine is not None
            code = self.engine.data.create_topic(name, partitions, replication_factor)
            if code is not ErrorCode.NONE:
                raise KGroupError(f"cannot create topic {name!r}: {code.name}")
        self._call(work)

    def coordinator_node(self, group_id: str) -> Optional[int]:
        return self._call(lambda: self._hosting().coordinator_node(group_id))

    def group_state(self, group_id: str) -> Optional[str]:
        """The group's state name ("Stable", "PreparingRebalance", ...), None if unknown or not loaded."""
        def work() -> Optional[str]:
            state = self._hosting().group_state(group_id)
            return None if state is None else str(getattr(state, "value", state))
        return self._call(work)

    def describe_consumer_group(self, group_id: str) -> DescribedConsumerGroup:
        """What ConsumerGroupDescribe answers for a KIP-848 group, read on the server's thread."""
        def work() -> DescribedConsumerGroup:
            request = ConsumerGroupDescribeRequest((group_id,))
            coordinator = self._hosting().coordinator_for(group_id)
            if coordinator is None:
                return DescribedConsumerGroup(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, group_id)
            response = coordinator.handle(None, request, self._clock()).deliveries[0].response
            return cast(ConsumerGroupDescribeResponse, response).groups[0]
        return self._call(work)

    def wait_coordinators_loaded(self, timeout_s: float = 30.0) -> None:
        """Return once every group and transaction coordinator has loaded (no request gets
        COORDINATOR_LOAD_IN_PROGRESS)."""
        deadline = time.monotonic() + timeout_s

        def loaded() -> bool:
            assert self.engine is not None
            return (self._hosting().all_coordinators_loaded()
                    and self.engine.transactions.all_coordinators_loaded())
        while not self._call(loaded):
            if time.monotonic() > deadline:
                raise KGroupError(f"the coordinators did not load within {timeout_s} s")
            time.sleep(0.01)

    def transaction_coordinator_node(self, transactional_id: str) -> Optional[int]:
        """The broker coordinating ``transactional_id`` (None while its partition has no leader)."""
        def work() -> Optional[int]:
            assert self.engine is not None
            return self.engine.transactions.coordinator_node(transactional_id)
        return self._call(work)

    def transaction_state(self, transactional_id: str) -> Optional[str]:
        """Kafka's name of the id's transaction state ("Ongoing", "CompleteCommit", ...), None if
        unknown or not loaded."""
        def work() -> Optional[str]:
            assert self.engine is not None
            coordinator = self.engine.transactions.coordinator_for(transactional_id)
            metadata = None if coordinator is None else coordinator.transaction(transactional_id)
            return None if metadata is None else metadata.state.kafka_name
        return self._call(work)

    def partition_leader(self, topic: str, partition: int) -> Optional[int]:
        return self._call(lambda: self._hosting().cluster.partition(topic, partition).leader)

    def _hosting(self) -> GroupHosting:
        if self.hosting is None:
            raise ServerNotRunningError("the server is not running")
        return self.hosting

    # -- cluster faults ------------------------------------------------------------------------------

    def kill_broker(self, node_id: int) -> None:
        """Kill a broker: its listener closes, its connections drop, leadership moves."""
        self._cluster_fault(lambda hosting, now: hosting.kill_broker(node_id, now))
        self._call(lambda: self._network.stop_listening(node_id) if self._network else None)

    def restart_broker(self, node_id: int) -> None:
        """Bring a killed broker back on the same port."""
        self._cluster_fault(lambda hosting, now: hosting.restart_broker(node_id, now))
        sock = _bind(self.config.host, self._ports[node_id])

        async def listen() -> None:
            assert self._network is not None
            await self._network.listen(node_id, sock)
        self._call(listen())

    def controlled_shutdown(self, node_id: int) -> None:
        self._cluster_fault(lambda hosting, now: hosting.controlled_shutdown(node_id, now))
        self._call(lambda: self._network.stop_listening(node_id) if self._network else None)

    def isolate_broker(self, node_id: int) -> None:
        """Cut a broker off from the cluster; clients reaching it get their connection closed."""
        self._cluster_fault(lambda hosting, now: hosting.isolate_broker(node_id, now))

    def heal_broker(self, node_id: int) -> None:
        self._cluster_fault(lambda hosting, now: hosting.heal_broker(node_id, now))

    def elect_preferred_leaders(self) -> None:
        self._cluster_fault(lambda hosting, now: hosting.elect_preferred_leaders(now))

    # -- request faults ----------------------------------------------------------------------------

    def _add_rule(self, action: FaultAction, api: Optional[str], client_id: Optional[str],
                  group_id: Optional[str], count: Optional[int]) -> FaultRule:
        def work() -> FaultRule:
            assert self.engine is not None
            return self.engine.faults.add(action, api, client_id, group_id, count)
        return self._call(work)

    def fail_next(self, api: str, error_code: int, count: Optional[int] = 1, *,
                  client_id: Optional[str] = None, group_id: Optional[str] = None) -> FaultRule:
        """Answer the next ``count`` requests of ``api`` (e.g. "Heartbeat") with ``error_code``."""
        code = int(error_code)
        if code == ErrorCode.NONE:
            raise ConfigError("fail_next needs a non-zero error code")
        action = FaultAction(WireFaultKind.FAIL, error_code=code)
        return self._add_rule(action, _api_name(api), client_id, group_id, count)

    def delay(self, delay_ms: int, api: Optional[str] = None, count: Optional[int] = None, *,
              client_id: Optional[str] = None, group_id: Optional[str] = None) -> FaultRule:
        """Hold the answers of matching requests for ``delay_ms`` (every one until removed by default)."""
        action = FaultAction(WireFaultKind.DELAY, delay_ms=delay_ms)
        return self._add_rule(action, _api_name(api), client_id, group_id, count)

    def drop_next(self, api: Optional[str] = None, count: Optional[int] = 1, *,
                  client_id: Optional[str] = None, group_id: Optional[str] = None) -> FaultRule:
        """Swallow matching requests: no answer, the connection stays open (the client times out)."""
        return self._add_rule(FaultAction(WireFaultKind.DROP), _api_name(api), client_id, group_id, count)

    def close_on_next(self, api: Optional[str] = None, count: Optional[int] = 1, *,
                      client_id: Optional[str] = None, group_id: Optional[str] = None) -> FaultRule:
        """Close the connection a matching request arrives on, without answering it."""
        return self._add_rule(FaultAction(WireFaultKind.CLOSE), _api_name(api), client_id, group_id, count)

    def blackhole(self, client_id: str) -> FaultRule:
        """Swallow every request of ``client_id`` until :meth:`heal_client` (a partitioned client)."""
        return self._add_rule(FaultAction(WireFaultKind.DROP), None, client_id, None, None)

    def heal_client(self, client_id: str) -> None:
        """Remove every fault rule naming ``client_id`` and close its connections (its parked requests go)."""
        def work() -> None:
            assert self.engine is not None and self._network is not None
            self.engine.faults.clear(client_id)
            self._network.close_connections(self.engine.connections(client_id=client_id))
        self._call(work)

    def remove_fault(self, rule: FaultRule) -> None:
        self._call(lambda: self.engine.faults.remove(rule) if self.engine else None)

    def clear_faults(self) -> None:
        self._call(lambda: self.engine.faults.clear() if self.engine else None)

    def close_connections(self, *, client_id: Optional[str] = None, node_id: Optional[int] = None) -> int:
        """Close the connections of a client and/or to a broker now; returns how many."""
        def work() -> int:
            assert self.engine is not None and self._network is not None
            ids = self.engine.connections(client_id=client_id, node_id=node_id)
            self._network.close_connections(ids)
            return len(ids)
        return self._call(work)

    def buffered_bytes(self) -> int:
        """Bytes the server holds for its connections: unsent answers and unhandled requests."""
        return self._call(lambda: self._network.buffered_bytes() if self._network else 0)

    # -- trace ----------------------------------------------------------------------------------------

    def trace(self, api: Optional[str] = None, client_id: Optional[str] = None) -> List[RequestTraceEntry]:
        """A copy of the request trace (the latest ``ServerConfig.trace_entries`` requests),
        optionally only one API and/or client."""
        def work() -> List[RequestTraceEntry]:
            assert self.engine is not None
            name = _api_name(api)
            return [attrs.evolve(e) for e in self.engine.trace
                    if (name is None or e.api == name) and (client_id is None or e.client_id == client_id)]
        return self._call(work)

    def observe_groups(self, observer: Callable[[Any, Any, int], None]) -> None:
        """Call ``observer(core_request, core_answer, now_ms)`` for every group-API answer.

        It runs on the server's thread, in answer order: keep it short and never block.
        """
        def work() -> None:
            assert self.engine is not None
            self.engine.group_observers.append(observer)

        self._call(work)

    def clear_trace(self) -> None:
        self._call(lambda: self.engine.trace.clear() if self.engine else None)


def _api_name(api: Optional[str]) -> Optional[str]:
    """Accept "Heartbeat", "heartbeat", an ApiKey or its int; answer kafka-python's ApiKey name."""
    if api is None:
        return None
    from kafka.protocol.api_key import ApiKey
    if isinstance(api, int):
        return ApiKey(api).name
    for key in ApiKey:
        if key.name.lower() == str(api).replace("_", "").lower():
            return key.name
    raise ConfigError(f"unknown Kafka API {api!r}")
