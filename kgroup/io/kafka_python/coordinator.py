"""``ConsumerCoordinator``: what kafka-python 3.0's ``KafkaConsumer`` calls on
its coordinator, implemented by kgroup's pure ``GroupMember``.

The member runs through kgroup's ``MemberRunner`` over a
``KafkaPythonTransport`` that shares the consumer's network client, and a
``HeartbeatThread`` keeps it alive between polls.  Rebalance events are
turned into ``SubscriptionState`` changes and listener callbacks on the
polling thread only (inside ``poll`` / ``close``): the listener contract is
``kgroup.io.kafka_python.rebalance_callbacks``, what the member learns of the
subscription and the metadata ``kgroup.io.kafka_python.metadata_feed``.

Every kgroup error that leaves this class - raised from a method kafka-python
calls, or handed to a commit future or callback - is first turned into its
kafka-python dual (``kgroup.io.kafka_python.errors``), so application code
catches it with ``kafka.errors`` classes as well as with ``kgroup.errors``.
"""
from __future__ import annotations

import collections
import copy
import functools
import os
from typing import Any, ClassVar, Optional

import kafka.errors as Errors
from kafka.future import Future
from kafka.structs import ConsumerGroupMetadata
from kafka.structs import MemberState as KMemberState
from kafka.structs import OffsetAndMetadata as KOffsetAndMetadata
from kafka.util import WeakMethod

