"""The exactly-once mode's part of a simulation (``SimConfig(processing="transactional")``).

:class:`ExactlyOnceHosting` is what the simulation holds in this mode (None otherwise): the transactional
data of the sim's partitions, the transaction coordinators on ``__transaction_state`` beside the group
coordinators (as the wire server hosts them, kgroup/server/transactions.py), the output topic and its
read_committed reader, each application's transactional producer, and the observation of transaction
coordinator failovers.  The pieces themselves are in :mod:`kgroup.sim.eos` and, shared with
``InMemoryKafka(transactions=True)``, :mod:`kgroup.testing.in_memory_transactions`.
"""
from __future__ import annotations

from typing import Callable, Dict, Iterable, List

from kgroup.core.cluster.transaction_hosting import TransactionHostingConfig
from kgroup.core.transaction import TransactionCoordinatorConfig, TransactionState
from kgroup.io.clock import MockClock
from kgroup.io.transport import NodeId
from kgroup.sim.app import ConsumerApp
from kgroup.sim.eos import OutputReader, TransactionalProducer
from kgroup.sim.history import History, TxnCoordinatorMoved
from kgroup.sim.network import SimNetwork
from kgroup.testing.in_memory_kafka import InMemoryKafka
from kgroup.testing.scheduler import EventScheduler
from kgroup.values import TopicPartition

__all__ = ["OUTPUT_TOPIC", "TXN_TIMEOUT_SWEEP_MS", "ExactlyOnceHosting"]

#: Where the applications write one output record per input record.
OUTPUT_TOPIC = "results"
#: How long the sim's transaction coordinators wait between two sweeps for transactions past their
#: timeout (Kafka's 10 s default is longer than a campaign run's faults).
TXN_TIMEOUT_SWEEP_MS = 1_000
#: Transaction states with nothing left to write.
_DECIDED = (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT,
            TransactionState.DEAD)


class ExactlyOnceHosting:
    """Transaction coordinators, transactional data, the output's reader and the applications' producers
    of one simulation (built when the simulation is, before any application starts)."""

    def __init__(self, kafka: InMemoryKafka, network: SimNetwork, scheduler: EventScheduler, clock: MockClock,
                 history: History, group_id: str, output_partitions: int, transaction_timeout_ms: int,
                 committed_offsets: Callable[[], Dict[TopicPartition, int]],
                 reachable: Callable[[str, int], bool], broker_of: Callable[[NodeId], int]) -> None:
        self.kafka = kafka
        self.network = network
        self.clock = clock
        self.history = history
        self.group_id = group_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.reachable = reachable
        self.broker_of = broker_of
        kafka.create_topic(OUTPUT_TOPIC, output_partitions)
        self.data = kafka.data
        self.transactions = kafka.enable_transactions(TransactionHostingConfig(
            transaction_state_partitions=3, load_time_ms=100, coordinator=TransactionCoordinatorConfig(
                abort_timed_out_transaction_cleanup_interval_ms=TXN_TIMEOUT_SWEEP_MS)))
        self.reader = OutputReader(self.data, OUTPUT_TOPIC, history, committed_offsets)
        scheduler.add_timers(self.reader)
        #: Producers made so far per member name (each labels its transactions with its incarnation).
        self.incarnations: Dict[str, int] = {}
        self._failovers_seen = 0
        #: A planted bug for the checker's tests: applications commit offsets outside their transactions.
        self.offsets_outside_transaction = False

    @staticmethod
    def transactional_id_of(name: str) -> str:
        """The same across the application's restarts: its new producer fences the old one."""
        return f"tx-{name}"

    def transactional_producer(self, name: str) -> TransactionalProducer:
        """A new process's producer for member ``name``."""
        incarnation = self.incarnations[name] = self.incarnations.get(name, 0) + 1
        # The producer's connections share its process's network: the member's links and faults.
        transport = self.network.transport(f"{name}.producer", self.kafka.transport(f"{name}-producer"),
                                           self.clock, self.broker_of)
        transport.member = name
        return TransactionalProducer(
            name, self.transactional_id_of(name), self.group_id, OUTPUT_TOPIC, transport, self.data,
            self.history, f"{name}.{incarnation}", self.reachable,
            transaction_timeout_ms=self.transaction_timeout_ms,
            offsets_outside_transaction=self.offsets_outside_transaction)

    def member_slots(self) -> List[str]:
        """Every member name that has had a producer (its transactional id may hold a transaction)."""
        return sorted(self.incarnations)

    def observe_failovers(self) -> None:
        """Record each move of a transaction coordinator that one of the applications' ids lives on."""
        failovers = self.transactions.failovers
        if len(failovers) > self._failovers_seen:
            slots = {self.transactions.partition_for(self.transactional_id_of(name))
                     for name in self.member_slots()}
            for old, new, slot, at_ms in failovers[self._failovers_seen:]:
                if slot in slots and old is not None:
                    self.history.record(TxnCoordinatorMoved(at_ms, old, new))
            self._failovers_seen = len(failovers)

    def transactions_decided(self, apps: Iterable[ConsumerApp]) -> bool:
        """No application is in a transaction and its coordinator has none open or being completed."""
        if any(app.producer is not None and app.producer.busy for app in apps):
            return False
        for name in self.member_slots():
            transactional_id = self.transactional_id_of(name)
            coordinator = self.transactions.coordinator_for(transactional_id)
            if coordinator is None:
                return False
            metadata = coordinator.transaction(transactional_id)
            if metadata is not None and metadata.state not in _DECIDED:
                return False
        return True
