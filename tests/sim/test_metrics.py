"""Run metrics on hand-made histories: exact numbers."""
from kgroup.sim.history import Appended, FaultApplied, History, MemberStopped, OwnershipChanged, Processed
from kgroup.sim.metrics import member_states, ownership_intervals, percentile, run_metrics
from kgroup.values import TopicPartition

P0, P1 = TopicPartition("events", 0), TopicPartition("events", 1)


def _owned(at_ms, member, generation, state, *tps):
    return OwnershipChanged(at_ms, member, f"{member}-id", generation, state, frozenset(tps), True)


def _history():
    history = History()
    for event in [
        Appended(0, P0, 0, "a"), Appended(0, P1, 0, "b"),
        _owned(100, "m0", 1, "STABLE", P0, P1), _owned(100, "m1", -1, "PREPARING_REBALANCE"),
        _owned(200, "m0", 2, "STABLE", P0), _owned(200, "m1", 2, "STABLE", P1),  # stable from 200
        Processed(250, "m0", "m0-id", 2, P0, 0, 10),
        FaultApplied(1_000, "crash m1 for 500 ms"), MemberStopped(1_000, "m1", False),  # P1 unowned
        _owned(1_300, "m0", 3, "COMPLETING_REBALANCE", P0),
        _owned(1_400, "m0", 3, "STABLE", P0, P1),  # stable again: recovery 400 ms
        Processed(1_450, "m0", "m0-id", 3, P1, 5, 10), Processed(1_460, "m0", "m0-id", 3, P0, 8, 12),
        FaultApplied(1_500, "heal crash m1"),
        FaultApplied(1_600, "partition m0-b1 for 100 ms"),  # the group stays Stable: recovery 0
    ]:
        history.record(event)
    return history


def test_metrics_of_a_hand_made_history():
    metrics = run_metrics(_history(), end_ms=2_000)
    assert metrics.rebalances == 3
    # P0: unowned 0-100; P1: 0-100 and 1000-1400.
    assert metrics.unowned_partition_ms == 100 + 100 + 400
    assert metrics.unowned_partition_seconds == 0.6
    assert metrics.records_processed_twice == 2  # P0 offsets 8 and 9
    # The crash: Stable 200-1300 (m1's session still counts), unstable 1300-1400.
    assert metrics.recovery_ms == (400, 0)
    assert metrics.faults == 2 and metrics.end_ms == 2_000


def test_intervals_for_the_timeline():
    intervals = ownership_intervals(_history(), end_ms=2_000)
    assert [(i.row, i.label, i.start_ms, i.end_ms) for i in intervals] == [
        ("events-0", "m0", 100, 2_000), ("events-1", "m0", 100, 200), ("events-1", "m1", 200, 1_000),
        ("events-1", "m0", 1_400, 2_000)]
    states = [(i.row, i.label, i.start_ms, i.end_ms) for i in member_states(_history(), end_ms=2_000)]
    assert states == [("m0", "STABLE", 100, 1_300), ("m0", "COMPLETING_REBALANCE", 1_300, 1_400),
                      ("m0", "STABLE", 1_400, 2_000), ("m1", "PREPARING_REBALANCE", 100, 200),
                      ("m1", "STABLE", 200, 1_000), ("m1", "STOPPED", 1_000, 2_000)]


def test_percentile_by_nearest_rank():
    assert percentile([], 50) is None
    assert percentile([5, 1, 3, 2, 4], 50) == 3 and percentile(list(range(1, 101)), 99) == 99
