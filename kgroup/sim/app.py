"""The applications of a simulation: consumers that fetch, process and commit, producers that append.

A :class:`ConsumerApp` is a small consumer loop around one pure
:class:`~kgroup.core.member.GroupMember`, as the scheduler polls it:

1. the batch fetched last poll has been processed (processing takes
   ``processing_ms_per_record`` each): record it, move the positions on;
2. commit what it processed, as its profile says: ``auto`` (the member's
   auto-commit from the positions it is given), ``sync`` (the loop waits for the
   answer or the timeout before it polls again), ``async``, or ``retried`` (never
   drawn by ``mixed``: a commit retried until a deadline, as ``sync``, while the loop
   keeps polling, as an application that calls ``GroupMember.commit_offsets(deadline_ms=...)``
   and does not wait may; issue 9's fault campaign ran such applications);
3. the member's poll: rebalance events (revoked partitions are committed
   synchronously first, lost ones dropped, assigned ones start from the
   committed offset), then ``on_app_poll``;
4. fetch the next records of every owned partition from the partition
   leader's log, below its high watermark (nothing if the member cannot reach
   the leader).

Each application draws its behaviour from its own stream,
``Random("app-<seed>-<name>")``, so faults and other members never reshuffle it.
"""
from __future__ import annotations

import random
from typing import Dict, List, Optional, Tuple

import attrs

from kgroup.core.cluster import ClusterStateMachine
from kgroup.core.cluster.transactional_data import TransactionalData
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member import (
    ClassicMemberState, CommitCompleted, CommittedFetched, MemberContract, PartitionsAssigned, PartitionsLost,
    PartitionsRevoked,
)
from kgroup.core.member.consumer import ConsumerMemberState
from kgroup.core.messages import OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest
from kgroup.errors import ClusterError
from kgroup.io.runner import MemberRunner
from kgroup.sim.history import (
    Appended, CommitAnswered, CommitSent, Fetched, History, Processed, Resumed,
)
from kgroup.sim.eos import COMMITTED, TransactionalProducer
from kgroup.values import TopicPartition

__all__ = ["AppProfile", "COMMIT_MODES", "ConsumerApp", "Producer", "RETRIED", "draw_profile"]

#: What ``mixed`` draws from.
COMMIT_MODES = ("auto", "sync", "async")
#: Only when asked for (drawing it in ``mixed`` would reshuffle every seed's applications).
RETRIED = "retried"
#: The states in which an application commits what it processed (classic and KIP-848 members).
_COMMITS_IN = (ClassicMemberState.STABLE, ConsumerMemberState.STABLE)


@attrs.frozen
class AppProfile:
    commit_mode: str
    auto_commit_interval_ms: int
    poll_interval_ms: int
    processing_ms_per_record: int
    max_records: int
    commit_every_batches: int
    sync_commit_timeout_ms: int


def draw_profile(rng: random.Random, commit_mode: str, processing_ms_per_record: int) -> AppProfile:
    """One application's behaviour; ``commit_mode`` ``mixed`` draws one of :data:`COMMIT_MODES`."""
    mode = rng.choice(COMMIT_MODES) if commit_mode == "mixed" else commit_mode
    return AppProfile(
        commit_mode=mode, auto_commit_interval_ms=rng.choice((300, 1_000)),
        poll_interval_ms=rng.randint(20, 200), processing_ms_per_record=processing_ms_per_record,
        max_records=rng.choice((5, 20, 100)), commit_every_batches=rng.randint(1, 4),
        # Short ones fail during an outage; long ones still retry after the member rebalanced.
        sync_commit_timeout_ms=rng.choice((2_000, 20_000)))


