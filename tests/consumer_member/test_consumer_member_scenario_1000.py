"""Issue 14's scenario for kgroup's own KIP-848 consumer: three consumers joining and leaving at
different times over a 6-partition topic of 1,000 records.

In-process (GroupConsumer, real threads) against kgroup's coordinator, with the application's
consumption simulated: each consumer reads a few offsets of each partition it owns per poll,
commits after every poll and in its revocation callback, and starts a newly assigned partition
at its committed offset.  Checked: every record is consumed; none twice (every handover here is
clean, so nothing is inside an uncommitted window); no partition is owned by two consumers at
once, neither by the consumers' callbacks (the ledger) nor by the coordinator's own records; a
consumer is given a partition only once the coordinator's record assigns it; and the
coordinator's member states UNREVOKED_PARTITIONS and UNRELEASED_PARTITIONS were reached.
"""
from __future__ import annotations

import time
from typing import Optional

from kgroup.core.consumer_group.member import MemberState as CoordinatorMemberState
from kgroup.core.coordinator import GroupCoordinator
from kgroup.core.consumer_group.records import ConsumerGroupMemberRecord
from kgroup.errors import CommitFailedError
from kgroup.io.group_consumer import GroupConsumer
from kgroup.io.inprocess import InProcessHub
from kgroup.values import TopicPartition

from consumer_member_inprocess_harness import FAST_BROKER, FAST_MEMBER, OwnershipLedger, RecordingCoordinator

LOG_END = {TopicPartition("t", p): 167 if p < 4 else 166 for p in range(6)}
RECORDS = sum(LOG_END.values())
PER_POLL = 3


class App:
    """One consumer application: its own positions, its callbacks, its commits."""

    def __init__(self, name: str, hub: InProcessHub, recording: RecordingCoordinator,
                 ledger: OwnershipLedger, processed: list) -> None:
        self.name = name
        self._recording = recording
        self._hub = hub
        self._ledger = ledger
        self._processed = processed
        self.positions: dict = {}
        self.uninitialised: set = set()
        self.mismatches: list = []
        self.commit_failures = 0
        self.leaving = False
        self.consumer = GroupConsumer(hub.transport(client_id=name), "g", ["t"], group_protocol="consumer",
                                      listener=self, **FAST_MEMBER)

    # -- the rebalance listener ----------------------------------------------------------

    def on_partitions_assigned(self, partitions) -> None:
        member_id = self.consumer.member.member_id
        assigned = self._hub.query(lambda now: self._coordinator_assignment(member_id))
        if not set(partitions) <= assigned:
            self.mismatches.append((self.name, sorted(partitions), sorted(assigned)))
        self._ledger.assigned(self.name, partitions)
        self.uninitialised.update(partitions)

    def on_partitions_revoked(self, partitions) -> None:
        done = {tp: self.positions[tp] for tp in partitions if tp in self.positions}
        if done and not self.leaving:  # leave() committed everything before close()
            self.consumer.commit(done)  # the epoch is still valid: revocation comes before the ack
        self._forget(partitions, "revoked")

    def on_partitions_lost(self, partitions) -> None:
        self._forget(partitions, "lost")

    def _forget(self, partitions, how: str) -> None:
        for tp in partitions:
            self.positions.pop(tp, None)
            self.uninitialised.discard(tp)
        self._ledger.released(self.name, partitions, how)

    def _coordinator_assignment(self, member_id: str) -> frozenset:
        for record in reversed(self._recording.member_records):
            if isinstance(record, ConsumerGroupMemberRecord) and record.member.member_id == member_id:
                return frozenset(record.member.assigned_partitions)
        return frozenset()

    # -- the poll loop ----------------------------------------------------------------------

    def step(self) -> None:
        self.consumer.poll(5)
        owned = self.consumer.assignment()
        fresh = sorted(self.uninitialised & owned)
        if fresh:
            committed = self.consumer.committed(fresh)
            for tp in fresh:
                self.positions[tp] = committed[tp].offset if committed.get(tp) is not None else 0
            self.uninitialised -= set(fresh)
        consumed = False
        for tp in sorted(owned):
            position = self.positions.get(tp)
            if position is None:
                continue
            end = min(LOG_END[tp], position + PER_POLL)
            self._processed.extend((self.name, tp, offset) for offset in range(position, end))
            consumed = consumed or end > position
            self.positions[tp] = end
        if consumed:
            try:
                self.consumer.commit({tp: pos for tp, pos in self.positions.items() if tp in owned})
            except CommitFailedError:
                self.commit_failures += 1

    def leave(self) -> None:
        self.leaving = True
        self.consumer.commit({tp: pos for tp, pos in self.positions.items()
                              if tp in self.consumer.assignment()})
        self.consumer.close()


def coordinator_overlaps(recording: RecordingCoordinator) -> list:
    """Replay the coordinator's member records: a partition held (assigned or pending revocation)
    by two members at one record is an overlap."""
    held: dict = {}
    overlaps = []
    for record in recording.member_records:
        if isinstance(record, ConsumerGroupMemberRecord):
            member = record.member
            held[member.member_id] = frozenset(member.assigned_partitions) | frozenset(
                member.partitions_pending_revocation)
        else:
            held.pop(record.member_id, None)
        owners: dict = {}
        for member_id, partitions in held.items():
            for tp in partitions:
                if tp in owners:
                    overlaps.append((tp, owners[tp], member_id))
                owners[tp] = member_id
    return overlaps


def test_three_consumers_joining_and_leaving_consume_1000_records_once():
    recording = RecordingCoordinator(GroupCoordinator(FAST_BROKER, topic_metadata={"t": 6}.get))
    hub = InProcessHub(recording)
    ledger = OwnershipLedger()
    processed: list = []
    apps: dict = {}
    left: Optional[App] = None
    try:
        apps["a0"] = App("a0", hub, recording, ledger, processed)
        deadline = time.monotonic() + 60
        while len({(tp, o) for _, tp, o in processed}) < RECORDS:
            assert time.monotonic() < deadline, (len(processed), [a.consumer.member for a in apps.values()])
            if len(processed) >= 200 and "a1" not in apps:
                apps["a1"] = App("a1", hub, recording, ledger, processed)
            if len(processed) >= 450 and "a2" not in apps:
                apps["a2"] = App("a2", hub, recording, ledger, processed)
            if len(processed) >= 700 and left is None:
                left = apps.pop("a1")
                left.leave()
            for app in list(apps.values()):
                app.step()
        every = [(tp, o) for _, tp, o in processed]
        assert set(every) == {(tp, o) for tp, end in LOG_END.items() for o in range(end)}
        duplicates = len(every) - len(set(every))
        assert duplicates == 0, duplicates
        assert {name for name, _, _ in processed} == {"a0", "a1", "a2"}  # everyone did some work
        assert ledger.violations == []
        assert [m for a in [*apps.values(), left] for m in a.mismatches] == []
        assert coordinator_overlaps(recording) == []
        states = {r.member.state for r in recording.member_records
                  if isinstance(r, ConsumerGroupMemberRecord)}
        assert CoordinatorMemberState.UNREVOKED_PARTITIONS in states
        assert CoordinatorMemberState.UNRELEASED_PARTITIONS in states
    finally:
        for app in apps.values():
            app.consumer.close()
        hub.close()
