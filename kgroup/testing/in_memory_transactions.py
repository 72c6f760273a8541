"""Records and transactions on an :class:`~kgroup.testing.InMemoryKafka` (issue 26).

:class:`InMemoryDataMixin` is the part of ``InMemoryKafka`` that deals with client data: plain appends
(``produce``), reads at an isolation level (``read``; read_committed stops at the last stable offset and
skips aborted records, as Kafka's consumer does), the transaction coordinators on ``__transaction_state``
(``InMemoryKafka(transactions=True)`` or ``enable_transactions``) behind the same hub as the group
coordinators, transactional producers (``transactional_producer``), the group's committed offsets as
OffsetFetch answers them, and the waiting that a blocking client call does (``block_until``).  The
records and markers live in the cluster's replica logs through
:class:`~kgroup.core.cluster.transactional_data.TransactionalData`, which the simulator's exactly-once
mode uses too.
"""
from __future__ import annotations

import itertools
import time
from typing import TYPE_CHECKING, Callable, Dict, List, NamedTuple, Optional, Sequence, TypeVar

from kgroup.core import messages as m
from kgroup.core.cluster.transaction_hosting import TransactionHosting, TransactionHostingConfig
from kgroup.core.cluster.transactional_backend import TransactionalBackend
from kgroup.core.cluster.transactional_data import (
    PlainRecord, TransactionalData, TransactionalRecord,
)
from kgroup.core.error_codes import ErrorCode
from kgroup.core.transaction import TransactionState
from kgroup.errors import ClusterError, ConfigError, TransactionStateError
from kgroup.io.clock import monotonic_ms
from kgroup.testing.transactional_producer import (
    GROUP_KEY_TYPE, InMemoryTransactionalProducer, RecordMetadata, partition_for_key,
)
from kgroup.values import TopicPartition

if TYPE_CHECKING:
    from kgroup.core.cluster import ClusterStateMachine
    from kgroup.core.cluster.group_hosting import GroupHosting
    from kgroup.io.clock import MockClock
    from kgroup.io.inprocess import InProcessHub, InProcessTransport
    from kgroup.testing.scheduler import Scheduler

_T = TypeVar("_T")

__all__ = ["ISOLATION_LEVELS", "ConsumedRecord", "InMemoryDataMixin"]

#: Kafka's consumer ``isolation.level`` values.
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")


class ConsumedRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    key: object
    value: object


