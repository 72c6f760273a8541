"""Transactions on the in-memory cluster (issue 26): ``InMemoryKafka(transactions=True)`` hosts transaction
coordinators on ``__transaction_state`` beside the group coordinators, and ``transactional_producer`` is
Kafka's transactional producer (KIP-98) with KIP-447's group metadata.  The faults are the issue's: the
transaction coordinator's broker killed mid-commit, a producer stalled past its transaction timeout, a
zombie fenced by a new producer of the same ``transactional.id``, and a consumer-transform-produce member
killed mid-transaction."""
from __future__ import annotations

import time
from collections import Counter
from typing import Dict, List, Optional, Set

import pytest

from kgroup.core.cluster.transaction_hosting import TransactionHostingConfig
from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode as E
from kgroup.core.member.shared.events import (
    CommittedFetched, PartitionsAssigned, PartitionsLost, PartitionsRevoked,
)
from kgroup.core.transaction import TransactionCoordinatorConfig, TransactionState
from kgroup.errors import (
    ClusterError, CommitFailedError, ConfigError, FencedInstanceIdError, ProducerFencedError,
    ProducerTimeoutError, TransactionAbortableError, TransactionStateError,
)
from kgroup.testing import InMemoryKafka, MockClock
from kgroup.testing.transactional_producer import ConsumerGroupMetadata, ProducerState, murmur2
from kgroup.values import TopicPartition

#: How often the coordinators look for transactions past their timeout (Kafka's default is 10 s).
SWEEP_MS = 500


def _kafka(clock: Optional[MockClock] = None, brokers: int = 3) -> InMemoryKafka:
    return InMemoryKafka(brokers, offsets_partitions=3, clock=clock if clock is not None else MockClock(0),
                         transaction_config=TransactionHostingConfig(
                             transaction_state_partitions=3, coordinator=TransactionCoordinatorConfig(
                                 abort_timed_out_transaction_cleanup_interval_ms=SWEEP_MS)))


def _values(kafka: InMemoryKafka, topic: str, isolation_level: str = "read_committed") -> List[object]:
    return [r.value for r in kafka.read(topic, isolation_level=isolation_level)]


def _run_until_decided(kafka: InMemoryKafka, transactional_id: str, limit_ms: int = 5_000) -> int:
    decided = (TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)
    return kafka.run_until(lambda: kafka.transaction_state(transactional_id) in decided, limit_ms)


def _in_transaction(kafka: InMemoryKafka, transactional_id: str, records, **settings):
    """A new producer, initialized, with a transaction open holding ``records`` ((value, partition) of
    topic ``out``)."""
    producer = kafka.transactional_producer(transactional_id, **settings)
    producer.init_transactions()
    producer.begin_transaction()
    for value, partition in records:
        producer.send("out", value, partition=partition)
    return producer


def test_committed_records_are_read_committed_and_aborted_ones_only_read_uncommitted():
    kafka = _kafka()
    kafka.create_topic("out", 2)
    producer = _in_transaction(kafka, "tx-1", [("a", 0), ("b", 1)])
    kafka.run(200)
    # Open: the last stable offset holds read_committed back; read_uncommitted sees the records.
    assert _values(kafka, "out") == []
    assert sorted(_values(kafka, "out", "read_uncommitted")) == ["a", "b"]
    assert kafka.last_stable_offset("out", 0) == 0
    producer.commit_transaction()
    _run_until_decided(kafka, "tx-1")
    assert sorted(_values(kafka, "out")) == ["a", "b"]

    producer.begin_transaction()
    producer.send("out", "c", partition=0)
    producer.abort_transaction()
    _run_until_decided(kafka, "tx-1")
    assert kafka.transaction_state("tx-1") is TransactionState.COMPLETE_ABORT
    assert sorted(_values(kafka, "out")) == ["a", "b"]
    assert sorted(_values(kafka, "out", "read_uncommitted")) == ["a", "b", "c"]
    # Both markers are in partition 0's log, after "a" and after "c": the LSO is past them.
    assert kafka.last_stable_offset("out", 0) == 4


