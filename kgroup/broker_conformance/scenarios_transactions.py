"""Transactions (KIP-98, KIP-447, KIP-360, KIP-890 part 1) as raw requests: FindCoordinator for a
transactional id, InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn,
DescribeTransactions, ListTransactions, OffsetFetch ``require_stable``, and transactional Produce with
read_committed Fetch / ListOffsets.

Every request is at most the version a transactions-V1 client sends (EndTxn v4, Produce v9,
AddPartitionsToTxn v4), so Kafka 4.4 answers with its V1 rules (KIP-890 part 2's epoch bump per
transaction needs EndTxn v5).  A transaction's end is asynchronous (the markers follow the EndTxn
answer): before looking at what it changed, the scripts wait (not recorded) until DescribeTransactions
says CompleteCommit / CompleteAbort.

Kafka sources: ``TransactionCoordinator`` (``TransactionCoordinatorTest``), ``TransactionStateManager``,
``KafkaApis.handleAddPartitionsToTxnRequest`` / ``handleTxnOffsetCommitRequest``,
``OffsetMetadataManager.commitTransactionalOffset`` and ``fetchOffsets`` (``requireStable``),
``ProducerStateManager``, ``UnifiedLog`` (last stable offset, aborted transactions).
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from kgroup.broker_conformance import builders
from kgroup.broker_conformance.members import ClassicMember, stable_group
from kgroup.broker_conformance.scenario import ScenarioContext, scenario

NONE = 0
#: InitProducerId (v4), AddPartitionsToTxn (v3), EndTxn (v3), TxnOffsetCommit (v3): the versions a
#: V1 transactional client of Kafka 3.x sends.
INIT_VERSION = 4
ADD_VERSION = 3
END_VERSION = 3
TXN_COMMIT_VERSION = 3


class TxnProducer:
    """A transactional producer scripted request by request on one connection to its coordinator."""

    def __init__(self, ctx: ScenarioContext, suffix: str = "tx", name: str = "P",
                 timeout_ms: int = 60_000) -> None:
        self.ctx = ctx
        self.name = name
        self.transactional_id = ctx.name(suffix)
        self.timeout_ms = timeout_ms
        self.connection = ctx.connect(ctx.transaction_coordinator(self.transactional_id), client_id=name)
        self.producer_id = -1
        self.producer_epoch = -1
        self.sequence = 0

    def init(self, version: int = INIT_VERSION, label: str = "", **fields: Any) -> Any:
        options = dict(transaction_timeout_ms=self.timeout_ms)
        options.update(fields)
        answer = self.ctx.call(self.connection, builders.init_producer_id(version, self.transactional_id,
                                                                          **options),
                               label or f"{self.name} InitProducerId v{version}")
        if answer is not None and answer.error_code == NONE:
            self.producer_id, self.producer_epoch = answer.producer_id, answer.producer_epoch
            self.sequence = 0
        return answer

    def add_partitions(self, partitions: Mapping[str, Iterable[int]], version: int = ADD_VERSION,
                       label: str = "", epoch: Optional[int] = None,
                       producer_id: Optional[int] = None) -> Any:
        request = builders.add_partitions_to_txn(
            version, self.transactional_id, self.producer_id if producer_id is None else producer_id,
            self.producer_epoch if epoch is None else epoch, partitions)
        return self.ctx.call(self.connection, request, label or f"{self.name} AddPartitionsToTxn v{version}")

    def add_offsets(self, group_id: str, version: int = 3, label: str = "",
                    epoch: Optional[int] = None) -> Any:
        request = builders.add_offsets_to_txn(version, self.transactional_id, self.producer_id,
                                              self.producer_epoch if epoch is None else epoch, group_id)
        return self.ctx.call(self.connection, request, label or f"{self.name} AddOffsetsToTxn v{version}")

    def commit_offsets(self, connection: Any, group_id: str, offsets: Mapping[str, Mapping[int, int]],
                       version: int = TXN_COMMIT_VERSION, label: str = "", **member: Any) -> Any:
        request = builders.txn_offset_commit(version, self.transactional_id, group_id, self.producer_id,
                                             self.producer_epoch, offsets, **member)
        return self.ctx.call(connection, request, label or f"{self.name} TxnOffsetCommit v{version}")

    def produce(self, topic: str, count: int = 3, partition: int = 0, label: str = "") -> Any:
        batch = builders.record_batch(count, 1_000, producer_id=self.producer_id,
                                      producer_epoch=self.producer_epoch, base_sequence=self.sequence,
                                      transactional=True)
        answer = self.ctx.call(self.ctx.connect(), builders.produce(9, topic, {partition: batch},
                                                                    transactional_id=self.transactional_id),
                               label or f"{self.name} Produce v9 transactional")
        self.sequence += count
        return answer

    def end(self, committed: bool, version: int = END_VERSION, label: str = "",
            epoch: Optional[int] = None) -> Any:
        request = builders.end_txn(version, self.transactional_id, self.producer_id,
                                   self.producer_epoch if epoch is None else epoch, committed)
        outcome = "commit" if committed else "abort"
        return self.ctx.call(self.connection, request, label or f"{self.name} EndTxn v{version} {outcome}")

    def describe(self, label: str = "", view: Any = None) -> Any:
        return self.ctx.call(self.connection, builders.describe_transactions(self.transactional_id),
                             label or f"{self.name} DescribeTransactions v0", view)

    def state(self) -> str:
        """The transaction's state now (not recorded)."""
        answer = self.connection.request(builders.describe_transactions(self.transactional_id))
        return str(answer.transaction_states[0].transaction_state)

    def wait_state(self, *states: str) -> None:
        """Wait (not recorded) until the coordinator says the transaction is in one of ``states``."""
        self.ctx.wait_until(lambda: self.state() in states,
                            f"transaction {self.transactional_id} in {'/'.join(states)}", bound_s=15.0)