class InMemoryDataMixin:
    """Client data and transactions of an ``InMemoryKafka`` (see the module doc)."""

    # What InMemoryKafka provides.
    cluster: "ClusterStateMachine"
    hosting: "GroupHosting"
    hub: "InProcessHub"
    clock: Optional["MockClock"]
    scheduler: Optional["Scheduler"]
    data: TransactionalData
    transactions: Optional[TransactionHosting]
    #: True while run() / run_until() drive the scheduler: a blocking call cannot drive it again.
    _driving: bool
    _round_robin: Dict[str, "itertools.count[int]"]

    transport: Callable[[str], "InProcessTransport"]

    # -- transactions ------------------------------------------------------------------------------

    def enable_transactions(self, config: Optional[TransactionHostingConfig] = None) -> TransactionHosting:
        """Host transaction coordinators on ``__transaction_state`` leaders beside the group coordinators
        (their markers go to ``__consumer_offsets`` through the group hosting, to data partitions through
        :attr:`data`); once per cluster."""
        if self.transactions is not None:
            raise ConfigError("this cluster already hosts transaction coordinators")
        if config is None:
            config = TransactionHostingConfig(
                transaction_state_replication_factor=self.cluster.config.default_replication_factor,
                load_time_ms=self.hosting.config.group_load_time_ms)

        def host(now_ms: int) -> list:
            self.transactions = TransactionHosting(self.cluster, config, now_ms, offsets_writer=self.hosting,
                                                   data_writer=self.data)
            self.hub.backend = TransactionalBackend(self.hosting, self.transactions)
            return []
        self.hub.apply(host)
        assert self.transactions is not None
        return self.transactions

    def transactional_producer(self, transactional_id: str, *, transaction_timeout_ms: int = 60_000,
                               max_block_ms: int = 60_000, retry_backoff_ms: int = 100,
                               client_id: Optional[str] = None) -> InMemoryTransactionalProducer:
        """A producer with ``transactional.id`` ``transactional_id`` (call ``init_transactions()`` first)."""
        return InMemoryTransactionalProducer(
            self, transactional_id, transaction_timeout_ms=transaction_timeout_ms, max_block_ms=max_block_ms,
            retry_backoff_ms=retry_backoff_ms, client_id=client_id)

    def transaction_state(self, transactional_id: str) -> Optional[TransactionState]:
        """The coordinator's state of ``transactional_id`` (None: unknown, or its coordinator is loading)."""
        def read(now_ms: int) -> Optional[TransactionState]:
            hosting = self._transaction_hosting()
            coordinator = hosting.coordinator_for(transactional_id)
            metadata = None if coordinator is None else coordinator.transaction(transactional_id)
            return None if metadata is None else metadata.state
        return self.hub.query(read)

    def transaction_coordinator_node(self, transactional_id: str) -> Optional[int]:
        """The broker leading ``transactional_id``'s ``__transaction_state`` partition."""
        return self.hub.query(lambda now_ms: self._transaction_hosting().coordinator_node(transactional_id))

    def _transaction_hosting(self) -> TransactionHosting:
        if self.transactions is None:
            raise ConfigError("this InMemoryKafka has no transaction coordinators: "
                              "build it with transactions=True")
        return self.transactions

    # -- records -------------------------------------------------------------------------------------

    def choose_partition(self, topic: str, key: object = None, partition: Optional[int] = None) -> int:
        """``partition`` if given (checked), else Kafka's default partitioner for ``key``, else round
        robin."""
        partitions = self.cluster.topics.get(topic)
        if partitions is None:
            raise ConfigError(f"unknown topic {topic!r}: create it with create_topic()")
        if partition is not None:
            if not 0 <= partition < len(partitions):
                raise ConfigError(f"{topic!r} has partitions 0..{len(partitions) - 1}, not {partition}")
            return partition
        if key is not None:
            return partition_for_key(key, len(partitions))
        return next(self._round_robin.setdefault(topic, itertools.count())) % len(partitions)

    def produce(self, topic: str, value: object, *, key: object = None, partition: Optional[int] = None,
                timeout_ms: int = 30_000) -> RecordMetadata:
        """Append a record outside any transaction and wait until it is replicated (acks=all)."""
        index = self.choose_partition(topic, key, partition)
        record = PlainRecord(value, key)
        offset = self.append(lambda: self.data.append_plain(topic, index, [record]))
        if isinstance(offset, ErrorCode):
            raise ClusterError(f"the append to {topic}-{index} was refused: {offset.name}", offset)

        def replicated() -> bool:
            return self.hub.query(lambda now_ms: _high_watermark(self.cluster, topic, index) > offset)
        if not self.block_until(replicated, timeout_ms):
            raise ClusterError(f"{topic}-{index}@{offset} not replicated within {timeout_ms} ms",
                               ErrorCode.REQUEST_TIMED_OUT)
        return RecordMetadata(topic, index, offset)

    def append(self, write: Callable[[], _T]) -> _T:
        """``write()`` (an append to the cluster's logs) under the hub's lock; on the real clock the hub's
        thread wakes to replicate it."""
        written: List[_T] = []

        def apply(now_ms: int) -> list:
            written.append(write())
            return []  # an append answers no parked request
        self.hub.apply(apply)
        return written[0]

    def read(self, topic: str, partition: Optional[int] = None, *, start_offset: int = 0,
             isolation_level: str = "read_committed") -> List[ConsumedRecord]:
        """What a consumer at ``isolation_level`` reads from ``start_offset`` of ``partition`` (every
        partition of the topic, each from ``start_offset``, when None), in offset order per partition."""
        if isolation_level not in ISOLATION_LEVELS:
            raise ConfigError(f"isolation_level must be one of {ISOLATION_LEVELS}, got {isolation_level!r}")
        partitions = self.cluster.topics.get(topic)
        if partitions is None:
            raise ConfigError(f"unknown topic {topic!r}")
        indexes = (range(len(partitions)) if partition is None
                   else [self.choose_partition(topic, None, partition)])
        read = self.data.read_committed if isolation_level == "read_committed" else self.data.read_uncommitted

        def read_all(now_ms: int) -> List[ConsumedRecord]:
            out: List[ConsumedRecord] = []
            for index in indexes:
                position = start_offset
                while True:
                    records, position = read(topic, index, position, 10_000)
                    out.extend(_consumed(topic, index, offset, payload) for offset, payload in records)
                    if not records:
                        break
            return out
        return self.hub.query(read_all)

    def last_stable_offset(self, topic: str, partition: int) -> Optional[int]:
        return self.hub.query(lambda now_ms: self.data.last_stable_offset(topic, partition))

    def committed_offsets(self, group_id: str, partitions: Optional[Sequence[TopicPartition]] = None, *,
                          require_stable: bool = False,
                          timeout_ms: int = 30_000) -> Dict[TopicPartition, int]:
        """The group's committed offsets (of ``partitions``, else of every partition with one) as OffsetFetch
        answers them: a transaction's offsets appear once it commits; with ``require_stable``, a partition
        asked for with offsets pending in a transaction raises ClusterError(UNSTABLE_OFFSET_COMMIT)."""
        transport = self.transport("committed-offsets")
        try:
            find = m.FindCoordinatorRequest(group_id, GROUP_KEY_TYPE)
            found = _ask(self, transport, find, None, timeout_ms)
            if not isinstance(found, m.FindCoordinatorResponse) or found.error_code is not ErrorCode.NONE:
                raise ClusterError(f"no coordinator for group {group_id!r}: {found!r}")
            asked = None if partitions is None else tuple(partitions)
            fetch = m.OffsetFetchRequest(group_id, asked, require_stable=require_stable)
            answer = _ask(self, transport, fetch, found.node_id, timeout_ms)
        finally:
            transport.close()
        if not isinstance(answer, m.OffsetFetchResponse):
            raise ClusterError(f"OffsetFetch for {group_id!r} failed: {answer!r}")
        codes = [answer.error_code] + [p.error_code for p in answer.partitions]
        failed = [code for code in codes if code is not ErrorCode.NONE]
        if failed:
            raise ClusterError(f"OffsetFetch for {group_id!r} answered {failed[0].name}", failed[0])
        return {p.topic_partition: p.committed.offset for p in answer.partitions if p.committed is not None}

    # -- waiting -----------------------------------------------------------------------------------

    def now_ms(self) -> int:
        return self.clock() if self.clock is not None else monotonic_ms()

    def block_until(self, condition: Callable[[], bool], timeout_ms: int) -> bool:
        """Wait until ``condition()`` holds, at most ``timeout_ms``; whether it did.  On a MockClock the
        cluster and its members run meanwhile, 1 ms at a time (a blocking client call lets time pass);
        on the real clock the hub's thread moves the cluster and this sleeps."""
        if self.clock is None:
            deadline = monotonic_ms() + timeout_ms
            while not condition():
                if monotonic_ms() >= deadline:
                    return False
                time.sleep(0.002)
            return True
        if condition():
            return True  # answered at once: a query may run inside run()'s callbacks or conditions
        if self._driving or self.scheduler is None:
            raise TransactionStateError("a blocking call cannot run inside run()'s callbacks: "
                                        "call it between runs")
        start = self.clock()
        while not condition():
            if self.clock() - start >= timeout_ms:
                return False
            self.scheduler.run_for(1)
        return True


def _high_watermark(cluster: "ClusterStateMachine", topic: str, index: int) -> int:
    partition = cluster.partition(topic, index)
    return -1 if partition.leader is None else partition.logs[partition.leader].hw


def _consumed(topic: str, index: int, offset: int, payload: object) -> ConsumedRecord:
    if isinstance(payload, (TransactionalRecord, PlainRecord)):
        return ConsumedRecord(topic, index, offset, payload.key, payload.value)
    return ConsumedRecord(topic, index, offset, None, payload)  # e.g. the simulator's input strings


def _ask(kafka: InMemoryDataMixin, transport: "InProcessTransport", request: object, node: Optional[int],
         timeout_ms: int) -> object:
    correlation_id = transport.send(request, node)
    answers: Dict[int, object] = {}

    def answered() -> bool:
        answers.update((c.correlation_id, c.result) for c in transport.poll(0))
        return correlation_id in answers
    if not kafka.block_until(answered, timeout_ms):
        raise ClusterError(f"{type(request).__name__} not answered within {timeout_ms} ms",
                           ErrorCode.REQUEST_TIMED_OUT)
    return answers[correlation_id]
