"""A small blocking consumer-group API for broker-less use (any Transport).

``GroupConsumer`` owns a pure member, a runner and a heartbeat thread.  It
does no fetching: ``poll`` drives the group protocol, runs the listener's
callbacks on the calling thread and returns the current assignment and the
events delivered.  The application tracks its positions with
``set_position`` so auto-commit and ``commit()`` know what to store.

``group_protocol="consumer"`` makes the member speak KIP-848's
ConsumerGroupHeartbeat (:mod:`kgroup.core.member.consumer`); the
coordinator then decides the session timeout, the heartbeat interval and
the assignment, so ``session_timeout_ms``, ``heartbeat_interval_ms`` and
``assignors`` are configuration errors with it (as in Kafka's ``ConsumerConfig``),
and ``group_remote_assignor`` names the server-side assignor to ask for.

``subscribe(pattern=...)`` subscribes by regex.  With ``group_protocol="consumer"``
the regex goes to the coordinator as ConsumerGroupHeartbeat's SubscribedTopicRegex
(RE2/J syntax, KIP-848: the coordinator matches it against the cluster's topics,
including topics created later); with the classic protocol the member matches
it against the topics ``update_metadata`` names (whole names, internal topics
excluded, as Java's consumer) and follows that topic list.
"""
from __future__ import annotations

import os
from typing import Iterable, Mapping, Optional, Sequence, Union

import attrs

