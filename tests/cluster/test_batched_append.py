"""The batched log operations the wire server uses give the state the one-at-a-time ones give."""
from __future__ import annotations

import pytest

from kgroup.core.cluster.config import ClusterConfig
from kgroup.core.cluster.replica_log import LogEntry, ReplicaLog
from kgroup.core.cluster.state_machine import ClusterStateMachine


def _log_state(log: ReplicaLog):
    return list(log.entries), log.hw, list(log.epoch_starts)


@pytest.mark.parametrize("epochs", [[3, 3, 3], [1, 2, 2, 5], [5, 3, 5], [7], []])
def test_extend_is_append_of_each(epochs):
    one, many = ReplicaLog(), ReplicaLog()
    for log in (one, many):
        log.append(LogEntry(2, "old"))
    entries = [LogEntry(e, f"p{i}") for i, e in enumerate(epochs)]
    for entry in entries:
        one.append(entry)
    many.extend(entries)
    assert _log_state(one) == _log_state(many)


def _cluster(brokers, min_isr=1):
    return ClusterStateMachine(ClusterConfig(broker_ids=brokers, min_insync_replicas=min_isr), now_ms=0)


def _partition_state(cluster):
    p = cluster.partition("t", 0)
    return ({b: _log_state(log) for b, log in p.logs.items()}, list(p.isr), list(p.pending),
            [(a.offset, a.payload) for a in cluster.take_acks()])


@pytest.mark.parametrize("brokers", [(1,), (1, 2, 3)])
@pytest.mark.parametrize("acks_all", [True, False])
def test_produce_many_is_produce_of_each(brokers, acks_all):
    one, many = _cluster(brokers), _cluster(brokers)
    for cluster in (one, many):
        cluster.create_topic("t", 1, len(brokers))
        cluster.produce("t", 0, "first", acks_all)
        cluster.replicate(10)
    payloads = [f"r{i}" for i in range(5)]
    offsets = [one.produce("t", 0, payload, acks_all) for payload in payloads]
    assert many.produce_many("t", 0, payloads, acks_all) == offsets[0]
    assert _partition_state(one) == _partition_state(many)
    for cluster in (one, many):
        cluster.replicate(20)
    assert _partition_state(one) == _partition_state(many)