class ConsumerApp:
    """One consumer process (see the module doc); the scheduler drives it as its member's application."""

    def __init__(self, name: str, instance_id: Optional[str], member: MemberContract,
                 profile: AppProfile,
                 cluster: ClusterStateMachine, history: History, now_ms: int,
                 reachable=lambda member, broker: True, on_failed=lambda name: None,
                 producer: Optional[TransactionalProducer] = None,
                 data: Optional[TransactionalData] = None, output_partitions: int = 0,
                 long_poll: bool = False) -> None:
        self.name = name
        #: Exactly-once mode (kgroup.sim.eos): each batch is processed in one transaction of this
        #: producer, read_committed from ``data``, its outputs spread over ``output_partitions``.
        self.producer = producer
        self.data = data
        self.output_partitions = output_partitions
        #: The payloads of the batch fetched last poll, by partition (exactly-once mode only).
        self.batch_values: Dict[TopicPartition, List[str]] = {}
        #: The consumer's (generation, member id, instance id) when the last poll returned its batch.
        self.batch_group_metadata: Tuple[int, str, Optional[str]] = (-1, "", None)
        #: The batch whose transaction is in progress.
        self.txn_batch: List[Tuple[TopicPartition, int, int]] = []
        self.instance_id = instance_id
        self.member = member
        self.profile = profile
        self.cluster = cluster
        self.history = history
        self.reachable = reachable
        #: Told once when the member fails (its application exits; the simulator restarts it).
        self.on_failed = on_failed
        self.failure_reported = False
        self.runner: Optional[MemberRunner] = None
        self.positions: Dict[TopicPartition, int] = {}
        self.awaiting: set = set()
        self.offset_fetch_sent_ms: Dict[TopicPartition, int] = {}
        self.batch: List[Tuple[TopicPartition, int, int]] = []
        #: The member's assignment last sorted by ``_fetch``, and its sorted list.
        self._sorted_for: Optional[frozenset] = None
        self._sorted_assignment: List[TopicPartition] = []
        self.batches_since_commit = 0
        self.sync_token: Optional[int] = None
        self.sync_deadline_ms = 0
        self.next_ms = now_ms
        self.last_poll_ms = now_ms
        self.paused_until_ms = -1
        #: Long polling (plain processing only, ``SimConfig.long_poll``): a poll that would find nothing
        #: blocks until records arrive, the member has news or ``auto_commit_interval_ms`` passes.
        self.long_poll = long_poll and data is None
        #: The last ``get_timer`` found the loop blocked in such a poll (the simulator wakes it).
        self.waiting_for_records = False

    # -- the scheduler's timed component: the application's poll loop ---------------------------

    def get_timer(self) -> Optional[int]:
        producer = self.producer
        if producer is not None and producer.busy:
            # Blocked in the transaction (as KafkaProducer.commitTransaction blocks the loop): woken
            # when an answer arrives (the simulator marks the member dirty then) or a retry is due.
            wake = producer.next_wakeup_ms()
            return None if wake is None else max(wake, self.paused_until_ms)
        if self.sync_token is not None:
            # A loop blocked in a synchronous commit (as kafka-python's commit_sync, which polls the
            # network until the answer) wakes when the member has news for it: the commit's answer,
            # a rebalance or a failure; otherwise at the commit's deadline.
            woken = self.last_poll_ms + 1 if self.member.has_events() else self.sync_deadline_ms
            return max(woken, self.paused_until_ms)
        if self.long_poll and self._waits_for_records():
            # Blocked in poll(timeout) (issue 28): Kafka's poll returns once records arrive, or at the
            # timeout; the simulator re-asks when a replication round or an append may have moved a
            # high watermark (``waiting_for_records``), and the scheduler when the member is stepped.
            self.waiting_for_records = True
            return max(self.next_ms + self.profile.auto_commit_interval_ms, self.paused_until_ms)
        self.waiting_for_records = False
        return max(self.next_ms, self.paused_until_ms)

    def _waits_for_records(self) -> bool:
        """Whether a poll now would only find nothing: the last batch processed and committed as the
        profile says, the member settled without news, and no owned partition with records past the
        position below its leader's high watermark (or its leader unreachable)."""
        member = self.member
        if self.batch or not member.settled or member.has_events():
            return False
        profile = self.profile
        if profile.commit_mode != "auto" and self.batches_since_commit >= profile.commit_every_batches:
            return False  # a commit falls due at this poll
        positions, awaiting, topics = self.positions, self.awaiting, self.cluster.topics
        for tp in member.assignment:
            position = positions.get(tp)
            if position is None or tp in awaiting:
                continue  # waits for its committed offset: a member event wakes the loop
            partitions = topics.get(tp.topic)
            if partitions is None or not 0 <= tp.partition < len(partitions):
                continue
            partition = partitions[tp.partition]
            leader = partition.leader
            if (leader is not None and partition.logs[leader].hw > position
                    and self.reachable(self.name, leader)):
                return False
        return True

    def handle_timer(self, now: int) -> None:
        """One pass of the application's poll loop (the steps of the module doc)."""
        member = self.member
        self.last_poll_ms = now
        if self.producer is not None:
            if not self._transact(now):
                return  # still in the transaction
        else:
            self._finish_batch(now)
        self._take_events(now)
        if member.failed or member.closed:
            if member.failed and not self.failure_reported:
                self.failure_reported = True
                self.on_failed(self.name)
            self.next_ms = now + self.profile.poll_interval_ms
            return
        if self.sync_token is not None and now < self.sync_deadline_ms:
            return  # still blocked: get_timer() wakes the loop
        self.sync_token = None
        self._maybe_commit(now)
        if self.sync_token is not None:
            return
        member.on_app_poll(now, self.committable())
        self._take_events(now)
        fetched = self._fetch(now)
        processing_ms = fetched * self.profile.processing_ms_per_record
        self.next_ms = now + max(self.profile.poll_interval_ms, processing_ms)

    # -- steps ------------------------------------------------------------------------------------

    def _transact(self, now: int) -> bool:
        """Exactly-once mode: the batch fetched last poll is processed in one transaction; False while
        it is in progress (the loop stays blocked)."""
        producer = self.producer
        assert producer is not None
        if not producer.busy:
            batch = [(tp, first, end) for tp, first, end in self.batch
                     if self.positions.get(tp) == first and tp not in self.awaiting]
            self.batch = []
            if not batch or self.member.failed or self.member.closed:
                return True
            self.txn_batch = batch
            producer.begin(self.member, [(tp, first, self.batch_values[tp]) for tp, first, _end in batch],
                           self.output_partitions, self.batch_group_metadata, now)
        outcome = producer.poll(now)
        if outcome is None:
            return False
        generation = self.member.generation
        if outcome == COMMITTED:
            for tp, first, end in self.txn_batch:
                if self.positions.get(tp) == first and tp not in self.awaiting:
                    self.positions[tp] = end
                    self.history.record(Processed(now, self.name, generation.member_id,
                                                  generation.generation_id, tp, first, end))
        else:
            self._rewind(now)
        self.txn_batch = []
        return True

    def _rewind(self, now: int) -> None:
        """After an aborted (or undecided) transaction: start again from the committed offsets
        (OffsetFetch with require_stable waits out a transaction still being decided)."""
        member = self.member
        if member.failed or member.closed:
            return
        partitions = sorted(member.assignment)
        for tp in partitions:
            self.positions.pop(tp, None)
            self.awaiting.add(tp)
        if partitions:
            member.fetch_committed(partitions, now)

    def committable(self) -> Dict[TopicPartition, int]:
        return {tp: p for tp, p in self.positions.items() if tp not in self.awaiting}

    def _finish_batch(self, now: int) -> None:
        generation = self.member.generation
        for tp, first, end in self.batch:
            if self.positions.get(tp) == first and tp not in self.awaiting:
                self.positions[tp] = end
                self.history.record(Processed(now, self.name, generation.member_id, generation.generation_id,
                                              tp, first, end))
                self.batches_since_commit += 1
        self.batch = []

    def _take_events(self, now: int) -> None:
        member = self.member
        for event in member.take_events():
            if isinstance(event, PartitionsAssigned):
                self.awaiting.update(event.partitions)
            elif isinstance(event, PartitionsRevoked):
                revoked = {tp: p for tp, p in self.committable().items() if tp in event.partitions}
                # Exactly-once: what was processed is committed with its transaction already.
                if revoked and not member.failed and self.producer is None:
                    self.commit(revoked, now, sync=True)
                self._forget(event.partitions)
            elif isinstance(event, PartitionsLost):
                self._forget(event.partitions)
            elif isinstance(event, CommittedFetched) and event.error is None:
                self._resume(event, now)
            elif isinstance(event, CommittedFetched) and self.producer is not None:
                # A rewind's fetch failed: ask again for what still waits.
                waiting = sorted(self.awaiting & member.assignment)
                if waiting and not (member.failed or member.closed):
                    member.fetch_committed(waiting, now)
            elif isinstance(event, CommitCompleted) and event.token == self.sync_token:
                self.sync_token = None

    def _forget(self, partitions) -> None:
        for tp in partitions:
            self.positions.pop(tp, None)
            self.awaiting.discard(tp)

    def _resume(self, event: CommittedFetched, now: int) -> None:
        generation = self.member.generation
        for tp, committed in event.offsets.items():
            if tp in self.awaiting and tp in self.member.assignment:
                self.awaiting.discard(tp)
                position = 0 if committed is None or committed.offset < 0 else committed.offset
                self.positions[tp] = position
                self.history.record(Resumed(now, self.name, generation.member_id, generation.generation_id,
                                            tp, position, self.offset_fetch_sent_ms.get(tp, now)))

    def _maybe_commit(self, now: int) -> None:
        profile = self.profile
        if self.producer is not None:
            return  # exactly-once: offsets go with each transaction
        if profile.commit_mode == "auto" or self.batches_since_commit < profile.commit_every_batches:
            return
        positions = self.committable()
        if positions and self.member.state in _COMMITS_IN:
            self.commit(positions, now, sync=profile.commit_mode == "sync")

    def commit(self, offsets: Dict[TopicPartition, int], now: int, sync: bool) -> None:
        """Commit ``offsets``: ``sync`` blocks the loop until the answer, news or the deadline; an
        application of the ``retried`` mode has every commit retried until the same deadline, without
        waiting."""
        self.batches_since_commit = 0
        retried = sync or self.profile.commit_mode == RETRIED
        deadline_ms = now + self.profile.sync_commit_timeout_ms if retried else None
        token = self.member.commit_offsets(offsets, now, deadline_ms=deadline_ms)
        if sync and deadline_ms is not None:
            self.sync_token, self.sync_deadline_ms = token, deadline_ms

    def _fetch(self, now: int) -> int:
        member = self.member
        assignment = member.assignment
        if not assignment:
            return 0
        generation = member.generation
        if self.data is not None:
            self.batch_group_metadata = (generation.generation_id, generation.member_id, self.instance_id)
        room = self.profile.max_records
        positions, awaiting, topics = self.positions, self.awaiting, self.cluster.topics
        if assignment is not self._sorted_for:
            # A member's assignment is a frozenset replaced on every change: sort it once per change,
            # not at every poll.
            self._sorted_for, self._sorted_assignment = assignment, sorted(assignment)
        for tp in self._sorted_assignment:
            if room <= 0:
                break  # room only shrinks: nothing more is fetched this poll
            position = positions.get(tp)
            if position is None or tp in awaiting:
                continue
            partitions = topics.get(tp.topic)
            if partitions is None or not 0 <= tp.partition < len(partitions):
                continue  # an unknown partition (ClusterStateMachine.partition would refuse it)
            partition = partitions[tp.partition]
            leader = partition.leader
            if leader is None:
                continue
            data = self.data
            if data is not None and not self.reachable(self.name, leader):
                continue  # (the last stable offset's view is asked only of a reachable leader, as before)
            log = partition.logs[leader]
            hw = log.hw
            if data is not None:
                # read_committed: up to the last stable offset (the input has no transactions of its own).
                hw = min(hw, data.last_stable_offset(tp.topic, tp.partition) or 0)
            end = hw if hw < position + room else position + room
            # Plain reads ask the network last: most polls find nothing new, and the outcome is the same
            # in either order (both only skip the partition).
            if end <= position or (data is None and not self.reachable(self.name, leader)):
                continue
            room -= end - position
            self.batch.append((tp, position, end))
            if self.data is not None:
                self.batch_values[tp] = [e.payload for e in log.entries[position:end]]
            self.history.record(Fetched(now, self.name, generation.member_id, generation.generation_id,
                                        tp, position, end))
        return self.profile.max_records - room

    # -- the transport's observer -------------------------------------------------------------------

    def on_send(self, request: object, now_ms: int) -> None:
        if isinstance(request, OffsetFetchRequest):
            for tp in request.partitions or ():
                self.offset_fetch_sent_ms[tp] = now_ms
        elif isinstance(request, OffsetCommitRequest):
            state = self.member.state.name
            for commit in request.offsets:
                self.history.record(CommitSent(now_ms, self.name, request.member_id, request.generation_id,
                                               commit.topic_partition, commit.committed.offset, state))

    def on_complete(self, request: object, result: object, now_ms: int, handled_ms: int) -> None:
        if not isinstance(request, OffsetCommitRequest):
            return
        codes = ({p.topic_partition: p.error_code for p in result.partitions}
                 if isinstance(result, OffsetCommitResponse) else {})
        for commit in request.offsets:
            code = codes.get(commit.topic_partition)
            error = "TRANSPORT" if code is None else code.name
            self.history.record(CommitAnswered(now_ms, self.name, request.member_id, request.generation_id,
                                               commit.topic_partition, commit.committed.offset, error,
                                               handled_ms))