def _producer_ids_ready(ctx: ScenarioContext) -> None:
    """InitProducerId without a transactional id until the broker hands out ids (Kafka answers
    COORDINATOR_LOAD_IN_PROGRESS while its producer-id block is on the way); not recorded."""
    connection = ctx.connect()
    ctx.wait_until(lambda: connection.request(builders.init_producer_id(4)).error_code not in (14, 15, 16),
                   "producer ids", every_s=0.1)


def _producer(ctx: ScenarioContext, suffix: str = "tx", name: str = "P", **options: Any) -> TxnProducer:
    _producer_ids_ready(ctx)
    return TxnProducer(ctx, suffix, name, **options)


def _topic(ctx: ScenarioContext, partitions: int = 1) -> str:
    topic = ctx.name("t")
    ctx.create_topic(topic, partitions)
    return topic


# -- FindCoordinator and InitProducerId ------------------------------------------------------------


def _find_coordinator(version: int) -> None:
    @scenario(f"txn.find-coordinator.v{version}", "transactions",
              f"FindCoordinator v{version} with key type 1 (TRANSACTION) for a transactional id: NONE and a "
              "node (KafkaApis.handleFindCoordinatorRequest, TransactionStateManager.partitionFor)")
    def run(ctx: ScenarioContext) -> None:
        ctx.transaction_coordinator(ctx.name("tx"))
        ctx.call(ctx.connect(), builders.find_coordinator(version, ctx.name("tx"), key_type=1))


for _v in (1, 3, 4):
    _find_coordinator(_v)


def _init_first(version: int) -> None:
    @scenario(f"txn.init.first.v{version}", "transactions",
              f"InitProducerId v{version} for a new transactional id: NONE, a producer id, epoch 0; the "
              "transaction is Empty "
              "(TransactionCoordinatorTest.shouldInitPidWithEpochZeroForNewTransactionalId)")
    def run(ctx: ScenarioContext) -> None:
        producer = _producer(ctx)
        producer.init(version)
        producer.describe()


