"""The simulator's exactly-once mode (issue 26): consume-transform-produce in transactions (KIP-98) with
offsets sent to the transaction with the consumer's group metadata (KIP-447), the sim's transactional
data (markers, LSO, read_committed) and the checks Jepsen's Kafka workload makes of it."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kgroup.core.error_codes import ErrorCode as E
from kgroup.core.transaction_markers import MarkerAppend, TxnMarker
from kgroup.errors import ConfigError
from kgroup.cli import main
from kgroup.sim import SimConfig, run
from kgroup.sim.campaign import run_campaign
from kgroup.sim.checker import EOS_CHECKS, check_exactly_once
from kgroup.sim.history import (
    Appended, GroupOffsetObserved, History, OutputObserved, TxnAborted, TxnEnding, TxnOffsetsSent,
)
from kgroup.sim.eos import OutputValue
from kgroup.sim.eos_hosting import OUTPUT_TOPIC
from kgroup.sim.simulator import CAMPAIGN_SHAPE
from kgroup.core.cluster.transactional_data import ControlMarker, TransactionalData, TransactionalRecord
from kgroup.testing import InMemoryKafka
from kgroup.values import TopicPartition

EOS = SimConfig(processing="transactional", **CAMPAIGN_SHAPE)
IN0, OUT0 = TopicPartition("events", 0), TopicPartition(OUTPUT_TOPIC, 0)


# -- the sim's transactional data ------------------------------------------------------------------

def _cluster_data():
    kafka = InMemoryKafka(3, offsets_partitions=1)
    kafka.create_topic("out", 1)
    return kafka, TransactionalData(kafka.cluster)


def _records(pid: int, epoch: int, txn: str, n: int):
    return [TransactionalRecord(OutputValue(f"v{i}", txn, IN0, i), pid, epoch) for i in range(n)]


def _replicate(kafka) -> None:
    kafka.cluster.replicate(0)
    kafka.cluster.replicate(0)


def test_an_open_transaction_holds_the_lso_and_an_abort_hides_its_records():
    """Kafka's LSO: the first offset of the earliest undecided transaction; read_committed skips aborted
    records and the control batches."""
    kafka, data = _cluster_data()
    try:
        assert data.append("out", 0, _records(7, 0, "a", 2)) == 0
        assert data.append("out", 0, _records(8, 0, "b", 1)) == 2
        _replicate(kafka)
        assert data.last_stable_offset("out", 0) == 0
        assert data.read_committed("out", 0, 0, 100) == ([], 0)
        abort = data.write_txn_marker(TxnMarker("out", 0, 7, 0, False, 0), 0)
        commit = data.write_txn_marker(TxnMarker("out", 0, 8, 0, True, 0), 0)
        assert isinstance(abort, MarkerAppend) and isinstance(commit, MarkerAppend)
        assert data.last_stable_offset("out", 0) == 0  # decided only once the HW passes the markers
        _replicate(kafka)
        assert data.last_stable_offset("out", 0) == 5
        records, position = data.read_committed("out", 0, 0, 100)
        assert position == 5 and [(o, r.value.txn) for o, r in records] == [(2, "b")]
    finally:
        kafka.close()


def test_an_older_producer_epoch_is_refused_on_appends_and_markers():
    """ProducerAppendInfo.checkProducerEpoch: a fenced producer's write is INVALID_PRODUCER_EPOCH."""
    kafka, data = _cluster_data()
    try:
        data.append("out", 0, _records(7, 0, "a", 1))
        assert isinstance(data.write_txn_marker(TxnMarker("out", 0, 7, 1, False, 0), 0), MarkerAppend)
        assert data.append("out", 0, _records(7, 0, "zombie", 1)) is E.INVALID_PRODUCER_EPOCH
        assert data.write_txn_marker(TxnMarker("out", 0, 7, 0, True, 0), 0) is E.INVALID_PRODUCER_EPOCH
        assert data.write_txn_marker(TxnMarker("nope", 0, 7, 1, True, 0), 0) is E.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        kafka.close()


