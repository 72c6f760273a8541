"""An in-memory Kafka cluster with group coordinators, for testing consumers under faults.

:class:`InMemoryKafka` joins the pieces: the replica-layer :class:`ClusterStateMachine`,
the coordinators hosted on ``__consumer_offsets`` leaders
(:class:`GroupHosting`) and an :class:`InProcessHub` that carries requests
from kgroup members to them.  Two ways to drive it:

- real clock (default): ``consumer(...)`` builds a :class:`GroupConsumer`
  with its own heartbeat thread; the hub fires timers and replication
  rounds from a background thread.  Close consumers (or the cluster) at the end.
- ``MockClock``: ``member(...)`` builds a pure member bound to the hub and
  ``run(ms)`` drives every member, the cluster and the coordinators with a
  :class:`~kgroup.testing.scheduler.Scheduler`, which jumps from deadline to
  deadline; each member's application polls every ``step_ms``.  Nothing
  happens between calls, so tests are deterministic.

Faults (``kill_broker``, ``isolate_member``, ...) apply under the hub's lock
and route whatever the failover answers.

Client data and transactions (issue 26, :mod:`kgroup.testing.in_memory_transactions`): ``produce`` and
``read`` (read_committed / read_uncommitted) records on topics; with ``transactions=True``, transaction
coordinators on ``__transaction_state`` leaders and ``transactional_producer(...)``, Kafka's
transactional producer with KIP-447's group metadata.
"""
from __future__ import annotations

import random
from typing import Callable, Dict, Iterable, Mapping, Optional, Sequence, Tuple

from kgroup.core.broker import DEFAULT_CLIENT_ID
from kgroup.core.cluster import ClusterStateMachine, ClusterConfig
from kgroup.core.cluster.group_hosting import GroupHosting, GroupHostingConfig
from kgroup.core.cluster.transaction_hosting import TransactionHosting, TransactionHostingConfig
from kgroup.core.cluster.transactional_data import TransactionalData
from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.core.messages import DescribeGroupsRequest, DescribeGroupsResponse
from kgroup.core.member import ClassicMemberState, MemberContract
from kgroup.core.member.consumer import ConsumerMemberState
from kgroup.errors import ConfigError
from kgroup.io.inprocess import InProcessHub, InProcessTransport
from kgroup.io.clock import MockClock, autojump, monotonic_ms
from kgroup.io.runner import MemberRunner
from kgroup.testing.in_memory_transactions import InMemoryDataMixin
from kgroup.testing.scheduler import Scheduler

#: The application poll cadence of ``member()``s under ``run``: a member counts
#: max.poll.interval.ms and moves on after its rebalance callbacks from these polls.
DEFAULT_APP_POLL_MS = 10


class _PollingApp:
    """The application loop of one ``member()``: take events (to ``on_events``), then poll."""

    def __init__(self, kafka: "InMemoryKafka", name: str, member: MemberContract, first_ms: int) -> None:
        self.kafka = kafka
        self.name = name
        self.member = member
        self.next_ms = first_ms

    def get_timer(self) -> Optional[int]:
        return self.next_ms

    def handle_timer(self, now_ms: int) -> None:
        self.next_ms = now_ms + self.kafka._app_poll_ms
        events = self.member.take_events()
        kafka = self.kafka
        on_events = kafka._on_events if kafka._driving else kafka.on_events
        if on_events is not None and events:
            on_events(self.name, events)
        self.member.on_app_poll(now_ms)