def test_keyed_records_go_where_kafkas_default_partitioner_puts_them():
    # Kafka's UtilsTest.testMurmur2 vectors.
    assert [murmur2(s.encode()) for s in ("21", "foobar", "a-little-bit-long-string", "abc")] == [
        -973932308, -790332482, -985981536, 479470107]
    kafka = _kafka()
    kafka.create_topic("keyed", 5)
    sent = kafka.produce("keyed", "v", key="foobar")
    assert sent.partition == (-790332482 & 0x7FFFFFFF) % 5
    assert [(r.partition, r.key, r.value) for r in kafka.read("keyed")] == [(sent.partition, "foobar", "v")]


def test_a_new_producer_with_the_same_transactional_id_fences_the_zombie():
    kafka = _kafka()
    kafka.create_topic("out", 1)
    zombie = _in_transaction(kafka, "tx-z", [("zombie", 0)])
    successor = kafka.transactional_producer("tx-z")
    # Kafka's TransactionCoordinator.handleInitProducerId: an Ongoing transaction is fenced (epoch + 1) and
    # aborted with that epoch, CONCURRENT_TRANSACTIONS answered meanwhile; the retry bumps once more.
    successor.init_transactions()
    assert successor.producer_id == zombie.producer_id
    assert successor.producer_epoch == zombie.producer_epoch + 2
    with pytest.raises(ProducerFencedError) as fenced:
        zombie.commit_transaction()
    assert fenced.value.error_code in (E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH)
    assert zombie.state is ProducerState.FATAL_ERROR
    with pytest.raises(ProducerFencedError):
        zombie.begin_transaction()  # a fenced producer can only be closed
    successor.begin_transaction()
    successor.send("out", "successor", partition=0)
    successor.commit_transaction()
    _run_until_decided(kafka, "tx-z")
    assert _values(kafka, "out") == ["successor"]
    assert _values(kafka, "out", "read_uncommitted") == ["zombie", "successor"]


def test_a_producer_stalled_past_its_transaction_timeout_is_aborted_and_its_late_commit_fenced():
    kafka = _kafka()
    kafka.create_topic("out", 2)
    stalled = _in_transaction(kafka, "tx-slow", [("late-0", 0), ("late-1", 1)], transaction_timeout_ms=1_000)
    began_ms = kafka.clock()
    # The coordinator's sweep runs every SWEEP_MS: the abort is due by timeout + one sweep (+ the writes).
    took_ms = kafka.run_until(
        lambda: kafka.transaction_state("tx-slow") is TransactionState.COMPLETE_ABORT, limit_ms=3_000)
    assert 1_000 <= kafka.clock() - began_ms <= 1_000 + SWEEP_MS + 500, took_ms
    with pytest.raises(ProducerFencedError):
        stalled.commit_transaction()
    kafka.run(500)
    assert _values(kafka, "out") == []
    assert sorted(_values(kafka, "out", "read_uncommitted")) == ["late-0", "late-1"]
    assert all(kafka.last_stable_offset("out", i) == 2 for i in range(2))  # record + abort marker


def test_a_send_after_the_timeout_abort_is_refused_by_the_partition_and_is_abortable():
    """KIP-588: the abort marker carries the bumped epoch, so the stalled producer's next append to that
    partition is INVALID_PRODUCER_EPOCH, an abortable error; its abort is then fenced."""
    kafka = _kafka()
    kafka.create_topic("out", 1)
    stalled = _in_transaction(kafka, "tx-slow", [("first", 0)], transaction_timeout_ms=1_000)
    _run_until_decided(kafka, "tx-slow")
    with pytest.raises(TransactionAbortableError) as refused:
        stalled.send("out", "second", partition=0)
    assert refused.value.error_code is E.INVALID_PRODUCER_EPOCH
    with pytest.raises(TransactionAbortableError):
        stalled.commit_transaction()
    with pytest.raises(ProducerFencedError):
        stalled.abort_transaction()
    assert _values(kafka, "out") == []