for _v in (0, 3, 4, 5):
    _init_first(_v)


@scenario("txn.init.again-bumps-epoch", "transactions",
          "InitProducerId twice for one transactional id: the same producer id, epoch 0 then 1 "
          "(TransactionCoordinator.prepareInitProducerIdTransit)")
def _init_again(ctx: ScenarioContext) -> None:
    producer = _producer(ctx)
    producer.init()
    producer.init(label="P InitProducerId v4 again")
    producer.describe()


@scenario("txn.init.invalid-timeout", "transactions",
          "InitProducerId with transaction timeout 0 and 900,001 ms (above transaction.max.timeout.ms): "
          "INVALID_TRANSACTION_TIMEOUT, and nothing is stored (TransactionCoordinator.handleInitProducerId)")
def _init_timeout(ctx: ScenarioContext) -> None:
    producer = _producer(ctx)
    producer.init(label="P InitProducerId v4 timeout 0", transaction_timeout_ms=0)
    producer.init(label="P InitProducerId v4 timeout 900001", transaction_timeout_ms=900_001)
    producer.describe()


def _init_fenced(version: int) -> None:
    @scenario(f"txn.init.old-epoch.v{version}", "transactions",
              f"InitProducerId v{version} (KIP-360) with the producer id and an epoch two bumps old: "
              "PRODUCER_FENCED from v4, INVALID_PRODUCER_EPOCH before (TransactionCoordinator)")
    def run(ctx: ScenarioContext) -> None:
        producer = _producer(ctx)
        for attempt in ("", " again", " third"):
            producer.init(label=f"P InitProducerId v4{attempt}")
        producer.init(version, label=f"P InitProducerId v{version} old epoch",
                      producer_id=producer.producer_id, producer_epoch=0)
        producer.init(version, label=f"P InitProducerId v{version} current epoch",
                      producer_id=producer.producer_id, producer_epoch=producer.producer_epoch)


for _v in (3, 4):
    _init_fenced(_v)


@scenario("txn.init.over-open-transaction", "transactions",
          "InitProducerId while the id's transaction is open: CONCURRENT_TRANSACTIONS (the old epoch is "
          "fenced and its transaction aborted), then, once CompleteAbort, a higher epoch; the zombie's "
          "AddPartitionsToTxn with its old epoch: PRODUCER_FENCED (TransactionCoordinatorTest."
          "shouldAbortTransactionOnHandleInitPidWhenExistingTransactionInOngoingState)")
def _init_over_open(ctx: ScenarioContext) -> None:
    topic = _topic(ctx)
    zombie = _producer(ctx)
    zombie.init()
    zombie.add_partitions({topic: [0]})
    fresh = TxnProducer(ctx, "tx", "Q")
    fresh.init()
    zombie.wait_state("CompleteAbort")
    fresh.init(label="Q InitProducerId v4 retry")
    fresh.describe()
    zombie.add_partitions({topic: [0]}, label="P AddPartitionsToTxn v3 as a zombie")
    zombie.end(True, label="P EndTxn v3 commit as a zombie")


# -- AddPartitionsToTxn and AddOffsetsToTxn ---------------------------------------------------------


def _add_known(version: int) -> None:
    @scenario(f"txn.add-partitions.v{version}", "transactions",
              f"AddPartitionsToTxn v{version} of two partitions of a topic: NONE each; the transaction is "
              "Ongoing with them (TransactionCoordinator.handleAddPartitionsToTransaction)")
    def run(ctx: ScenarioContext) -> None:
        topic = _topic(ctx, 2)
        producer = _producer(ctx)
        producer.init()
        producer.add_partitions({topic: [0, 1]}, version)
        producer.add_partitions({topic: [0]}, version, label=f"P AddPartitionsToTxn v{version} again")
        producer.describe()


for _v in (0, 3):
    _add_known(_v)


