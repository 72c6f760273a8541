"""Run metrics on hand-made histories: exact numbers."""
from kgroup.sim.metrics import member_states, ownership_intervals, percentile, run_metrics

from sim_histories import hand_made_history as _history


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