def test_killing_the_transaction_coordinators_broker_mid_commit_completes_the_whole_transaction():
    """EndTxn answered (PrepareCommit written), markers not all written: the coordinator's broker dies; the
    new leader of its __transaction_state partition loads PrepareCommit and writes the markers again."""
    kafka = _kafka()
    kafka.create_topic("out", 6)
    producer = _in_transaction(kafka, "tx-c", [(f"r{i}", i % 6) for i in range(12)])
    producer.commit_transaction()
    assert kafka.transaction_state("tx-c") is TransactionState.PREPARE_COMMIT  # mid-commit
    assert _values(kafka, "out") == [] or len(_values(kafka, "out")) < 12
    coordinator = kafka.transaction_coordinator_node("tx-c")
    assert coordinator is not None
    killed_ms = kafka.clock()
    kafka.kill_broker(coordinator)
    took_ms = kafka.run_until(lambda: len(_values(kafka, "out")) == 12, limit_ms=5_000)
    assert kafka.transaction_coordinator_node("tx-c") not in (None, coordinator)
    assert sorted(_values(kafka, "out")) == sorted(f"r{i}" for i in range(12))
    _run_until_decided(kafka, "tx-c")
    assert kafka.transaction_state("tx-c") is TransactionState.COMPLETE_COMMIT
    # The figure the report quotes: simulated ms from the kill to every record readable.
    print(f"mid-commit failover: all 12 records read_committed {took_ms} ms after the kill "
          f"(killed at {killed_ms} ms)")
    # The producer goes on with the new coordinator.
    producer.begin_transaction()
    producer.send("out", "after", partition=0)
    producer.commit_transaction()
    _run_until_decided(kafka, "tx-c")
    assert "after" in _values(kafka, "out")


def test_killing_the_coordinators_broker_while_end_txn_is_in_flight_commits_or_aborts_as_a_whole():
    """The records are acknowledged (flush); the broker dies at one of 20 instants 12 ms apart after
    EndTxn is sent: while it is in flight (PrepareCommit is replicated for 100 ms here), while the markers
    are written (the next 100 ms), or after: whatever the producer was told, the reader sees all of the
    transaction or none of it once it is decided, and all of it when the producer was told it committed."""
    outcomes = Counter()
    for delay_ms in range(0, 240, 12):
        kafka = _kafka()
        kafka.create_topic("out", 3)
        producer = _in_transaction(kafka, "tx-d", [(f"r{i}", i % 3) for i in range(6)], max_block_ms=10_000)
        producer.flush()
        coordinator = kafka.transaction_coordinator_node("tx-d")
        assert kafka.scheduler is not None
        kafka.scheduler.call_at(kafka.clock() + delay_ms, lambda now_ms: kafka.kill_broker(coordinator))
        try:
            producer.commit_transaction()
            told = "committed"
        except ProducerFencedError:
            told = "fenced"
        _run_until_decided(kafka, "tx-d", limit_ms=10_000)
        kafka.run(300)
        seen = _values(kafka, "out")
        assert len(seen) in (0, 6), (delay_ms, told, seen)
        if told == "committed":
            assert len(seen) == 6, (delay_ms, seen)
        outcomes[(told, len(seen))] += 1
    assert outcomes[("committed", 6)] > 0, outcomes
    print(f"coordinator killed during the commit, 20 instants: {dict(outcomes)}")


def test_offsets_sent_to_a_transaction_are_fetched_only_after_it_commits():
    kafka = _kafka()
    kafka.create_topic("in", 1)
    kafka.create_topic("out", 1)
    member = kafka.member("m", "g", ["in"])
    kafka.run_until(lambda: kafka.group_settled("g"))
    producer = _in_transaction(kafka, "tx-o", [("x", 0)])
    producer.send_offsets_to_transaction({TopicPartition("in", 0): 5}, member)
    in0 = [TopicPartition("in", 0)]
    assert kafka.committed_offsets("g") == {} and kafka.committed_offsets("g", in0) == {}
    with pytest.raises(ClusterError) as unstable:
        kafka.committed_offsets("g", in0, require_stable=True)  # KIP-447: the consumer waits for the decision
    assert unstable.value.error_code is E.UNSTABLE_OFFSET_COMMIT
    producer.commit_transaction()
    _run_until_decided(kafka, "tx-o")
    assert kafka.committed_offsets("g") == {in0[0]: 5}
    assert kafka.committed_offsets("g", in0, require_stable=True) == {in0[0]: 5}