@scenario("txn.add-partitions.unknown-partition", "transactions",
          "AddPartitionsToTxn of partition 0 and of partition 5 of a 1-partition topic: "
          "UNKNOWN_TOPIC_OR_PARTITION for 5, OPERATION_NOT_ATTEMPTED for 0; nothing added "
          "(KafkaApis.handleAddPartitionsToTxnRequest)")
def _add_unknown_partition(ctx: ScenarioContext) -> None:
    topic = _topic(ctx)
    producer = _producer(ctx)
    producer.init()
    producer.add_partitions({topic: [0, 5]})
    producer.describe()


@scenario("txn.add-partitions.unknown-topic", "transactions",
          "AddPartitionsToTxn of a topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION")
def _add_unknown_topic(ctx: ScenarioContext) -> None:
    producer = _producer(ctx)
    producer.init()
    producer.add_partitions({ctx.name("missing"): [0]})


def _add_wrong_epoch(version: int) -> None:
    @scenario(f"txn.add-partitions.wrong-epoch.v{version}", "transactions",
              f"AddPartitionsToTxn v{version} with an epoch other than the producer's: PRODUCER_FENCED from "
              "v2, INVALID_PRODUCER_EPOCH before (AddPartitionsToTxnRequest.getErrorResponse)")
    def run(ctx: ScenarioContext) -> None:
        topic = _topic(ctx)
        producer = _producer(ctx)
        producer.init()
        producer.init(label="P InitProducerId v4 again")
        producer.add_partitions({topic: [0]}, version, label=f"P AddPartitionsToTxn v{version} old epoch",
                                epoch=producer.producer_epoch - 1)


for _v in (1, 3):
    _add_wrong_epoch(_v)


@scenario("txn.add-partitions.unknown-producer-id", "transactions",
          "AddPartitionsToTxn with a producer id the transactional id does not have, and for an id never "
          "initialised: INVALID_PRODUCER_ID_MAPPING")
def _add_unknown_pid(ctx: ScenarioContext) -> None:
    topic = _topic(ctx)
    producer = _producer(ctx)
    producer.init()
    producer.add_partitions({topic: [0]}, label="P AddPartitionsToTxn v3 other producer id",
                            producer_id=producer.producer_id + 1_000)
    stranger = TxnProducer(ctx, "tx2", "Q")
    stranger.add_partitions({topic: [0]}, label="Q AddPartitionsToTxn v3 never initialised", producer_id=1,
                            epoch=0)


@scenario("txn.add-partitions.v4-batched", "transactions",
          "AddPartitionsToTxn v4 (KIP-890) adding for two transactional ids in one request, then "
          "verify_only for an added and a missing partition")
def _add_batched(ctx: ScenarioContext) -> None:
    topic = _topic(ctx, 2)
    first = _producer(ctx, "tx1", "P")
    second = TxnProducer(ctx, "tx2", "Q")
    first.init()
    second.init()
    ctx.call(first.connection, builders.add_partitions_batch(4, [
        (first.transactional_id, first.producer_id, first.producer_epoch, False, {topic: [0]}),
        (second.transactional_id, second.producer_id, second.producer_epoch, False, {topic: [1]})]),
        "AddPartitionsToTxn v4 two transactions")
    ctx.call(first.connection, builders.add_partitions_batch(4, [
        (first.transactional_id, first.producer_id, first.producer_epoch, True, {topic: [0, 1]})]),
        "AddPartitionsToTxn v4 verify only")
    first.describe()
    second.describe("Q DescribeTransactions v0")


@scenario("txn.add-offsets", "transactions",
          "AddOffsetsToTxn v3 for a group: NONE; the transaction is Ongoing with the group's "
          "__consumer_offsets partition (TransactionCoordinator, GroupCoordinator.partitionFor)")
