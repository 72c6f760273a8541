"""KIP-848 consumers (GroupConsumer, group_protocol="consumer") against kgroup's in-memory coordinator.

Real threads, real clock, an in-process hub: partitions split, handed over
on a leave and on a crash (session timeout), never owned by two live
members at once (the ledger checks every callback).  Every wait is bounded.
"""
from __future__ import annotations

import time

import pytest

from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.core.member.consumer import ConsumerMemberState
from kgroup.errors import CommitFailedError, ConfigError
from kgroup.io.group_consumer import GroupConsumer
from kgroup.values import TopicPartition

from consumer_member_inprocess_harness import (OwnershipLedger, consumer_hub, crash, kip848_consumer,
                                               poll_until)

ALL = frozenset(TopicPartition("t", p) for p in range(6))


def split_evenly(consumers) -> bool:
    sizes = sorted(len(c.assignment()) for c in consumers)
    owned = [tp for c in consumers for tp in c.assignment()]
    return (len(owned) == len(set(owned)) and set(owned) == ALL and sizes[-1] - sizes[0] <= 1
            and all(c.member.settled for c in consumers))


@pytest.fixture
def hub():
    hub = consumer_hub()
    yield hub
    hub.close()


@pytest.fixture
def ledger():
    ledger = OwnershipLedger()
    yield ledger
    assert ledger.violations == []


def test_three_members_split_the_partitions(hub, ledger):
    consumers = [kip848_consumer(hub, ledger, f"c{i}") for i in range(3)]
    try:
        poll_until(consumers, lambda: split_evenly(consumers))
        assert sorted(len(c.assignment()) for c in consumers) == [2, 2, 2]
        epochs = {c.member.member_epoch for c in consumers}
        assert all(e > 0 for e in epochs)
        for c in consumers:
            assert ledger.owned_by(f"c{consumers.index(c)}") == c.assignment()
    finally:
        for c in consumers:
            c.close()


def test_members_joining_one_by_one_take_over_incrementally(hub, ledger):
    consumers = [kip848_consumer(hub, ledger, "c0")]
    try:
        poll_until(consumers, lambda: split_evenly(consumers))
        assert consumers[0].assignment() == ALL
        for i in (1, 2):
            consumers.append(kip848_consumer(hub, ledger, f"c{i}"))
            poll_until(consumers, lambda: split_evenly(consumers))
        revoked = [h for h in ledger.history if h[1] == "revoked"]
        # Incremental: c0 only ever gave partitions up, it never lost all and got them back.
        assert all(len(parts) < 6 for _, _, parts in revoked)
        assert not [h for h in ledger.history if h[1] == "lost"]
    finally:
        for c in consumers:
            c.close()


def test_leaving_member_hands_its_partitions_over(hub, ledger):
    consumers = [kip848_consumer(hub, ledger, f"c{i}") for i in range(3)]
    try:
        poll_until(consumers, lambda: split_evenly(consumers))
        leaver = consumers.pop(1)
        leaver.close()
        assert leaver.member.state is ConsumerMemberState.UNSUBSCRIBED and leaver.member.member_epoch == -1
        poll_until(consumers, lambda: split_evenly(consumers), timeout_s=5.0)
        assert ledger.owned_by("c1") == frozenset()
    finally:
        for c in consumers:
            c.close()


def test_crashed_member_is_fenced_after_the_session_timeout(hub, ledger):
    consumers = [kip848_consumer(hub, ledger, f"c{i}") for i in range(3)]
    try:
        poll_until(consumers, lambda: split_evenly(consumers))
        dead = consumers.pop(0)
        crash(dead)
        ledger.forget("c0")
        took_s = poll_until(consumers, lambda: split_evenly(consumers), timeout_s=8.0)
        assert took_s >= 0.5  # not before the 800 ms session timeout (minus the last heartbeat's age)
        assert sorted(len(c.assignment()) for c in consumers) == [3, 3]
    finally:
        for c in consumers:
            c.close()


def test_commits_carry_the_member_epoch_and_a_zombie_commit_is_refused(hub, ledger):
    consumers = [kip848_consumer(hub, ledger, f"c{i}") for i in range(2)]
    try:
        poll_until(consumers, lambda: split_evenly(consumers))
        mine = sorted(consumers[0].assignment())[0]
        consumers[0].commit({mine: 42})
        assert consumers[1].committed([mine]) == {mine: consumers[1].committed([mine])[mine]}
        assert consumers[1].committed([mine])[mine].offset == 42
        # c0 becomes a zombie: isolated, fenced by the session timeout; its commit cannot land.
        zombie = consumers.pop(0)
        crash(zombie)
        ledger.forget("c0")
        poll_until(consumers, lambda: split_evenly(consumers), timeout_s=8.0)
        zombie._runner.transport.heal()
        with pytest.raises(CommitFailedError):
            zombie.commit({mine: 99}, timeout_ms=3000)
        assert consumers[0].committed([mine])[mine].offset == 42
    finally:
        for c in consumers:
            c.close()