@pytest.mark.parametrize("stale, code, error", [
    ("generation", E.ILLEGAL_GENERATION, CommitFailedError),
    ("member", E.UNKNOWN_MEMBER_ID, CommitFailedError),
    ("instance", E.FENCED_INSTANCE_ID, FencedInstanceIdError),
])
def test_a_zombie_members_offsets_are_refused_and_the_transaction_can_only_abort(stale, code, error):
    """KIP-447: TxnOffsetCommit carries the consumer's generation, member id and instance id; the group
    coordinator refuses a stale one (Kafka's producer raises CommitFailedException, or
    FencedInstanceIdException for a static member's old incarnation: abortable errors)."""
    kafka = _kafka()
    kafka.create_topic("in", 1)
    kafka.create_topic("out", 1)
    member = kafka.member("m", "g", ["in"], group_instance_id="instance-1")
    kafka.run_until(lambda: kafka.group_settled("g"))
    current = ConsumerGroupMetadata.of(member)
    assert current.generation_id >= 1 and current.member_id and current.group_instance_id == "instance-1"
    if stale == "generation":
        metadata = current._replace(generation_id=current.generation_id + 7)
    elif stale == "member":
        metadata = current._replace(member_id="gone-member", group_instance_id=None)
    else:
        metadata = current._replace(member_id="old-incarnation")  # same instance id, another member id
    producer = _in_transaction(kafka, "tx-k", [("x", 0)])
    with pytest.raises(error) as refused:
        producer.send_offsets_to_transaction({TopicPartition("in", 0): 1}, metadata)
    assert refused.value.error_code is code
    assert producer.state is ProducerState.ABORTABLE_ERROR
    with pytest.raises(TransactionAbortableError):
        producer.commit_transaction()
    producer.abort_transaction()
    _run_until_decided(kafka, "tx-k")
    assert _values(kafka, "out") == []
    assert kafka.committed_offsets("g") == {}
    # The current metadata is accepted.
    producer.begin_transaction()
    producer.send("out", "y", partition=0)
    producer.send_offsets_to_transaction({TopicPartition("in", 0): 1}, current)
    producer.commit_transaction()
    _run_until_decided(kafka, "tx-k")
    assert _values(kafka, "out") == ["y"]
    assert kafka.committed_offsets("g") == {TopicPartition("in", 0): 1}


def test_a_record_lost_with_its_leader_before_acks_makes_the_transaction_abortable():
    """A departure (docs/transactions.md): Kafka's idempotent producer would resend the record to the new
    leader; this producer reports it lost at the flush, and the transaction is aborted."""
    kafka = _kafka()
    kafka.create_topic("out", 1)
    producer = _in_transaction(kafka, "tx-l", [("lost", 0)])
    leader = kafka.cluster.partition("out", 0).leader
    assert leader is not None
    kafka.kill_broker(leader)  # at once: no follower has fetched the record
    with pytest.raises(TransactionAbortableError, match="lost in a leader change"):
        producer.commit_transaction()
    producer.abort_transaction()
    _run_until_decided(kafka, "tx-l")
    assert kafka.transaction_state("tx-l") is TransactionState.COMPLETE_ABORT
    assert _values(kafka, "out", "read_uncommitted") == []


def test_a_call_that_cannot_be_answered_times_out_after_max_block_ms():
    kafka = _kafka()
    for broker in (1, 2, 3):
        kafka.kill_broker(broker)
    producer = kafka.transactional_producer("tx-t", max_block_ms=1_000)
    start_ms = kafka.clock()
    with pytest.raises(ProducerTimeoutError):
        producer.init_transactions()
    assert 900 <= kafka.clock() - start_ms <= 1_000
    assert producer.state is ProducerState.UNINITIALIZED  # Kafka lets init_transactions be called again