def _add_offsets(ctx: ScenarioContext) -> None:
    ctx.coordinator(ctx.name("g"))
    producer = _producer(ctx)
    producer.init()
    producer.add_offsets(ctx.name("g"))
    producer.describe(view=_offsets_partition_view(ctx.name("g")))


def _offsets_partition_view(group_id: str) -> Any:
    """The group's __consumer_offsets partition depends on the run's random group name: compared as
    whether it is Kafka's ``partitionFor(group)`` (abs(hashCode) % offsets.topic.num.partitions)."""
    from kgroup.broker_conformance.runner import SETTINGS
    from kgroup.core.cluster.offsets_topic import partition_for_group

    expected = partition_for_group(group_id, int(SETTINGS["offsets.topic.num.partitions"]))

    def view(value: Any) -> Any:
        for state in value["transaction_states"]:
            for topic in state["topics"]:
                if topic["topic"] == "__consumer_offsets":
                    topic["partitions"] = ["partitionFor(group)" if p == expected else p
                                           for p in topic["partitions"]]
        return value
    return view


@scenario("txn.add-offsets.wrong-epoch", "transactions",
          "AddOffsetsToTxn v3 with an old epoch: PRODUCER_FENCED; v1: INVALID_PRODUCER_EPOCH")
def _add_offsets_epoch(ctx: ScenarioContext) -> None:
    ctx.coordinator(ctx.name("g"))
    producer = _producer(ctx)
    producer.init()
    producer.init(label="P InitProducerId v4 again")
    producer.add_offsets(ctx.name("g"), label="P AddOffsetsToTxn v3 old epoch", epoch=0)
    producer.add_offsets(ctx.name("g"), 1, label="P AddOffsetsToTxn v1 old epoch", epoch=0)


# -- TxnOffsetCommit (KIP-447) ----------------------------------------------------------------------


def _member_and_producer(ctx: ScenarioContext) -> Any:
    topic = _topic(ctx)
    member = stable_group(ctx, ctx.name("g"), ("A",), topic=topic)[0]
    producer = _producer(ctx)
    producer.init()
    producer.add_offsets(ctx.name("g"))
    return topic, member, producer


@scenario("txn.offset-commit.member", "transactions",
          "TxnOffsetCommit v3 by a classic group's member with its generation and member id: NONE "
          "(OffsetMetadataManager.commitTransactionalOffset, KIP-447)")
def _txn_commit_member(ctx: ScenarioContext) -> None:
    topic, member, producer = _member_and_producer(ctx)
    producer.commit_offsets(member.connection, ctx.name("g"), {topic: {0: 5}},
                            generation_id=member.generation_id, member_id=member.member_id)


@scenario("txn.offset-commit.old-generation", "transactions",
          "TxnOffsetCommit v3 with the generation before the group's current one: ILLEGAL_GENERATION "
          "(KIP-447 fences a zombie)")
def _txn_commit_old_generation(ctx: ScenarioContext) -> None:
    topic, member, producer = _member_and_producer(ctx)
    old_generation = member.generation_id
    member.join()
    member.sync({member.member_id: builders.assignment(topic, 0)})
    producer.commit_offsets(member.connection, ctx.name("g"), {topic: {0: 5}}, generation_id=old_generation,
                            member_id=member.member_id)


@scenario("txn.offset-commit.unknown-member", "transactions",
          "TxnOffsetCommit v3 with a member id the group does not have: UNKNOWN_MEMBER_ID")
def _txn_commit_unknown_member(ctx: ScenarioContext) -> None:
    topic, member, producer = _member_and_producer(ctx)
    producer.commit_offsets(member.connection, ctx.name("g"), {topic: {0: 5}},
                            generation_id=member.generation_id, member_id="not-a-member")


@scenario("txn.offset-commit.fenced-instance", "transactions",
          "TxnOffsetCommit v3 with a static member's id and another instance id: FENCED_INSTANCE_ID")