class InMemoryKafka(InMemoryDataMixin):
    def __init__(self, brokers: int = 3, *, replication_factor: int = 3, offsets_partitions: int = 50,
                 clock: Optional[MockClock] = None, group_load_time_ms: int = 100,
                 coordinator_config: Optional[GroupCoordinatorConfig] = None,
                 cluster_config: Optional[ClusterConfig] = None,
                 member_id_factory: Optional[Callable[[str], str]] = None,
                 listeners: Optional[Mapping[int, Tuple[str, int]]] = None,
                 transactions: bool = False,
                 transaction_config: Optional[TransactionHostingConfig] = None) -> None:
        """``listeners`` ({broker id: (host, port)}) is what FindCoordinator answers; it applies when
        ``cluster_config`` is not given (otherwise set ``ClusterConfig.listeners``).  ``transactions``
        (or a ``transaction_config``) hosts transaction coordinators too (``enable_transactions``)."""
        if brokers < 1:
            raise ConfigError(f"an in-memory cluster needs at least one broker, got {brokers}")
        if cluster_config is None:
            cluster_config = ClusterConfig(broker_ids=tuple(range(1, brokers + 1)),
                                           default_replication_factor=min(replication_factor, brokers),
                                           listeners=listeners or ())
        self.clock = clock
        self.cluster = ClusterStateMachine(cluster_config, now_ms=(clock or monotonic_ms)())
        hosting_config = GroupHostingConfig(
            offsets_topic_partitions=offsets_partitions,
            offsets_topic_replication_factor=replication_factor,
            group_load_time_ms=group_load_time_ms,
            coordinator=coordinator_config or GroupCoordinatorConfig(),
        )
        read_clock = clock or monotonic_ms
        self.hosting = GroupHosting(self.cluster, hosting_config, read_clock(),
                                    member_id_factory=member_id_factory)
        # On the real clock the hub's own thread fires timers and replication rounds.
        self.hub = InProcessHub(self.hosting, clock=read_clock, run_timers=clock is None)
        self._runners: Dict[str, MemberRunner] = {}
        self._consumers: list = []
        self._app_poll_ms = DEFAULT_APP_POLL_MS
        #: Where members' events go while the cluster runs and run() was given no ``on_events`` (a
        #: transactional producer's blocking call runs the cluster too); None drops them.
        self.on_events: Optional[Callable[[str, list], None]] = None
        self._on_events: Optional[Callable[[str, list], None]] = None
        self._driving = False
        self.scheduler: Optional[Scheduler] = None
        if clock is not None:
            self.scheduler = Scheduler(clock)
            self.scheduler.add_timers(self.hub)
        #: Records and markers on the cluster's partitions; the transaction coordinators once enabled.
        self.data = TransactionalData(self.cluster)
        self.transactions: Optional[TransactionHosting] = None
        self._round_robin: dict = {}
        if transactions or transaction_config is not None:
            self.enable_transactions(transaction_config)

    # -- topics and connections --------------------------------------------------

    def create_topic(self, name: str, partitions: int, replication_factor: Optional[int] = None) -> None:
        def create(now_ms: int) -> list:
            self.cluster.create_topic(name, partitions, replication_factor)
            return []  # a new topic answers no parked request
        self.hub.apply(create)

    def delete_topic(self, name: str) -> None:
        """Delete the topic; every group's committed offsets of it go too (Kafka's
        onPartitionsDeleted), so a topic re-created with the name starts without them."""
        self.hub.apply(lambda now: self.hosting.delete_topic(name, now))

    def partitions_per_topic(self) -> Dict[str, int]:
        return {t: len(ps) for t, ps in self.cluster.topics.items() if not t.startswith("__")}

    def transport(self, client_id: str = DEFAULT_CLIENT_ID) -> InProcessTransport:
        """A connection to the cluster whose requests carry ``client_id`` in their context."""
        return self.hub.transport(client_id)

    def consumer(self, group_id: str, topics: Sequence[str], **config):
        """A threaded :class:`GroupConsumer` on this cluster (real clock only)."""
        if self.clock is not None:
            raise ConfigError("consumer() needs the real clock; with a MockClock use member() and run()")
        from kgroup.io.group_consumer import GroupConsumer

        consumer = GroupConsumer(self.transport(config.get("client_id", DEFAULT_CLIENT_ID)), group_id, topics,
                                 partitions_per_topic=self.partitions_per_topic(), **config)
        self._consumers.append(consumer)
        return consumer

    def member(self, name: str, group_id: str, topics: Sequence[str], **config) -> MemberContract:
        """A pure member named ``name`` that ``run()`` drives (MockClock only).

        ``group_protocol="consumer"`` makes a KIP-848 member; its member id is drawn from a random
        source seeded with ``name``, so a run replays exactly.
        """
        from kgroup.io.group_consumer import make_member

        clock, scheduler = self._mock_clock_and_scheduler("member()")
        if name in self._runners:
            raise ConfigError(f"a member named {name!r} already exists")
        seeded = random.Random(name)
        member = make_member(group_id, clock(),
                             random_bytes=lambda n: bytes(seeded.getrandbits(8) for _ in range(n)), **config)
        member.subscribe(list(topics), clock())
        member.update_metadata(self.partitions_per_topic(), clock())
        runner = MemberRunner(member, self.transport(member.config.client_id), clock)
        self._runners[name] = runner
        scheduler.add_member(name, runner, _PollingApp(self, name, member, clock()))
        return member

    def _mock_clock_and_scheduler(self, what: str) -> Tuple[MockClock, Scheduler]:
        # The constructor makes the scheduler exactly when it is given a MockClock.
        if self.clock is None or self.scheduler is None:
            raise ConfigError(f"{what} needs a MockClock; on the real clock use consumer()")
        return self.clock, self.scheduler

    def members(self) -> Dict[str, MemberContract]:
        return {name: runner.member for name, runner in self._runners.items()}

    def remove_member(self, name: str, leave_group: Optional[bool] = None) -> None:
        """Close a pure member (leaving the group if dynamic) and stop driving it."""
        clock, _scheduler = self._mock_clock_and_scheduler("remove_member()")
        runner = self._runners.pop(name)
        self._stop_driving(name)
        runner.member.close(clock(), leave_group)

        def visit() -> None:
            runner.step(0)
            self.hub.handle_timer(clock())

        # Every 10 ms for at most a second, until the member has left.
        autojump(clock, clock() + 100 * 10, visit, lambda end_ms: clock() + 10,
                 done=lambda: runner.member.closed)
        runner.transport.close()

    def crash_member(self, name: str) -> None:
        """The member stops without a word (its process died)."""
        self._runners.pop(name).transport.close()
        self._stop_driving(name)

    def _stop_driving(self, name: str) -> None:
        if self.scheduler is not None:
            self.scheduler.remove_member(name)

    # -- driving (MockClock) ---------------------------------------------------------

    def run(self, duration_ms: int, step_ms: int = 10,
            on_events: Optional[Callable[[str, list], None]] = None) -> None:
        """Advance the mock clock by ``duration_ms``, driving every member and the cluster at each
        instant something is due; each member's application polls every ``step_ms``."""
        scheduler = self._drive("run()", step_ms, on_events)
        try:
            scheduler.run_for(duration_ms)
        finally:
            self._on_events, self._driving = None, False

    def run_until(self, condition: Callable[[], bool], limit_ms: int = 60_000, step_ms: int = 10,
                  on_events: Optional[Callable[[str, list], None]] = None) -> int:
        """Run until ``condition()`` holds, checked every ``step_ms``; return the mock time it took;
        raise if it never does."""
        scheduler = self._drive("run_until()", step_ms, on_events)
        try:
            return scheduler.run_until(condition, limit_ms, check_every_ms=step_ms)
        finally:
            self._on_events, self._driving = None, False

    def _drive(self, what: str, step_ms: int, on_events: Optional[Callable[[str, list], None]]) -> Scheduler:
        if self.clock is None or self.scheduler is None:
            raise ConfigError(f"{what} needs a MockClock; on the real clock time passes by itself")
        if step_ms < 1:
            raise ConfigError(f"{what} needs an application poll cadence of at least 1 ms, got {step_ms}")
        if self._driving:
            raise ConfigError(f"{what} cannot run inside run()'s callbacks")
        self._app_poll_ms = step_ms
        self._on_events = on_events if on_events is not None else self.on_events
        self._driving = True
        return self.scheduler

    def group_settled(self, group_id: str, names: Optional[Iterable[str]] = None) -> bool:
        """The coordinator says Stable and every (named) member is Stable in its generation,
        talking to the current coordinator, with no rejoin pending.  ``names`` picks pure
        members made with ``member()``; without it, the group's members must be exactly the
        ones this cluster drives: its open ``consumer()``s and its ``member()``s of the group."""
        from kgroup.core.coordinator import GroupState

        if names is not None:
            views = [self._member_view(self._runners[n]) for n in names]
        else:
            views = [self._member_view(r) for r in self._runners.values()
                     if r.member.config.group_id == group_id]
            # A threaded consumer's member belongs to its polling and heartbeat threads: read it
            # under its runner's lock (a closed consumer has left, or will be expired).
            views += [self._member_view(c._runner) for c in self._consumers
                      if c.member.config.group_id == group_id and not c.member.closed]
        if not views:
            return False
        node = self.coordinator_node(group_id)
        if any(isinstance(view[0], ConsumerMemberState) for view in views):
            return self._consumer_group_settled(group_id, views, node, check_members=names is None)
        if not all(view[0] is ClassicMemberState.STABLE and not view[1] and view[2] == node
                   for view in views):
            return False
        generations = {view[3] for view in views}
        if len(generations) != 1 or self.group_state(group_id) is not GroupState.STABLE:
            return False
        if names is None:
            # A member whose leave was lost stays in the group until its session expires.
            described = self.describe_group(group_id)
            return described is not None and {m.member_id for m in described.members} == {
                view[4] for view in views}
        return True

    def _consumer_group_settled(self, group_id: str, views: list, node: Optional[int],
                                check_members: bool) -> bool:
        """group_settled for KIP-848 members: each Stable with nothing left to reconcile, talking to the
        current coordinator, whose consumer group is Stable with exactly these members."""
        from kgroup.core.consumer_group.group import ConsumerGroupState

        if not all(view[0] is ConsumerMemberState.STABLE and view[2] == node for view in views):
            return False
        if self.group_state(group_id) is not ConsumerGroupState.STABLE:
            return False
        if not check_members:
            return True

        def member_ids(now_ms: int) -> Optional[frozenset]:
            coordinator = self.hosting.coordinator_for(group_id)
            group = None if coordinator is None else coordinator.consumer_group(group_id)
            return None if group is None else frozenset(group.members)

        return self.hub.query(member_ids) == {view[4] for view in views}

    @staticmethod
    def _member_view(runner: MemberRunner) -> tuple:
        """(state, rejoin needed, coordinator node, generation id, member id), read under the runner's
        lock; ``foreground()`` wakes a heartbeat thread blocked in its transport so the lock comes at once."""
        with runner.foreground() as member:
            return (member.state, member.rejoin_needed, member.coordinator_id,
                    member.generation.generation_id, member.member_id)

    # -- queries ---------------------------------------------------------------------

    def coordinator_node(self, group_id: str) -> Optional[int]:
        return self.hub.query(lambda now: self.hosting.coordinator_node(group_id))

    def group_state(self, group_id: str):
        return self.hub.query(lambda now: self.hosting.group_state(group_id))

    def describe_group(self, group_id: str):
        """The coordinator's DescribeGroups answer for ``group_id`` (None while it has none)."""
        def read(now_ms):
            coordinator = self.hosting.coordinator_for(group_id)
            if coordinator is None:
                return None
            result = coordinator.handle(None, DescribeGroupsRequest((group_id,)), now_ms)
            response = result.deliveries[0].response
            assert isinstance(response, DescribeGroupsResponse)
            return response.groups[0]
        return self.hub.query(read)

    # -- faults ----------------------------------------------------------------------

    def kill_broker(self, broker: int) -> None:
        self.hub.apply(lambda now: self.hosting.kill_broker(broker, now))

    def restart_broker(self, broker: int) -> None:
        self.hub.apply(lambda now: self.hosting.restart_broker(broker, now))

    def controlled_shutdown(self, broker: int) -> None:
        self.hub.apply(lambda now: self.hosting.controlled_shutdown(broker, now))

    def isolate_broker(self, broker: int) -> None:
        self.hub.apply(lambda now: self.hosting.isolate_broker(broker, now))

    def heal_broker(self, broker: int) -> None:
        self.hub.apply(lambda now: self.hosting.heal_broker(broker, now))

    def elect_preferred_leaders(self) -> None:
        self.hub.apply(lambda now: self.hosting.elect_preferred_leaders(now))

    def slow_follower(self, broker: int, fetch_interval_ms: Optional[int]) -> None:
        def slow(now_ms: int) -> list:
            self.cluster.slow_follower(broker, fetch_interval_ms)
            return []  # nothing fails over: replication only slows
        self.hub.apply(slow)

    def isolate_member(self, member) -> None:
        """Cut a consumer (``GroupConsumer`` or member name) off the network until ``heal_member``."""
        self._transport_of(member).isolate()

    def heal_member(self, member) -> None:
        self._transport_of(member).heal()

    def _transport_of(self, member) -> InProcessTransport:
        transport = self._runners[member].transport if isinstance(member, str) else member._runner.transport
        if not isinstance(transport, InProcessTransport):
            raise ConfigError(f"{member!r} is not connected to an in-memory cluster")
        return transport

    # -- teardown ----------------------------------------------------------------------

    def close(self) -> None:
        for consumer in self._consumers:
            try:
                consumer.close(timeout_ms=2_000)
            except Exception:  # a test may have closed it or left it fatal; teardown goes on
                pass
        for runner in self._runners.values():
            runner.transport.close()
        self._runners.clear()
        self.hub.close()

    def __enter__(self) -> "InMemoryKafka":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
