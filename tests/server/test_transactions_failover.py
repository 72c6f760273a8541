"""Transactions under broker faults on kgroup's wire broker (issue 26), with confluent-kafka producers.

* The transaction coordinator's broker is killed while EndTxn(commit) is being answered: after
  failover the new coordinator reloads the transaction from ``__transaction_state`` and finishes it,
  so the transaction completes or aborts as a whole (here: the producer's retried commit succeeds and
  read_committed readers see every record of it, on every partition).
* A producer that stalls past its ``transaction.timeout.ms``: the coordinator aborts its transaction
  with an epoch bump (Kafka's TransactionCoordinator.abortTimedOutTransactions), so its records never
  become readable, the last stable offset moves on for other writers, and its late commit fails fenced.

Waits are bounded by the timeouts involved (transaction timeout, the coordinator's cleanup interval,
librdkafka's retries) plus a margin for a loaded machine.
"""
from __future__ import annotations

import threading
import time
import uuid
from typing import Dict, List

import pytest

from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.core.transaction import TransactionCoordinatorConfig
from kgroup.server import KafkaServer, ServerConfig

pytest.importorskip("confluent_kafka")
from confluent_kafka import KafkaException, Producer  # noqa: E402

from .server_transactions import new_topic, read_all, transactional_producer, values_of  # noqa: E402

STEP_S = 60.0


def _server(**transaction: int) -> KafkaServer:
    config = ServerConfig(brokers=3, coordinator=GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0),
                          transaction=TransactionCoordinatorConfig(**transaction))
    return KafkaServer(config)


def test_the_coordinators_broker_killed_mid_commit_the_transaction_completes_as_a_whole():
    with _server() as server:
        bootstrap = server.bootstrap_servers
        # Replicated on all three brokers, so every partition has a leader after the kill.
        topic = new_topic(bootstrap, "txn-failover", partitions=3, replication_factor=3)
        transactional_id = f"failover-{uuid.uuid4().hex[:8]}"
        producer = transactional_producer(bootstrap, transactional_id)
        producer.begin_transaction()
        values = values_of("v", 9)
        for i, value in enumerate(values):
            producer.produce(topic, value=value.encode(), partition=i % 3)
        producer.flush(STEP_S)
        coordinator = server.transaction_coordinator_node(transactional_id)
        assert coordinator is not None
        # The commit is processed (PrepareCommit written, markers under way) but its answer held back.
        server.delay(3000, api="EndTxn", count=1)
        outcome: Dict[str, object] = {}

        def commit() -> None:
            try:
                producer.commit_transaction(STEP_S)
                outcome["committed"] = True
            except KafkaException as failure:
                outcome["error"] = failure.args[0]

        committing = threading.Thread(target=commit)
        committing.start()
        deadline = time.monotonic() + STEP_S
        while not server.trace(api="EndTxn") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.trace(api="EndTxn"), "the producer never sent EndTxn"
        server.kill_broker(coordinator)
        committing.join(STEP_S)
        assert not committing.is_alive(), "commit_transaction did not return"
        assert server.transaction_coordinator_node(transactional_id) not in (None, coordinator)
        assert outcome == {"committed": True}, outcome
        seen = read_all(server.live_bootstrap_servers, topic, "read_committed", len(values), partitions=3)
        assert sorted(seen) == sorted(values)
        assert server.transaction_state(transactional_id) == "CompleteCommit"


def test_a_producer_stalled_past_its_transaction_timeout_is_aborted_and_fenced():
    with _server(abort_timed_out_transaction_cleanup_interval_ms=200) as server:
        bootstrap = server.bootstrap_servers
        topic = new_topic(bootstrap, "txn-stalled")
        transactional_id = f"stalled-{uuid.uuid4().hex[:8]}"
        stalled = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                            "transaction.timeout.ms": 1000, "linger.ms": 0})
        stalled.init_transactions(STEP_S)
        stalled.begin_transaction()
        for value in values_of("stalled", 3):
            stalled.produce(topic, value=value.encode())
        stalled.flush(STEP_S)
        other = transactional_producer(bootstrap, f"other-{uuid.uuid4().hex[:8]}")
        other.begin_transaction()
        for value in values_of("ok", 3):
            other.produce(topic, value=value.encode())
        other.commit_transaction(STEP_S)
        # Aborted within the timeout plus one cleanup round (1.2 s); the bound leaves room for load.
        deadline = time.monotonic() + STEP_S
        states: List[str] = []
        while time.monotonic() < deadline:
            state = server.transaction_state(transactional_id)
            states.append(str(state))
            if state == "CompleteAbort":
                break
            time.sleep(0.05)
        assert states[-1] == "CompleteAbort", states[-5:]
        assert read_all(bootstrap, topic, "read_committed", 3) == values_of("ok", 3)
        with pytest.raises(KafkaException):
            stalled.commit_transaction(STEP_S)