def test_calls_out_of_order_and_bad_input_are_typed_errors():
    plain = InMemoryKafka(1, offsets_partitions=1, clock=MockClock(0))
    with pytest.raises(ConfigError):
        plain.transactional_producer("tx")
    kafka = _kafka()
    kafka.create_topic("out", 2)
    producer = kafka.transactional_producer("tx-s")
    with pytest.raises(TransactionStateError):
        producer.begin_transaction()  # before init_transactions
    producer.init_transactions()
    with pytest.raises(TransactionStateError):
        producer.send("out", "x")  # outside a transaction
    with pytest.raises(TransactionStateError):
        producer.commit_transaction()
    producer.begin_transaction()
    with pytest.raises(TransactionStateError):
        producer.begin_transaction()
    with pytest.raises(ConfigError):
        producer.send("nope", "x")
    with pytest.raises(ConfigError):
        producer.send("out", "x", partition=2)
    with pytest.raises(ConfigError):
        kafka.read("out", isolation_level="read_dirty")
    producer.abort_transaction()  # nothing was added: no EndTxn to send
    assert producer.state is ProducerState.READY
    with pytest.raises(ConfigError):
        kafka.transactional_producer("")
    with pytest.raises(ConfigError):
        kafka.enable_transactions()
    # A blocking call inside run()'s callbacks would drive the scheduler again.
    producer.begin_transaction()
    refused = []

    def send_from_a_callback(now_ms: int) -> None:
        try:
            producer.send("out", "x", partition=0)
        except TransactionStateError as error:
            refused.append(error)
    assert kafka.scheduler is not None
    kafka.scheduler.call_at(kafka.clock() + 1, send_from_a_callback)
    kafka.run(10)
    assert refused and "inside run()" in str(refused[0])


def test_transactions_on_the_real_clock():
    """The hub's thread moves the cluster; a threaded consumer's member gives the group metadata."""
    kafka = InMemoryKafka(3, offsets_partitions=1, coordinator_config=GroupCoordinatorConfig(
        group_min_session_timeout_ms=100, group_initial_rebalance_delay_ms=0),
        transaction_config=TransactionHostingConfig(transaction_state_partitions=1, load_time_ms=10))
    try:
        kafka.create_topic("in", 1)
        kafka.create_topic("out", 1)
        consumer = kafka.consumer("g", ["in"], session_timeout_ms=1_000, heartbeat_interval_ms=100)
        deadline = time.monotonic() + 20
        while not kafka.group_settled("g"):
            assert time.monotonic() < deadline, "the group did not settle"
            consumer.poll(20)
        producer = kafka.transactional_producer("tx-r", max_block_ms=10_000)
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("out", "real", partition=0)
        producer.send_offsets_to_transaction({TopicPartition("in", 0): 3}, consumer.member)
        producer.commit_transaction()
        assert kafka.block_until(lambda: _values(kafka, "out") == ["real"], 10_000)
        assert kafka.block_until(lambda: kafka.committed_offsets("g") == {TopicPartition("in", 0): 3}, 10_000)
        producer.close()
    finally:
        kafka.close()


# -- exactly-once consume-transform-produce --------------------------------------------------------

class _Worker:
    """One application: a kgroup member of the group and a transactional producer, reading its partitions
    from the committed offsets (read_committed) and writing one output per input in a transaction."""

    def __init__(self, kafka: InMemoryKafka, name: str) -> None:
        self.kafka = kafka
        self.name = name
        self.member = kafka.member(name, "eos", ["in"], session_timeout_ms=6_000, heartbeat_interval_ms=500)
        self.producer = kafka.transactional_producer(f"tx-{name}", transaction_timeout_ms=2_000)
        self.producer.init_transactions()
        self.positions: Dict[TopicPartition, int] = {}
        self.awaiting: Set[TopicPartition] = set()

    def on_events(self, events: list) -> None:
        now_ms = self.kafka.clock()
        for event in events:
            if isinstance(event, PartitionsAssigned):
                self.awaiting |= set(event.partitions)
                self.member.fetch_committed(sorted(event.partitions), now_ms)
            elif isinstance(event, (PartitionsRevoked, PartitionsLost)):
                for tp in event.partitions:
                    self.positions.pop(tp, None)
                    self.awaiting.discard(tp)
            elif isinstance(event, CommittedFetched):
                if event.error is not None:
                    self._refetch()
                    continue
                for tp, committed in event.offsets.items():
                    if tp in self.awaiting and tp in self.member.assignment:
                        self.awaiting.discard(tp)
                        self.positions[tp] = 0 if committed is None else committed.offset

    def _refetch(self) -> None:
        waiting = sorted(self.awaiting & set(self.member.assignment))
        if waiting and not self.member.closed:
            self.member.fetch_committed(waiting, self.kafka.clock())

    def batch(self, max_records: int = 2) -> Dict[TopicPartition, list]:
        out = {}
        for tp, position in sorted(self.positions.items()):
            records = self.kafka.read("in", tp.partition, start_offset=position)[:max_records]
            if records:
                out[tp] = records
        return out

    def process(self, batch: Dict[TopicPartition, list]) -> None:
        """The transaction of one batch, up to the offsets sent (the commit is the caller's)."""
        self.producer.begin_transaction()
        for records in batch.values():
            for record in records:
                self.producer.send("out", f"{record.value}>{self.name}", key=str(record.value))
        self.producer.send_offsets_to_transaction(
            {tp: records[-1].offset + 1 for tp, records in batch.items()}, self.member)

    def commit(self, batch: Dict[TopicPartition, list]) -> bool:
        try:
            self.producer.commit_transaction()
        except (CommitFailedError, TransactionAbortableError):
            self.producer.abort_transaction()
            for tp in batch:  # read again from what the group has committed
                if tp in self.positions:
                    del self.positions[tp]
                    self.awaiting.add(tp)
            self._refetch()
            return False
        for tp, records in batch.items():
            if tp in self.positions:
                self.positions[tp] = records[-1].offset + 1
        return True