def test_classic_settings_rejected_before_anything_starts(hub):
    for setting in ({"session_timeout_ms": 10_000}, {"heartbeat_interval_ms": 1000},
                    {"assignors": ("range",)},
                    {"rebalance_timeout_ms": 100}):
        with pytest.raises(ConfigError, match=next(iter(setting))):
            GroupConsumer(hub.transport(), "g", ["t"], group_protocol="consumer", **setting)
    with pytest.raises(ConfigError, match="group_remote_assignor"):
        GroupConsumer(hub.transport(), "g", ["t"], group_remote_assignor="uniform")


class StuckOnRevoke:
    """A listener whose first revocation hangs (a member that never revokes in time)."""

    def __init__(self, hang_s: float) -> None:
        self.hang_s = hang_s
        self.revoke_started_at = None
        self.lost: list = []

    def on_partitions_assigned(self, partitions) -> None:
        pass

    def on_partitions_revoked(self, partitions) -> None:
        if self.revoke_started_at is None:
            self.revoke_started_at = time.monotonic()
            time.sleep(self.hang_s)

    def on_partitions_lost(self, partitions) -> None:
        self.lost.extend(partitions)


def test_member_that_never_revokes_is_removed_after_its_rebalance_timeout(hub):
    """GroupMetadataManagerTest.testRebalanceTimeoutLifecycle, seen from the members: the partitions
    a stuck member must give up reach the newcomer only once the coordinator removed it."""
    stuck_listener = StuckOnRevoke(hang_s=2.5)
    stuck = GroupConsumer(hub.transport(client_id="stuck"), "g", ["t"], group_protocol="consumer",
                          listener=stuck_listener, max_poll_interval_ms=1000, retry_backoff_ms=50,
                          enable_auto_commit=False)
    newcomer = None
    try:
        poll_until([stuck], lambda: stuck.assignment() == ALL and stuck.member.settled)
        ledger = OwnershipLedger()
        newcomer = kip848_consumer(hub, ledger, "new")
        got_some_at = None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and got_some_at is None:
            stuck.poll(10)  # hangs 2.5 s in the revocation the first time
            newcomer.poll(10)
            if newcomer.assignment():
                got_some_at = time.monotonic()
        assert got_some_at is not None, (stuck.member, newcomer.member)
        # Not before the 1 s rebalance timeout: until then the stuck member still owned them.
        assert got_some_at - stuck_listener.revoke_started_at >= 0.9
        # The stuck member was removed (fenced, or left on its own poll timeout): it reports its
        # partitions lost once its callback returns, rejoins, and the group splits again.
        poll_until([stuck, newcomer], lambda: stuck_listener.lost != [] and split_evenly([stuck, newcomer]))
        assert ledger.violations == []
    finally:
        stuck.close()
        if newcomer is not None:
            newcomer.close()


def test_idle_member_heartbeats_on_the_coordinator_interval_at_little_cost():
    """The heartbeat thread sleeps until the interval the coordinator gave (Kafka's
    HeartbeatRequestState timer): about one heartbeat per interval, no busy loop."""
    hub = consumer_hub(GroupCoordinatorConfig(consumer_group_heartbeat_interval_ms=200,
                                              consumer_group_session_timeout_ms=2000))
    c = kip848_consumer(hub, OwnershipLedger(), "c0")
    try:
        poll_until([c], lambda: split_evenly([c]))
        sent: list = []
        send = c._runner.transport.send

        def counting(request, node_id=None):
            sent.append(type(request).__name__)
            return send(request, node_id)

        c._runner.transport.send = counting
        cpu0, wall0 = time.process_time(), time.monotonic()
        time.sleep(2.0)  # the app is busy: only the heartbeat and hub threads run
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
        assert set(sent) == {"ConsumerGroupHeartbeatRequest"}
        assert 6 <= len(sent) <= 12, len(sent)  # 10 intervals of 200 ms
        assert cpu / wall < 0.05
        assert c.member.state is ConsumerMemberState.STABLE and c.assignment() == ALL
    finally:
        c.close()
        hub.close()