from kgroup.core.member import (
    CommitCompleted,
    CommittedFetched,
    FatalError,
    Generation,
    GroupMember,
    MemberConfig,
    MemberContract,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kgroup.core.member.consumer import (
    CONSUMER,
    ConsumerProtocolConfig,
    ConsumerProtocolMember,
    check_group_protocol_settings,
)
from kgroup.core.member.consumer.member_id import RandomBytes
from kgroup.core.messages import OffsetAndMetadata
from kgroup.errors import ConfigError, KGroupError, MemberClosedError
from kgroup.io.heartbeat_thread import HeartbeatThread
from kgroup.io.clock import monotonic_ms
from kgroup.io.runner import MemberRunner, block_until
from kgroup.io.transport import Transport
from kgroup.values import TopicPartition


@attrs.frozen
class PollResult:
    assignment: frozenset
    events: tuple


def make_member(group_id: str, now_ms: int, group_protocol: str = "classic",
                assignors: Optional[Sequence] = None, group_remote_assignor: Optional[str] = None,
                random_bytes: RandomBytes = os.urandom, **config) -> MemberContract:
    """A pure member for ``group_protocol``; a setting that protocol does not take is a ConfigError.

    ``assignors`` None means kgroup's default, ``("range",)``, for the classic protocol;
    ``random_bytes`` makes a KIP-848 member's id (KIP-1082).
    """
    explicit = set(config) | ({"assignors"} if assignors is not None else set())
    protocol = check_group_protocol_settings(group_protocol, explicit, group_remote_assignor)
    if protocol == CONSUMER:
        unknown = sorted(set(config) - set(attrs.fields_dict(ConsumerProtocolConfig)))
        if unknown:
            raise ConfigError(f"{', '.join(unknown)}: not a setting of group_protocol='consumer'")
        consumer_config = ConsumerProtocolConfig(group_id=group_id,
                                                 group_remote_assignor=group_remote_assignor, **config)
        return ConsumerProtocolMember(consumer_config, now_ms, random_bytes=random_bytes)
    classic = MemberConfig(group_id=group_id, assignors=tuple(assignors or ("range",)), **config)
    return GroupMember(classic, now_ms)


class GroupConsumer:
    def __init__(self, transport: Transport, group_id: str, topics: Sequence[str] = (),
                 assignors: Optional[Sequence] = None, listener=None, clock=None,
                 partitions_per_topic: Optional[Mapping[str, int]] = None, group_protocol: str = "classic",
                 group_remote_assignor: Optional[str] = None, **config) -> None:
        clock = clock or monotonic_ms
        self._member: MemberContract = make_member(group_id, clock(), group_protocol, assignors,
                                                   group_remote_assignor, **config)
        self._config = self._member.config
        self._runner = MemberRunner(self._member, transport, clock)
        self._listener = listener
        self._positions: dict[TopicPartition, int] = {}
        self._committed: dict[TopicPartition, Optional[OffsetAndMetadata]] = {}
        self._commit_results: dict[int, CommitCompleted] = {}
        self._fetch_results: dict[int, CommittedFetched] = {}
        self._buffered: list = []
        self._closed = False
        if partitions_per_topic is not None:
            self._member.update_metadata(partitions_per_topic, self._runner.clock())
        if topics:
            self._member.subscribe(list(topics), self._runner.clock())
        self._heartbeat = HeartbeatThread(self._runner, name=f"kgroup-heartbeat-{group_id}")
        self._heartbeat.start()

    # -- queries ---------------------------------------------------------------

    @property
    def member(self) -> MemberContract:
        """The pure member (read-only use: state, generation)."""
        return self._member

    def assignment(self) -> frozenset:
        return self._member.assignment

    def set_position(self, partition: TopicPartition, offset: int) -> None:
        """The next offset the application will process (what auto-commit stores)."""
        self._positions[partition] = offset

    def update_metadata(self, partitions_per_topic: Mapping[str, int]) -> None:
        with self._runner.foreground() as member:
            member.update_metadata(partitions_per_topic, self._runner.clock())

    def subscribe(self, topics: Iterable[str] = (), pattern: Optional[str] = None) -> None:
        """Subscribe to ``topics``, or to the topics matching ``pattern`` (not both)."""
        topics = list(topics)
        if pattern is not None and topics:
            raise ConfigError("subscribe() takes topics or a pattern, not both")
        with self._runner.foreground() as member:
            if pattern is None:
                member.subscribe(topics, self._runner.clock())
            else:
                member.subscribe_pattern(pattern, self._runner.clock())

    # -- polling ---------------------------------------------------------------

    def poll(self, timeout_ms: int) -> PollResult:
        """Drive the group for up to ``timeout_ms``; run callbacks; return early after a rebalance settles.

        An exception raised by a listener callback is re-raised here once
        the member has recorded the callback as done.
        """
        self._check_open()
        if self._member.failed and self._member.last_error is not None:
            raise self._member.last_error
        runner = self._runner
        deadline_ms = runner.clock() + max(0, timeout_ms)
        delivered: list = []

        def settled_after_rebalance() -> bool:
            while True:
                self._check_heartbeat_thread()
                with runner.foreground() as member:
                    events = self._buffered + member.take_events()
                    self._buffered = []
                error = self._dispatch(events) if events else None
                delivered.extend(events)
                with runner.foreground() as member:
                    now = runner.clock()
                    member.on_app_poll(now, self._owned_positions())
                    runner.step(0)
                    more = member.has_events()
                    settled = member.settled
                if error is not None:
                    raise error
                fatal = next((e for e in events if isinstance(e, FatalError)), None)
                if fatal is not None:
                    raise fatal.error
                if not more:
                    rebalance_events = (PartitionsAssigned, PartitionsRevoked, PartitionsLost)
                    return settled and any(isinstance(e, rebalance_events) for e in delivered)

        block_until(runner, deadline_ms, settled_after_rebalance, wake_for_member=True)
        return PollResult(self._member.assignment, tuple(delivered))

    def _owned_positions(self) -> dict:
        owned = self._member.assignment
        return {tp: off for tp, off in self._positions.items() if tp in owned}

    def _dispatch(self, events: list) -> Optional[BaseException]:
        """Run callbacks in order; remember the first exception, keep going so the state stays whole."""
        error = None
        for event in events:
            try:
                self._dispatch_one(event)
            except Exception as exc:  # the app's exception, re-raised from poll
                error = error or exc
        return error

    def _dispatch_one(self, event) -> None:
        listener = self._listener
        if isinstance(event, CommitCompleted):
            self._commit_results[event.token] = event
        elif isinstance(event, CommittedFetched):
            self._fetch_results[event.token] = event
            self._committed.update(event.offsets)
            for tp, om in event.offsets.items():
                if om is not None and tp not in self._positions:
                    self._positions[tp] = om.offset
        elif isinstance(event, PartitionsRevoked):
            if listener is not None:
                listener.on_partitions_revoked(sorted(event.partitions))
        elif isinstance(event, PartitionsLost):
            for tp in event.partitions:
                self._positions.pop(tp, None)
            if listener is not None:
                # Kafka's default: a listener without on_partitions_lost treats loss as revocation.
                on_lost = getattr(listener, "on_partitions_lost", listener.on_partitions_revoked)
                on_lost(sorted(event.partitions))
        elif isinstance(event, PartitionsAssigned):
            if listener is not None:
                listener.on_partitions_assigned(sorted(event.partitions))

    # -- offsets ---------------------------------------------------------------

    def commit(self, offsets: Optional[Mapping[TopicPartition, Union[int, OffsetAndMetadata]]] = None,
               timeout_ms: int = 10_000, generation: Optional[Generation] = None) -> None:
        """Commit (default: the owned positions) and wait; raises CommitFailedError and friends.

        ``generation`` (classic protocol): the generation the offsets were read in, when it may
        have changed since; the commit is refused unless it is still the member's.
        """
        self._check_open()
        clock = self._runner.clock
        offsets = self._owned_positions() if offsets is None else offsets
        with self._runner.foreground() as member:
            token = member.commit_offsets(offsets, clock(), deadline_ms=clock() + timeout_ms,
                                          generation=generation)
        result = self._wait_for(self._commit_results, token, timeout_ms)
        if result.error is not None:
            raise result.error

    def committed(self, partitions: Sequence[TopicPartition], timeout_ms: int = 10_000) -> dict:
        self._check_open()
        with self._runner.foreground() as member:
            token = member.fetch_committed(list(partitions), self._runner.clock())
        result = self._wait_for(self._fetch_results, token, timeout_ms)
        if result.error is not None:
            raise result.error
        return dict(result.offsets)

    def _wait_for(self, results: dict, token: int, timeout_ms: int):
        runner = self._runner

        def take_results(member: MemberContract) -> None:
            for event in member.take_events():
                if isinstance(event, (CommitCompleted, CommittedFetched)):
                    self._dispatch_one(event)
                else:
                    self._buffered.append(event)  # rebalance callbacks run in poll()

        if not block_until(runner, runner.clock() + timeout_ms, lambda: token in results,
                           check=self._check_heartbeat_thread, after_step=take_results):
            raise KGroupError(f"no answer within {timeout_ms} ms")
        return results.pop(token)

    # -- closing ---------------------------------------------------------------

    def close(self, leave_group: Optional[bool] = None, timeout_ms: int = 5_000) -> None:
        """Commit (auto-commit), revoke, leave (dynamic) and stop the heartbeat thread, within the timeout."""
        if self._closed:
            return
        self._closed = True
        runner = self._runner
        deadline_ms = runner.clock() + timeout_ms
        with runner.foreground() as member:
            member.close(runner.clock(), leave_group, self._owned_positions())

        def closed() -> bool:
            with runner.foreground() as member:
                events = member.take_events()
                done = member.closed
            self._dispatch(events)
            if not done:
                with runner.foreground() as member:
                    # The callbacks ran: a KIP-848 member sends its leave only after them.
                    member.on_app_poll(runner.clock())
            return done

        try:
            block_until(runner, deadline_ms, closed)
        finally:
            self._heartbeat.stop(timeout_s=max(0.1, (deadline_ms - runner.clock()) / 1000))
            runner.transport.close()

    def __enter__(self) -> "GroupConsumer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise MemberClosedError("the consumer is closed")

    def _check_heartbeat_thread(self) -> None:
        if self._heartbeat.error is not None:
            raise self._heartbeat.error
