"""A hand-made history with known metrics, shared by the metrics and timeline tests."""
from kgroup.sim.history import Appended, FaultApplied, History, MemberStopped, OwnershipChanged, Processed
from kgroup.values import TopicPartition

P0, P1 = TopicPartition("events", 0), TopicPartition("events", 1)


def _owned(at_ms, member, generation, state, *tps):
    return OwnershipChanged(at_ms, member, f"{member}-id", generation, state, frozenset(tps), True)


def hand_made_history():
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