def _txn_commit_fenced_instance(ctx: ScenarioContext) -> None:
    topic = _topic(ctx)
    member = ClassicMember(ctx, ctx.name("g"), "A", instance_id=ctx.name("i1"), topics=(topic,))
    member.join()
    member.sync({member.member_id: builders.assignment(topic, 0)})
    producer = _producer(ctx)
    producer.init()
    producer.add_offsets(ctx.name("g"))
    producer.commit_offsets(member.connection, ctx.name("g"), {topic: {0: 5}},
                            generation_id=member.generation_id, member_id=member.member_id,
                            instance_id=ctx.name("i2"))


@scenario("txn.offset-commit.v0-no-member", "transactions",
          "TxnOffsetCommit v0 (no generation or member) to a group without members: NONE")
def _txn_commit_v0(ctx: ScenarioContext) -> None:
    topic = _topic(ctx)
    connection = ctx.group_connection(ctx.name("g"))
    producer = _producer(ctx)
    producer.init()
    producer.add_offsets(ctx.name("g"))
    producer.commit_offsets(connection, ctx.name("g"), {topic: {0: 5}}, version=0)


def _fetch_offsets(ctx: ScenarioContext, connection: Any, topic: str, label: str, stable: bool = True) -> Any:
    return ctx.call(connection, builders.offset_fetch(7, ctx.name("g"), {topic: [0]}, require_stable=stable),
                    label)


def _offset_stable(connection: Any, group_id: str, topic: str) -> bool:
    answer = connection.request(builders.offset_fetch(7, group_id, {topic: [0]}, require_stable=True))
    return bool(answer.error_code == NONE and answer.topics[0].partitions[0].error_code == NONE)


def _pending_then(committed: bool) -> None:
    outcome = "commit" if committed else "abort"

    @scenario(f"txn.offset-fetch.require-stable.{outcome}", "transactions",
              "OffsetFetch v7 while a transactional offset is pending: UNSTABLE_OFFSET_COMMIT with "
              "require_stable, the last committed offset without it; after EndTxn "
              f"{outcome} the {'new' if committed else 'old'} offset (OffsetMetadataManager.fetchOffsets, "
              "KIP-447)")
    def run(ctx: ScenarioContext) -> None:
        topic, member, producer = _member_and_producer(ctx)
        member.commit({topic: {0: 2}})
        producer.commit_offsets(member.connection, ctx.name("g"), {topic: {0: 5}},
                                generation_id=member.generation_id, member_id=member.member_id)
        _fetch_offsets(ctx, member.connection, topic, "OffsetFetch v7 require_stable, pending")
        _fetch_offsets(ctx, member.connection, topic, "OffsetFetch v7, pending", stable=False)
        producer.end(committed)
        producer.wait_state("CompleteCommit" if committed else "CompleteAbort")
        ctx.wait_until(lambda: _offset_stable(member.connection, ctx.name("g"), topic), "the offset stable",
                       bound_s=15.0)
        _fetch_offsets(ctx, member.connection, topic, f"OffsetFetch v7 require_stable, after {outcome}")


for _committed in (True, False):
    _pending_then(_committed)


# -- EndTxn ------------------------------------------------------------------------------------------


def _end_and_retry(committed: bool) -> None:
    outcome, other = ("commit", "abort") if committed else ("abort", "commit")
    final = "CompleteCommit" if committed else "CompleteAbort"

    @scenario(f"txn.end.{outcome}", "transactions",
              f"EndTxn v3 {outcome} of a transaction with a produced batch: NONE; once {final}, the same "
              f"EndTxn again (a retry): NONE; EndTxn {other}: INVALID_TXN_STATE "
              "(TransactionCoordinator.endTransaction)")
    def run(ctx: ScenarioContext) -> None:
        topic = _topic(ctx)
        producer = _producer(ctx)
        producer.init()
        producer.add_partitions({topic: [0]})
        producer.produce(topic)
        producer.describe("P DescribeTransactions v0 ongoing")
        producer.end(committed)
        producer.wait_state(final)
        producer.end(committed, label=f"P EndTxn v3 {outcome} retried")
        producer.end(not committed, label=f"P EndTxn v3 {other} after {outcome}")
        producer.describe()


