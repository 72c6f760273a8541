"""SubscriptionBridge: kgroup's partition changes applied to kafka-python's SubscriptionState."""
from __future__ import annotations

from kafka import ConsumerRebalanceListener
from kafka.consumer.subscription_state import SubscriptionState
from kafka.structs import TopicPartition

from kgroup.io.kafka_python.subscription import SubscriptionBridge

T0, T1, T2, U0 = (TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2),
                  TopicPartition("u", 0))


class Recorder(ConsumerRebalanceListener):
    def __init__(self, state, fail_on=None):
        self.state = state
        self.calls = []
        self.fail_on = fail_on

    def _record(self, kind, tps):
        # What the app sees of the assignment while its callback runs.
        self.calls.append((kind, set(tps), set(self.state.assigned_partitions())))
        if kind == self.fail_on:
            raise RuntimeError(f"app failed in {kind}")

    def on_partitions_revoked(self, revoked):
        self._record("revoked", revoked)

    def on_partitions_assigned(self, assigned):
        self._record("assigned", assigned)

    def on_partitions_lost(self, lost):
        self._record("lost", lost)


def make(fail_on=None, topics=("t",)):
    state = SubscriptionState()
    listener = Recorder(state, fail_on)
    state.subscribe(topics=list(topics), listener=listener)
    return state, listener, SubscriptionBridge(state, net=None)


def test_assign_applies_state_before_the_callback_and_reports_only_additions():
    state, listener, bridge = make()
    assert bridge.assign([T0, T1]) is None
    assert bridge.assign([T0, T1, T2]) is None
    assert listener.calls == [("assigned", {T0, T1}, {T0, T1}), ("assigned", {T2}, {T0, T1, T2})]
    assert state.assigned_partitions() == {T0, T1, T2}


def test_revoke_calls_back_while_still_owned_then_drops():
    state, listener, bridge = make()
    bridge.assign([T0, T1, T2])
    bridge.revoke([T1, T2])
    assert listener.calls[-1] == ("revoked", {T1, T2}, {T0, T1, T2})
    assert state.assigned_partitions() == {T0}


def test_lost_partitions_use_on_partitions_lost():
    state, listener, bridge = make()
    bridge.assign([T0])
    bridge.revoke([T0], lost=True)
    assert listener.calls[-1][0] == "lost"
    assert state.assigned_partitions() == set()


def test_revoking_nothing_owned_calls_nothing():
    state, listener, bridge = make()
    bridge.assign([T0])
    assert bridge.revoke([T2]) is None
    assert [c[0] for c in listener.calls] == ["assigned"]


def test_listener_error_is_returned_after_state_is_applied():
    state, listener, bridge = make(fail_on="revoked")
    bridge.assign([T0, T1])
    error = bridge.revoke([T0])
    assert isinstance(error, RuntimeError)
    assert state.assigned_partitions() == {T1}


def test_partitions_of_unsubscribed_topics_are_dropped():
    state, listener, bridge = make()
    bridge.assign([T0, U0])
    assert state.assigned_partitions() == {T0}