def test_a_new_leader_reads_the_outcomes_from_its_log():
    """After a failover the view is rebuilt from the new leader's log (ProducerStateManager's load)."""
    kafka, data = _cluster_data()
    try:
        data.append("out", 0, _records(7, 0, "a", 2))
        data.write_txn_marker(TxnMarker("out", 0, 7, 0, False, 0), 0)
        _replicate(kafka)
        leader = kafka.cluster.partition("out", 0).leader
        kafka.kill_broker(leader)
        assert kafka.cluster.partition("out", 0).leader not in (None, leader)
        records, _position = data.read_committed("out", 0, 0, 100)
        assert records == []
        assert isinstance(kafka.cluster.partition("out", 0).logs[
            kafka.cluster.partition("out", 0).leader].entries[2].payload, ControlMarker)
    finally:
        kafka.close()


# -- whole runs -----------------------------------------------------------------------------------

def _inputs(verdict) -> set:
    return {(e.partition, e.offset) for e in verdict.history.of(Appended)}


def _outputs(verdict) -> list:
    return [(e.source, e.source_offset) for e in verdict.history.of(OutputObserved)]


def test_an_eos_seed_passes_every_check_and_each_input_has_exactly_one_committed_output():
    verdict = run(0, EOS)
    assert verdict.ok, verdict.describe()
    outputs = _outputs(verdict)
    assert sorted(outputs) == sorted(_inputs(verdict)) and len(outputs) == len(set(outputs))
    # Seed 0 isolates the broker coordinating one application's transactions; one transaction aborts.
    assert verdict.coverage["txn coordinator moved"] == 1 and verdict.coverage["txn aborted"] >= 1
    assert "exactly-once" in verdict.describe()


@pytest.mark.parametrize("protocol, seed", [("classic", 8), ("consumer", 2)])
def test_kip447_fences_the_offsets_of_a_rebalanced_member_and_the_output_stays_exactly_once(protocol, seed):
    verdict = run(seed, SimConfig(processing="transactional", group_protocol=protocol, **CAMPAIGN_SHAPE))
    assert verdict.ok, verdict.describe()
    assert verdict.coverage["txn offsets fenced (KIP-447)"] >= 1
    outputs = _outputs(verdict)
    assert sorted(outputs) == sorted(_inputs(verdict))


def test_offsets_committed_outside_the_transaction_fail_the_offsets_check():
    def planted(sim):
        sim.eos.offsets_outside_transaction = True
    verdict = run(2, EOS, planted=planted)
    assert verdict.checks_failed() == {"offsets-outside-transaction"}
    assert run(2, EOS).ok


def test_a_reader_past_the_last_stable_offset_sees_aborted_outputs():
    """A read_committed that ignores the LSO returns records of transactions still open, some of
    which abort: an aborted read, and their inputs' outputs twice once processed again."""
    def planted(sim):
        data = sim.eos.data

        def read_to_the_high_watermark(topic, index, position, max_records):
            view, entries, hw = data._view(topic, index)
            end = min(hw, position + max_records)
            return [(o, entries[o].payload) for o in range(position, end)
                    if not isinstance(entries[o].payload, ControlMarker) and o not in view.aborted], end
        data.read_committed = read_to_the_high_watermark
    verdict = run(0, EOS, planted=planted)
    assert {"aborted-read", "duplicate-output"} <= verdict.checks_failed()


def test_a_txn_offset_commit_without_group_metadata_lets_a_zombie_duplicate_output():
    """Without KIP-447's generation and member id (TxnOffsetCommit v0-v2), a member that lost its
    partitions in a rebalance still commits its transaction: its outputs appear twice."""
    def planted(sim):
        make = sim.eos.transactional_producer

        def without_group_metadata(name):
            producer = make(name)
            begin = producer.begin
            producer.begin = lambda member, inputs, partitions, _metadata, now: begin(
                member, inputs, partitions, (-1, "", None), now)
            return producer
        sim.eos.transactional_producer = without_group_metadata
    assert run(7, EOS, planted=planted).checks_failed() == {"duplicate-output"}
    fenced = run(7, EOS)
    assert fenced.ok and fenced.coverage["txn offsets fenced (KIP-447)"] >= 1


def test_an_eos_campaign_of_30_seeds_violates_nothing():
    result = run_campaign(range(30), EOS, workers=2)
    assert not result.failed, [o.violations[:2] for o in result.failed]
    coverage = result.coverage()
    assert result.faults >= 60
    for key in ("txn committed", "txn aborted", "txn coordinator moved", "txn offsets fenced (KIP-447)",
                "fault kill_broker", "fault crash", "fault slow_poll"):
        assert coverage.get(key, 0) > 0, key