from kgroup.core.member import (
    ClassicMemberState,
    CommitCompleted,
    CommittedFetched,
    FatalError,
    GroupMember,
    MemberConfig,
    MemberContract,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kgroup.core.member.consumer import (
    CONSUMER,
    ConsumerMemberState,
    ConsumerProtocolConfig,
    ConsumerProtocolMember,
    parse_group_protocol,
)
from kgroup.errors import KGroupError, MemberClosedError
from kgroup.io.heartbeat_thread import HeartbeatThread
from kgroup.io.kafka_python.errors import to_kafka_error
from kgroup.io.kafka_python.metadata_feed import MetadataFeed
from kgroup.io.kafka_python.offsets import to_commits
from kgroup.io.kafka_python.partitions import to_kafka_partition
from kgroup.io.kafka_python.rebalance_callbacks import RebalanceCallbacks
from kgroup.io.kafka_python.strategies import resolve_assignors
from kgroup.io.kafka_python.subscription import SubscriptionBridge
from kgroup.io.kafka_python.transport import KafkaPythonTransport
from kgroup.io.clock import monotonic_ms
from kgroup.io.runner import MemberRunner, block_until

_REBALANCING = (ClassicMemberState.PREPARING_REBALANCE, ClassicMemberState.COMPLETING_REBALANCE)
#: KIP-848 has no global barrier: a member keeps consuming what it owns while it reconciles, so
#: poll() fetches in these states (Java's consumer does; waiting for Stable would stall a member
#: whose new partitions are still being released by another one).
_KIP848_FETCHING = (ConsumerMemberState.STABLE, ConsumerMemberState.RECONCILING,
                    ConsumerMemberState.ACKNOWLEDGING)


def _kafka_errors(method):
    """Raise the kgroup errors escaping ``method`` as their kafka-python duals."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except KGroupError as exc:
            dual = self._kafka_error(exc)
            if dual is exc:
                raise
            raise dual.with_traceback(exc.__traceback__) from exc.__cause__

    return wrapper


def member_config(config: dict, cluster=None) -> MemberConfig:
    """kgroup's member settings from kafka-python's (names are the same).

    Pure: raises ``ConfigError`` naming the bad option, so ``KafkaConsumer``
    can check its settings before any thread or socket exists.
    """
    return MemberConfig(
        group_id=config["group_id"],
        session_timeout_ms=config["session_timeout_ms"],
        heartbeat_interval_ms=config["heartbeat_interval_ms"],
        max_poll_interval_ms=config["max_poll_interval_ms"],
        retry_backoff_ms=config["retry_backoff_ms"],
        group_instance_id=config["group_instance_id"],
        client_id=config["client_id"],
        assignors=tuple(resolve_assignors(config["assignors"], cluster)),
        enable_auto_commit=config["enable_auto_commit"],
        auto_commit_interval_ms=config["auto_commit_interval_ms"],
    )


def consumer_protocol_config(config: dict) -> ConsumerProtocolConfig:
    """The KIP-848 member's settings from kafka-python's (``group_protocol="consumer"``).

    Which settings the protocol rejects is checked on the ones the application passed
    (``KafkaConsumer``); here the defaults of the others are simply not used.
    """
    return ConsumerProtocolConfig(
        group_id=config["group_id"],
        group_instance_id=config["group_instance_id"],
        client_id=config["client_id"],
        max_poll_interval_ms=config["max_poll_interval_ms"],
        retry_backoff_ms=config["retry_backoff_ms"],
        group_remote_assignor=config["group_remote_assignor"],
        enable_auto_commit=config["enable_auto_commit"],
        auto_commit_interval_ms=config["auto_commit_interval_ms"],
    )


class ConsumerCoordinator:
    # kafka-python's config dicts mix ints, strings, tuples and None under known keys.
    DEFAULT_CONFIG: ClassVar[dict[str, Any]] = {
        "group_id": "kafka-python-default-group",
        "group_instance_id": None,
        "session_timeout_ms": 45_000,
        "heartbeat_interval_ms": 3_000,
        "max_poll_interval_ms": 300_000,
        "request_timeout_ms": 30_000,
        "retry_backoff_ms": 100,
        "enable_auto_commit": True,
        "auto_commit_interval_ms": 5_000,
        "default_offset_commit_callback": None,
        "assignors": ("range",),
        "exclude_internal_topics": True,
        "client_id": "kgroup",
        "group_protocol": "classic",
        "group_remote_assignor": None,
    }

    @_kafka_errors
    def __init__(self, client, subscription, metrics=None, **configs) -> None:
        self.config = copy.copy(self.DEFAULT_CONFIG)
        for key in self.config:
            if key in configs:
                self.config[key] = configs[key]
        self._client = client
        self._cluster = client.cluster
        self._net = client._manager._net
        self._subscription = subscription
        self.completed_offset_commits: collections.deque = collections.deque()
        self._pending_commits: dict[int, tuple] = {}
        self._results: dict[int, object] = {}
        self._buffered: list = []
        self._closed = False
        self._member: Optional[MemberContract] = None
        if self.config["group_id"] is None:
            return
        self._consumer_protocol = parse_group_protocol(self.config["group_protocol"]) == CONSUMER
        if self._consumer_protocol:
            classic_config: Optional[MemberConfig] = None
            self._member = ConsumerProtocolMember(consumer_protocol_config(self.config), monotonic_ms(),
                                                  random_bytes=os.urandom)
        else:
            classic_config = member_config(self.config, self._cluster)
            self._member = GroupMember(classic_config, monotonic_ms())
        transport = KafkaPythonTransport(client, request_timeout_ms=self.config["request_timeout_ms"])
        self._runner = MemberRunner(self._member, transport)
        self._metadata = MetadataFeed(subscription, self._cluster, self._runner,
                                      consumer_protocol=self._consumer_protocol,
                                      exclude_internal_topics=self.config["exclude_internal_topics"])
        self._callbacks = RebalanceCallbacks(SubscriptionBridge(subscription, self._net), classic_config,
                                             self._metadata.server_resolves_pattern)
        self._heartbeat = HeartbeatThread(self._runner, name=f"kgroup-heartbeat-{self.config['group_id']}")
        self._heartbeat.start()
        self._cluster.add_listener(WeakMethod(self._handle_metadata_update))

    # -- kafka-python surface: state ------------------------------------------

    @property
    def group_id(self):
        return self.config["group_id"]

    @property
    def coordinator_id(self):
        return None if self._member is None else self._member.coordinator_id

    def coordinator(self):
        return self.coordinator_id

    def coordinator_unknown(self) -> bool:
        return self.coordinator_id is None

    def need_rejoin(self) -> bool:
        return self._member is not None and self._member.rejoin_needed

    @_kafka_errors
    def request_rejoin(self) -> None:
        if self._member is not None:
            with self._runner.foreground() as member:
                member.request_rejoin("requested by the consumer")

    def group_metadata(self) -> ConsumerGroupMetadata:
        if self._member is None:
            return ConsumerGroupMetadata(group_id=None)
        gen = self._member.generation
        state = {ClassicMemberState.STABLE: KMemberState.STABLE,
                 ClassicMemberState.UNJOINED: KMemberState.UNJOINED,
                 ConsumerMemberState.STABLE: KMemberState.STABLE,
                 ConsumerMemberState.UNSUBSCRIBED: KMemberState.UNJOINED}.get(
            self._member.state, KMemberState.REBALANCING)
        return ConsumerGroupMetadata(self.group_id, gen.generation_id, gen.member_id,
                                     self.config["group_instance_id"], state)

    def time_to_next_poll(self) -> float:
        if self._member is None:
            return float("inf")
        return self._runner.wait_ms(self.config["heartbeat_interval_ms"]) / 1000

    # -- polling ----------------------------------------------------------------

    @_kafka_errors
    def poll(self, timeout_ms=None) -> bool:
        """Drive the group; True once the member is stable (or needs no group); a KIP-848 member also
        while it reconciles (it keeps its partitions meanwhile)."""
        if self._member is None:
            return True
        self._invoke_completed_offset_commit_callbacks()
        if not self._subscription.partitions_auto_assigned():
            return True
        runner = self._runner
        self._metadata.sync_subscription()
        deadline = None if timeout_ms is None else runner.clock() + max(0, int(timeout_ms))

        def settled() -> bool:
            while True:
                self._check_heartbeat_thread()
                with runner.foreground() as member:
                    events = self._buffered + member.take_events()
                    self._buffered = []
                error = self._dispatch(events)
                with runner.foreground() as member:
                    member.on_app_poll(runner.clock(), self._positions())
                    runner.step(0)
                    more = member.has_events()
                    stable = member.settled or (self._consumer_protocol and member.state in _KIP848_FETCHING)
                    failed = member.failed and not more
                if error is not None:
                    raise error
                if failed:
                    # The fatal error itself was raised by an earlier poll; a failed
                    # member never settles, so say so instead of polling in vain.
                    raise MemberClosedError(f"the group member failed: {member.last_error}")
                if not more:
                    return stable

        return block_until(runner, deadline, settled, wake_for_member=True)

    def _handle_metadata_update(self, cluster) -> None:
        self._metadata.on_cluster_update(cluster)  # a cluster listener: kafka-python's IO thread

    def _positions(self) -> dict:
        return {tp: oam.offset for tp, oam in self._subscription.all_consumed_offsets().items()}

    def _dispatch(self, events: list) -> Optional[BaseException]:
        """Apply events in order; keep the first app/fatal error to raise after state is whole."""
        error = None
        for event in events:
            failure = None
            if isinstance(event, (PartitionsRevoked, PartitionsLost)):
                failure = self._callbacks.revoked(event)
            elif isinstance(event, PartitionsAssigned):
                failure = self._callbacks.assigned(event)
            elif isinstance(event, CommittedFetched):
                self._results[event.token] = event
                self._seek_committed(event)
            elif isinstance(event, CommitCompleted):
                self._complete_commit(event)
            elif isinstance(event, FatalError):
                failure = event.error
            if failure is not None and error is None:
                if isinstance(event, FatalError):
                    error = failure  # keeps its own __cause__ (e.g. a failing assignor's exception)
                else:
                    error = Errors.KafkaError("User rebalance callback throws an error")
                    error.__cause__ = failure
        return error

    def _seek_committed(self, event: CommittedFetched) -> None:
        if event.error is not None:
            return
        missing = set(self._subscription.missing_fetch_positions())
        for tp, oam in event.offsets.items():
            if oam is not None and tp in missing:
                self._subscription.seek(to_kafka_partition(tp), oam.offset)

    # -- offsets ----------------------------------------------------------------

    def _complete_commit(self, event: CommitCompleted) -> None:
        self._results[event.token] = event
        pending = self._pending_commits.pop(event.token, None)
        if pending is None:
            return
        future, callback, offsets = pending
        error = None if event.error is None else self._kafka_error(event.error)
        if error is None:
            future.success(None)
        else:
            future.failure(error)
        if callback is not None:
            self.completed_offset_commits.append((callback, offsets, error))

    def _invoke_completed_offset_commit_callbacks(self) -> None:
        while self.completed_offset_commits:
            callback, offsets, result = self.completed_offset_commits.popleft()
            callback(offsets, result)

    @_kafka_errors
    def commit_offsets_async(self, offsets, callback=None) -> Future:
        self._invoke_completed_offset_commit_callbacks()
        future = Future()
        if self._member is None:
            return future.failure(Errors.IllegalStateError("Requires group_id"))
        callback = callback or self.config["default_offset_commit_callback"]
        commits = {c.topic_partition: c.committed for c in to_commits(offsets)}
        if not commits:
            return future.success(None)
        with self._runner.foreground() as member:
            token = member.commit_offsets(commits, self._runner.clock())
        self._pending_commits[token] = (future, callback, offsets)
        return future

    @_kafka_errors
    def commit_offsets_sync(self, offsets, timeout_ms=None) -> None:
        self._invoke_completed_offset_commit_callbacks()
        commits = {c.topic_partition: c.committed for c in to_commits(offsets)}
        if not commits or self._member is None:
            return
        timeout_ms = self.config["request_timeout_ms"] if timeout_ms is None else timeout_ms
        clock = self._runner.clock
        with self._runner.foreground() as member:
            token = member.commit_offsets(commits, clock(), deadline_ms=clock() + timeout_ms)
        result = self._wait_for(token, timeout_ms)
        if result.error is not None:
            # Transient failures were retried until the timeout: KafkaTimeoutError, as in stock.
            raise self._kafka_error(result.error, timed_out=True)

    @_kafka_errors
    def maybe_auto_commit_offsets_now(self) -> None:
        if self._member is not None and self.config["enable_auto_commit"] and not self.coordinator_unknown():
            self.commit_offsets_async(self._subscription.all_consumed_offsets())

    @_kafka_errors
    def fetch_committed_offsets(self, partitions, timeout_ms=None) -> dict:
        if not partitions or self._member is None:
            return {}
        timeout_ms = self.config["request_timeout_ms"] if timeout_ms is None else timeout_ms
        with self._runner.foreground() as member:
            token = member.fetch_committed(list(partitions), self._runner.clock())
        result = self._wait_for(token, timeout_ms)
        if result.error is not None:
            raise result.error
        return {to_kafka_partition(tp): KOffsetAndMetadata(o.offset, o.metadata, o.leader_epoch)
                for tp, o in result.offsets.items() if o is not None}

    @_kafka_errors
    def refresh_committed_offsets_if_needed(self, timeout_ms=None) -> bool:
        missing = set(self._subscription.missing_fetch_positions())
        if not missing:
            return True
        try:
            offsets = self.fetch_committed_offsets(missing, timeout_ms)
        except Errors.KafkaTimeoutError:
            return False
        for tp, oam in offsets.items():
            if tp in set(self._subscription.missing_fetch_positions()):
                self._subscription.seek(tp, oam.offset)
        return True

    def _wait_for(self, token: int, timeout_ms: int):
        runner = self._runner

        def take_results(member: MemberContract) -> None:
            for event in member.take_events():
                if isinstance(event, CommitCompleted):
                    self._complete_commit(event)
                elif isinstance(event, CommittedFetched):
                    self._results[event.token] = event
                else:
                    self._buffered.append(event)  # rebalance callbacks run in poll()

        if not block_until(runner, runner.clock() + timeout_ms, lambda: token in self._results,
                           check=self._check_heartbeat_thread, after_step=take_results):
            raise Errors.KafkaTimeoutError(f"no answer within {timeout_ms} ms")
        return self._results.pop(token)

    # -- leaving and closing ---------------------------------------------------

    @_kafka_errors
    def maybe_leave_group(self, reason=None, timeout_ms=None) -> None:
        if self._member is None:
            return
        with self._runner.foreground() as member:
            member.unsubscribe(self._runner.clock())
            events = member.take_events()
        self._dispatch(events)
        self._callbacks.left()
        if self._consumer_protocol:
            with self._runner.foreground() as member:
                # The revocation callbacks ran: the KIP-848 leave heartbeat may go now (Java's
                # unsubscribe returns once the callbacks completed and the leave is sent).
                member.on_app_poll(self._runner.clock())
                self._runner.step(0)

    @_kafka_errors
    def close(self, autocommit=True, timeout_ms=None) -> None:
        if self._closed or self._member is None:
            self._closed = True
            return
        self._closed = self._metadata.closed = True
        self._cluster.remove_listener(WeakMethod(self._handle_metadata_update))
        runner = self._runner
        timeout_ms = self.config["request_timeout_ms"] if timeout_ms is None else timeout_ms
        deadline = runner.clock() + timeout_ms
        positions = self._positions() if autocommit else None
        errors: list = []
        with runner.foreground() as member:
            member.close(runner.clock(), None, positions)

        def closed() -> bool:
            with runner.foreground() as member:
                events = member.take_events()
                done = member.closed and not member.has_in_flight()
            errors.append(self._dispatch(events))
            if not done:
                with runner.foreground() as member:
                    # The callbacks ran: a KIP-848 member sends its leave only after them.
                    member.on_app_poll(runner.clock())
            return done

        try:
            block_until(runner, deadline, closed)
        finally:
            self._heartbeat.stop(timeout_s=max(0.1, (deadline - runner.clock()) / 1000))
            runner.transport.close()
        error = next((e for e in errors if e is not None), None)
        if error is not None:
            raise error

    def _kafka_error(self, error: BaseException, timed_out: bool = False) -> BaseException:
        """``error`` as kafka-python's class too (``kgroup.io.kafka_python.errors``)."""
        member = getattr(self, "_member", None)
        state = None if member is None else member.state
        fatal = member.last_error if member is not None and member.failed else None
        return to_kafka_error(error, rebalancing=state in _REBALANCING, timed_out=timed_out, fatal=fatal)

    def _check_heartbeat_thread(self) -> None:
        if self._heartbeat.error is not None:
            raise self._heartbeat.error