def test_exactly_once_with_a_member_killed_mid_transaction():
    """Three members consume ``in`` and write ``out`` in transactions with their offsets (KIP-447); one is
    killed after sending its outputs and offsets, before committing.  Its partitions move on after its
    session expires; its open transaction blocks their committed offsets (UNSTABLE_OFFSET_COMMIT, the
    members fetch with require_stable) until the coordinator aborts it at its timeout; the new owner
    processes them again.  read_committed output: every input exactly once."""
    kafka = _kafka()
    inputs = 30
    kafka.create_topic("in", 3)
    kafka.create_topic("out", 3)
    for i in range(inputs):
        kafka.produce("in", f"v{i}", partition=i % 3)
    workers = {name: _Worker(kafka, name) for name in ("w0", "w1", "w2")}
    kafka.on_events = lambda name, events: workers[name].on_events(events) if name in workers else None
    kafka.run_until(lambda: kafka.group_settled("eos"), limit_ms=30_000)
    victim, killed_at_ms = "w1", None
    committed_transactions = 0
    deadline_ms = kafka.clock() + 60_000
    while len(_values(kafka, "out")) < inputs:
        assert kafka.clock() < deadline_ms, (_values(kafka, "out"),
                                             {n: w.positions for n, w in workers.items()})
        kafka.run(20)
        for name in sorted(workers):
            worker = workers.get(name)
            if worker is None:
                continue
            batch = worker.batch()
            if not batch:
                continue
            try:
                worker.process(batch)
            except (CommitFailedError, TransactionAbortableError):
                worker.commit(batch)  # aborts
                continue
            if name == victim and killed_at_ms is None and committed_transactions >= 3:
                kafka.crash_member(name)  # outputs and offsets sent, no commit: a zombie transaction
                del workers[name]
                killed_at_ms = kafka.clock()
                continue
            committed_transactions += worker.commit(batch)
    assert killed_at_ms is not None
    outputs = [str(value).split(">")[0] for value in _values(kafka, "out")]
    assert Counter(outputs) == Counter(f"v{i}" for i in range(inputs))  # every input exactly once
    # The victim's records are in the log, aborted: the fault mattered.
    uncommitted = [str(v) for v in _values(kafka, "out", "read_uncommitted")]
    assert any(v.endswith(f">{victim}") for v in uncommitted if v not in _values(kafka, "out"))
    assert kafka.transaction_state(f"tx-{victim}") is TransactionState.COMPLETE_ABORT
    assert kafka.committed_offsets("eos") == {TopicPartition("in", i): inputs // 3 for i in range(3)}
    print(f"exactly-once: {inputs} inputs, {len(uncommitted)} outputs written, "
          f"{len(outputs)} read_committed; "
          f"victim killed at {killed_at_ms} ms, done at {kafka.clock()} ms")