# -- the checks on small histories ------------------------------------------------------------------

def _history(*events) -> History:
    history = History()
    for event in events:
        history.record(event)
    return history


def test_an_offset_an_aborted_transaction_carried_is_outside_its_transaction():
    history = _history(TxnOffsetsSent(1, "m0", "t1", "id", 1, IN0, 2), TxnAborted(2, "m0", "t1", "x"),
                       TxnEnding(2, "m0", "t1", False), GroupOffsetObserved(3, IN0, 2))
    [violation] = check_exactly_once(history, {IN0: 2})
    assert violation.check == "offsets-outside-transaction" and "moved to 2" in violation.message


def test_an_offset_past_an_input_without_output_and_an_output_without_its_offset():
    history = _history(TxnOffsetsSent(1, "m0", "t1", "id", 1, IN0, 2), TxnEnding(2, "m0", "t1", True),
                       OutputObserved(3, OUT0, 0, "t1", IN0, 1), GroupOffsetObserved(3, IN0, 2),
                       OutputObserved(4, OUT0, 1, "t1", IN0, 2))
    messages = [v.message for v in check_exactly_once(history, {IN0: 2})]
    assert any(f"past {IN0}@0" in m for m in messages)
    assert any(f"{IN0}@2's output is committed" in m for m in messages)


def test_an_output_of_a_transaction_never_asked_to_commit_is_an_aborted_read():
    history = _history(TxnAborted(1, "m0", "t1", "TxnOffsetCommit ILLEGAL_GENERATION"),
                       OutputObserved(2, OUT0, 0, "t1", IN0, 0), OutputObserved(2, OUT0, 1, "t2", IN0, 0),
                       TxnEnding(1, "m0", "t2", True))
    checks = sorted(v.check for v in check_exactly_once(history, {IN0: 1}))
    assert checks == ["aborted-read", "duplicate-output"]
    assert set(checks) <= set(EOS_CHECKS)


# -- config and CLI -----------------------------------------------------------------------------------

def test_an_unknown_processing_mode_is_a_config_error():
    with pytest.raises(ConfigError, match="processing must be one of plain, transactional"):
        SimConfig(processing="exactly-once")


def test_plain_runs_host_no_transactions():
    verdict = run(0, SimConfig(**CAMPAIGN_SHAPE))
    assert not verdict.history.of(OutputObserved) and "exactly-once" not in verdict.describe()


def test_simulate_and_campaign_take_eos(capsys):
    quick = ["--members", "3", "--partitions", "6", "--duration-ms", "6000", "--max-faults", "3"]
    assert main(["simulate", "--eos", "--seed", "3", *quick]) == 0
    assert "exactly-once" in capsys.readouterr().out
    assert main(["campaign", "--eos", "--seeds", "2", "--workers", "1", *quick]) == 0
    out = capsys.readouterr().out
    assert "--eos" in out and "txn committed" in out


# -- determinism --------------------------------------------------------------------------------------

def test_an_eos_run_is_the_same_with_the_plain_scheduler_and_any_hash_seed(monkeypatch):
    """The event scheduler wakes an application blocked in its transaction when its producer's answer is
    on its way (the plain scheduler asks every application at every instant): the same run, digest
    for digest; and set iteration order (PYTHONHASHSEED) changes nothing."""
    from kgroup.io.inprocess import InProcessHub
    from kgroup.sim import simulator
    from kgroup.testing.scheduler import Scheduler

    config = SimConfig(processing="transactional", members=3, partitions=6, duration_ms=6_000, max_faults=4)
    event_digest = run(4, config).digest()
    script = ("from kgroup.sim import SimConfig, run; print(run(4, SimConfig(processing='transactional', "
              "members=3, partitions=6, duration_ms=6_000, max_faults=4)).digest())")
    digests = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": str(h)}).stdout.strip() for h in (0, 1)}
    assert digests == {event_digest}
    monkeypatch.setattr(simulator, "EventScheduler", Scheduler)
    monkeypatch.setattr(InProcessHub, "get_timer", lambda hub: hub.backend.get_timer())
    assert run(4, config).digest() == event_digest