for _committed in (True, False):
    _end_and_retry(_committed)


@scenario("txn.end.empty", "transactions",
          "EndTxn v3 commit and abort with no partition added (the transaction is Empty): INVALID_TXN_STATE")
def _end_empty(ctx: ScenarioContext) -> None:
    producer = _producer(ctx)
    producer.init()
    producer.end(True)
    producer.end(False)
    producer.describe()


@scenario("txn.end.wrong-epoch", "transactions",
          "EndTxn v3 with an old epoch: PRODUCER_FENCED; v1: INVALID_PRODUCER_EPOCH; the transaction stays "
          "Ongoing")
def _end_epoch(ctx: ScenarioContext) -> None:
    topic = _topic(ctx)
    producer = _producer(ctx)
    producer.init()
    producer.init(label="P InitProducerId v4 again")
    producer.add_partitions({topic: [0]})
    producer.end(True, label="P EndTxn v3 commit old epoch", epoch=0)
    producer.end(True, 1, label="P EndTxn v1 commit old epoch", epoch=0)
    producer.describe()


@scenario("txn.end.unknown-id", "transactions",
          "EndTxn v3 for a transactional id never initialised: INVALID_PRODUCER_ID_MAPPING")
def _end_unknown(ctx: ScenarioContext) -> None:
    _producer_ids_ready(ctx)
    producer = TxnProducer(ctx)
    producer.producer_id, producer.producer_epoch = 1, 0
    producer.end(True)


# -- DescribeTransactions / ListTransactions ----------------------------------------------------------


@scenario("txn.describe.unknown", "transactions",
          "DescribeTransactions of a transactional id never initialised: TRANSACTIONAL_ID_NOT_FOUND")
def _describe_unknown(ctx: ScenarioContext) -> None:
    TxnProducer(ctx).describe()


def _run_transactions(value: Any) -> Any:
    """ListTransactions lists every transaction of the broker: only this run's are compared."""
    return {"error_code": value["error_code"], "unknown_state_filters": value["unknown_state_filters"],
            "transaction_states": [t for t in value["transaction_states"] if "RUN" in t["transactional_id"]]}


def _list_transactions(version: int) -> None:
    @scenario(f"txn.list.v{version}", "transactions",
              f"ListTransactions v{version} with one Ongoing and one Empty transaction: unfiltered, by state "
              "Ongoing, by an unknown state (unknown_state_filters), by producer id "
              "(TransactionStateManager.listTransactionStates)")
    def run(ctx: ScenarioContext) -> None:
        topic = _topic(ctx)
        ongoing = _producer(ctx, "tx1", "P")
        empty = TxnProducer(ctx, "tx2", "Q")
        ongoing.init()
        empty.init()
        ongoing.add_partitions({topic: [0]})
        connection = ongoing.connection
        for label, request in (
                ("unfiltered", builders.list_transactions(version)),
                ("Ongoing", builders.list_transactions(version, states=["Ongoing"])),
                ("Empty and Bogus", builders.list_transactions(version, states=["Empty", "Bogus"])),
                ("P's producer id", builders.list_transactions(version, producer_ids=[ongoing.producer_id]))):
            ctx.call(connection, request, f"ListTransactions v{version} {label}", view=_run_transactions)
        if version >= 1:
            ctx.call(connection, builders.list_transactions(version, duration_ms=3_600_000),
                     f"ListTransactions v{version} older than an hour", view=_run_transactions)


for _v in (0, 1):
    _list_transactions(_v)


# -- Produce, Fetch read_committed, ListOffsets ---------------------------------------------------------