class Producer:
    """Appends ``batch`` records every ``interval_ms`` (acks=all), each to a partition its own stream
    picks."""

    def __init__(self, name: str, topic: str, cluster: ClusterStateMachine, history: History,
                 rng: random.Random, interval_ms: int, first_ms: int, stop_ms: int, batch: int = 1,
                 appends: Optional[List[int]] = None) -> None:
        self.batch = batch
        self.name = name
        self.topic = topic
        self.cluster = cluster
        self.history = history
        self.rng = rng
        self.interval_ms = interval_ms
        self.next_ms: Optional[int] = first_ms
        self.stop_ms = stop_ms
        self.sequence = 0
        self.refused = 0
        #: One TopicPartition per partition index, shared by every Appended event (immutable values).
        self._partition_keys: Dict[int, TopicPartition] = {}
        #: A counter (shared with other producers) bumped at every batch appended: what may move a
        #: high watermark, for the simulator's long-polling applications.
        self.appends = appends if appends is not None else [0]

    def get_timer(self) -> Optional[int]:
        return self.next_ms

    def due(self, now_ms: int) -> bool:
        return self.next_ms is not None and self.next_ms <= now_ms

    def handle_timer(self, now_ms: int) -> None:
        if self.next_ms is None or now_ms < self.next_ms:
            return
        topic = self.topic
        partitions = len(self.cluster.topics[topic])
        # Every record's partition is drawn first, in order, then each partition's records are
        # appended in one call: the logs, offsets and refusals are those of one append a record
        # (nothing between two appends of one batch moves a partition's leader or ISR), and the
        # history records them in the order drawn.
        drawn: List[Tuple[int, str]] = []
        by_partition: Dict[int, List[str]] = {}
        randrange = self.rng.randrange
        for _ in range(self.batch):
            index = randrange(partitions)
            payload = f"{self.name}-{self.sequence}"
            self.sequence += 1
            drawn.append((index, payload))
            by_partition.setdefault(index, []).append(payload)
        next_offset: Dict[int, int] = {}
        for index, payloads in by_partition.items():
            try:
                next_offset[index] = self.cluster.produce_many(topic, index, payloads)
            except ClusterError:
                self.refused += len(payloads)
        self.appends[0] += 1
        record, keys = self.history.record, self._partition_keys
        for index, payload in drawn:
            offset = next_offset.get(index)
            if offset is not None:
                next_offset[index] = offset + 1
                key = keys.get(index)
                if key is None:
                    key = keys[index] = TopicPartition(topic, index)
                record(Appended(now_ms, key, offset, payload))
        following = now_ms + self.interval_ms
        self.next_ms = following if following < self.stop_ms else None


def commit_error_is_fencing(error: str) -> bool:
    return error in (ErrorCode.ILLEGAL_GENERATION.name, ErrorCode.UNKNOWN_MEMBER_ID.name,
                     ErrorCode.FENCED_INSTANCE_ID.name, ErrorCode.REBALANCE_IN_PROGRESS.name,
                     ErrorCode.STALE_MEMBER_EPOCH.name, ErrorCode.FENCED_MEMBER_EPOCH.name)