def _fetch_view(value: Any) -> Any:
    return [[t["topic"], [{k: p[k] for k in ("partition_index", "error_code", "high_watermark",
                                             "last_stable_offset", "aborted_transactions", "records")}
                          for p in t["partitions"]]] for t in value["responses"]]


def _fetch(ctx: ScenarioContext, topic: str, committed: bool, label: str) -> Any:
    isolation = 1 if committed else 0
    return ctx.call(ctx.connect(), builders.fetch(12, topic, {0: 0}, isolation_level=isolation),
                    f"{label} Fetch v12 {'read_committed' if committed else 'read_uncommitted'}",
                    view=_fetch_view)


def _latest(ctx: ScenarioContext, topic: str, committed: bool, label: str, partition: int = 0) -> Any:
    isolation = 1 if committed else 0
    request = builders.list_offsets(7, topic, {partition: -1}, isolation_level=isolation)
    return ctx.call(ctx.connect(), request,
                    f"{label} ListOffsets v7 latest {'read_committed' if committed else 'read_uncommitted'}")


def _produce_then(committed: bool) -> None:
    outcome = "commit" if committed else "abort"

    @scenario(f"txn.fetch.read-committed.{outcome}", "transactions",
              "A transactional batch after 2 plain records: while open, read_committed Fetch stops at the "
              "last stable offset and ListOffsets read_committed answers it; after EndTxn "
              f"{outcome} the LSO is the log end, "
              + ("the records are visible" if committed else "aborted_transactions names the batch")
              + "; a fetch from the marker's offset returns it (UnifiedLog, ProducerStateManager, KIP-98)")
    def run(ctx: ScenarioContext) -> None:
        topic = _topic(ctx)
        plain = ctx.connect()
        plain.request(builders.produce(9, topic, {0: builders.record_batch(2, 500)}))
        producer = _producer(ctx)
        producer.init()
        producer.add_partitions({topic: [0]})
        producer.produce(topic)
        for isolation in (True, False):
            _fetch(ctx, topic, isolation, "open")
            _latest(ctx, topic, isolation, "open")
        producer.end(committed)
        producer.wait_state("CompleteCommit" if committed else "CompleteAbort")
        for isolation in (True, False):
            _fetch(ctx, topic, isolation, outcome)
            _latest(ctx, topic, isolation, outcome)
        # The marker (offset 5) fetched on its own.
        ctx.call(ctx.connect(), builders.fetch(12, topic, {0: 5}, isolation_level=1),
                 f"{outcome} Fetch v12 read_committed from the marker", view=_fetch_view)


for _committed in (True, False):
    _produce_then(_committed)


@scenario("txn.produce.partition-not-added", "transactions",
          "A transactional batch to a partition not added to the transaction (KIP-890 part 1 verification): "
          "refused, nothing appended")
def _produce_not_added(ctx: ScenarioContext) -> None:
    topic = _topic(ctx, 2)
    producer = _producer(ctx)
    producer.init()
    producer.add_partitions({topic: [0]})
    producer.produce(topic, partition=1)
    _latest(ctx, topic, False, "after", partition=1)


@scenario("txn.produce.fenced-epoch", "transactions",
          "After an aborted transaction and a new InitProducerId, a batch at the new epoch, then one at the "
          "old epoch (next sequence): refused (ProducerStateManager epoch check, or the KIP-890 "
          "verification)")
def _produce_fenced(ctx: ScenarioContext) -> None:
    topic = _topic(ctx)
    producer = _producer(ctx)
    producer.init()
    producer.add_partitions({topic: [0]})
    producer.produce(topic)
    producer.end(False)
    producer.wait_state("CompleteAbort")
    producer.init(label="P InitProducerId v4 again")
    producer.add_partitions({topic: [0]}, label="P AddPartitionsToTxn v3 new epoch")
    producer.produce(topic, label="P Produce v9 new epoch")
    producer.producer_epoch -= 1
    producer.produce(topic, label="P Produce v9 old epoch")
    _latest(ctx, topic, False, "after")
