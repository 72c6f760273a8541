"""The deterministic simulator: one seed (or one schedule), one consumer group, one verdict.

Real kgroup members (:class:`~kgroup.core.member.GroupMember`) with
:class:`~kgroup.sim.app.ConsumerApp` applications, producers, the real
in-memory cluster with its coordinators (:class:`~kgroup.testing.InMemoryKafka`)
and the :class:`~kgroup.sim.network.SimNetwork` between them, on a
:class:`~kgroup.testing.MockClock` that the shared
:class:`~kgroup.testing.scheduler.Scheduler` moves to the next deadline.

Random streams, all derived from the seed by name (``random.Random`` hashes a
string seed with SHA-512, never with ``PYTHONHASHSEED``): ``config-<seed>``
(the assignor when the config says ``any``), ``faults-<seed>`` (the schedule),
``app-<seed>-<member>`` (each application's behaviour), ``producer-<seed>-<n>``
and ``network-<seed>``.  Removing a fault reshuffles none of them.

``run(seed_or_schedule, config)`` applies the faults at their times, heals
everything after the last, waits for the group to settle, lets the consumers
catch up, and checks: the ownership checks after every instant, the history
checks (:mod:`kgroup.sim.checker`) at the end, and the live-group checks here.
"""
from __future__ import annotations

import hashlib

import random
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union, cast

import attrs

from kgroup.core.cluster import BrokerState
from kgroup.core.consumer_group.group import ConsumerGroupState
from kgroup.core.consumer_group.member import MemberState as CoordinatorMemberState
from kgroup.core.coordinator import GroupCoordinatorConfig, GroupState
from kgroup.core.fsm import add_transition_sink, remove_transition_sink
from kgroup.core.member import ClassicMemberState, GroupMember, MemberConfig, MemberContract
from kgroup.core.member.consumer import (
    CLASSIC, CONSUMER, ConsumerMemberState, ConsumerProtocolConfig, ConsumerProtocolMember,
)
from kgroup.core.messages import OffsetFetchRequest, OffsetFetchResponse
from kgroup.errors import ConfigError
from kgroup.io.runner import MemberRunner
from kgroup.sim.app import ConsumerApp, Producer, draw_profile
from kgroup.sim.checker import (
    Overlap, OwnershipChecker, Violation, check_exactly_once, check_history, check_sticky_moves, coverage,
    last_acknowledged,
)
from kgroup.sim.deployment import Deployment
from kgroup.sim.eos_hosting import ExactlyOnceHosting
from kgroup.sim.history import (
    CoordinatorMoved, FaultApplied, History, MemberFailed, MemberStopped, Transition,
)
from kgroup.sim.network import SimNetwork, NetworkConfig
from kgroup.sim.schedule import Fault, FaultPlan, Schedule, generate_schedule
from kgroup.io.clock import MockClock, autojump
from kgroup.testing.in_memory_kafka import InMemoryKafka
from kgroup.testing.scheduler import EventScheduler
from kgroup.values import TopicPartition

__all__ = ["ASSIGNORS", "ASSIGNOR_MIXES", "CAMPAIGN_SHAPE", "GROUP_PROTOCOLS", "PROCESSING_MODES",
           "SERVER_ASSIGNORS", "SimConfig", "Verdict", "run", "run_seed"]

GROUP = "sim"
TOPIC = "events"
#: The second topic a ``resubscribe`` fault adds to a member's subscription.
AUX_TOPIC = "audit"
#: ``plain``: applications commit offsets as their profile says; ``transactional``: each batch is
#: processed in a transaction with its offsets (kgroup.sim.eos).
PROCESSING_MODES = ("plain", "transactional")
#: Exactly-once mode: the records one poll returns at most (Kafka's max.poll.records default).
EOS_MAX_RECORDS = 500
ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
#: The coordinator's assignors of the consumer protocol (KIP-848), named by ``group_remote_assignor``.
SERVER_ASSIGNORS = ("uniform", "range")
GROUP_PROTOCOLS = (CLASSIC, CONSUMER)
#: How long a supervisor (systemd, Kubernetes) waits before it restarts an application that exited on
#: a fatal error of its member.
SUPERVISOR_RESTART_MS = 1_000
#: Groups whose members list different assignors.  ``upgrade``: the rolling upgrade from eager to
#: cooperative that Kafka documents (KIP-429): members alternate between listing
#: ``("cooperative-sticky", "range")`` (the first bounce: eager, since range is) and
#: ``("cooperative-sticky",)`` (the second bounce: cooperative); the group votes cooperative-sticky.
ASSIGNOR_MIXES: Dict[str, Tuple[Tuple[str, ...], ...]] = {
    "upgrade": (("cooperative-sticky", "range"), ("cooperative-sticky",)),
}


#: ``kgroup campaign``'s default shape (``kgroup simulate`` keeps :class:`SimConfig`'s): a small group over
#: a short run is where faults are densest.  Measured (docs/simulator.md, *Performance*): it covers several
#: times more faults a CPU-second than 5 members, 12 partitions and 60 s, whose long fault-free stretches
#: only replay the same steady state.
CAMPAIGN_SHAPE: Dict[str, int] = {"members": 3, "partitions": 6, "duration_ms": 10_000, "max_faults": 5}


@attrs.frozen
class SimConfig:
    members: int = 5
    partitions: int = 12
    #: One of :data:`ASSIGNORS`, a name of :data:`ASSIGNOR_MIXES`, or ``any`` (one of :data:`ASSIGNORS`
    #: drawn from the seed's config stream); with ``group_protocol="consumer"`` one of
    #: :data:`SERVER_ASSIGNORS` (or ``any``: one of those).
    assignor: str = "any"
    #: ``classic`` (JoinGroup/SyncGroup, client-side assignors) or ``consumer`` (KIP-848: members
    #: heartbeat ConsumerGroupHeartbeat and the coordinator assigns).  With ``consumer``, the session
    #: timeout and heartbeat interval below are the coordinator's group settings, as in Kafka.
    group_protocol: str = CLASSIC
    static: bool = False
    #: ``auto``, ``sync``, ``async``, ``mixed`` (each application draws one of those three) or
    #: ``retried`` (see :mod:`kgroup.sim.app`).
    commit_mode: str = "mixed"
    processing_ms_per_record: int = 1
    #: Simulated time with producers running and faults striking (faults in ``[2 s, duration - 5 s]``).
    duration_ms: int = 60_000
    #: ``mixed``, ``static-bounce`` (static members, bounces only) or ``none``.
    faults: str = "mixed"
    max_faults: int = 8
    brokers: int = 3
    producers: int = 2
    produce_interval_ms: int = 100
    produce_batch: int = 5
    session_timeout_ms: int = 1_000
    heartbeat_interval_ms: int = 200
    max_poll_interval_ms: int = 3_000
    network: NetworkConfig = NetworkConfig()
    #: Fault kinds drawn only on request (``freeze``), drawn besides the others (docs/simulator.md).
    extra_faults: Tuple[str, ...] = ()
    #: One of :data:`PROCESSING_MODES`.
    processing: str = "plain"
    #: Plain consumers long-poll (issue 28): a poll that would find nothing blocks until records arrive,
    #: the member has news, or the application's auto-commit interval passes (docs/simulator.md, *The
    #: application*).  Off by default: it removes 13 % of the instants but no CPU time (the polls it
    #: saves are the cheapest instants), and would change every seed's history.
    long_poll: bool = False
    #: A rolling restart (:mod:`kgroup.sim.rollout`): every member restarts once, one by one, into this
    #: group protocol; ``""``: none.  The group's own protocol is a plain redeploy; the other one is the
    #: online migration (KIP-848: ``consumer`` upgrades a classic group, ``classic`` downgrades).
    rolling_restart_to: str = ""
    #: The restarted members' assignor when the protocol changes: a server assignor for ``consumer``
    #: (default ``uniform``), a classic one for ``classic`` (required).
    rolling_restart_assignor: str = ""

    def __attrs_post_init__(self) -> None:
        for name, minimum in (("members", 1), ("partitions", 1), ("brokers", 1), ("duration_ms", 1),
                              ("max_faults", 0), ("processing_ms_per_record", 0)):
            if getattr(self, name) < minimum:
                raise ConfigError(f"{name} must be >= {minimum}, got {getattr(self, name)}")
        if self.group_protocol not in GROUP_PROTOCOLS:
            raise ConfigError(f"group_protocol must be one of {', '.join(GROUP_PROTOCOLS)}, "
                              f"got {self.group_protocol!r}")
        names = SERVER_ASSIGNORS if self.group_protocol == CONSUMER else ASSIGNORS + tuple(ASSIGNOR_MIXES)
        if self.assignor != "any" and self.assignor not in names:
            raise ConfigError(f"assignor {self.assignor!r} is not one of {', '.join(names)} (group_protocol "
                              f"{self.group_protocol!r})")
        if self.processing not in PROCESSING_MODES:
            raise ConfigError(f"processing must be one of {', '.join(PROCESSING_MODES)}, "
                              f"got {self.processing!r}")
        self.fault_plan()  # refuses an unknown extra fault kind now, not when a run draws its schedule
        self._check_rolling_restart()

    def _check_rolling_restart(self) -> None:
        if not self.rolling_restart_to:
            if self.rolling_restart_assignor:
                raise ConfigError("rolling_restart_assignor needs rolling_restart_to")
            return
        if self.rolling_restart_to not in GROUP_PROTOCOLS:
            raise ConfigError(f"rolling_restart_to must be one of {', '.join(GROUP_PROTOCOLS)} (or empty), "
                              f"got {self.rolling_restart_to!r}")
        if self.static or self.faults == "static-bounce":
            # A static classic member does not leave on close; its consumer-protocol successor would be
            # refused UNRELEASED_INSTANCE_ID until the session expired: not the rollout simulated here.
            raise ConfigError("a rolling restart is simulated with dynamic members only")
        if self.migrates:
            names = SERVER_ASSIGNORS if self.rolling_restart_to == CONSUMER else ASSIGNORS
            if self.target_assignor not in names:
                raise ConfigError(f"rolling_restart_assignor {self.rolling_restart_assignor!r} is not one of "
                                  f"{', '.join(names)} (rolling_restart_to {self.rolling_restart_to!r})")
        elif self.rolling_restart_assignor:
            raise ConfigError("rolling_restart_assignor is for a rolling restart into the other protocol")

    @property
    def migrates(self) -> bool:
        """Whether the rolling restart moves the group to the other protocol (online migration)."""
        return bool(self.rolling_restart_to) and self.rolling_restart_to != self.group_protocol

    @property
    def final_protocol(self) -> str:
        """The protocol every member speaks once the rolling restart (if any) is over."""
        return self.rolling_restart_to or self.group_protocol

    @property
    def target_assignor(self) -> str:
        """The assignor of the members a migration restarts (the group's own without one)."""
        if not self.migrates:
            return self.assignor
        if self.rolling_restart_to == CONSUMER:
            return self.rolling_restart_assignor or "uniform"
        return self.rolling_restart_assignor

    @property
    def consumer_protocol(self) -> bool:
        return self.group_protocol == CONSUMER

    @property
    def transactional(self) -> bool:
        return self.processing == "transactional"

    def coordinator_config(self) -> GroupCoordinatorConfig:
        """Short timeouts for both protocols: a classic member sends its own session timeout, a
        consumer group takes the coordinator's (Kafka's group.consumer.session.timeout.ms)."""
        return GroupCoordinatorConfig(
            group_min_session_timeout_ms=100, group_initial_rebalance_delay_ms=0,
            consumer_group_session_timeout_ms=self.session_timeout_ms,
            consumer_group_heartbeat_interval_ms=self.heartbeat_interval_ms)

    @property
    def settle_bound_ms(self) -> int:
        """After the last fault: a few rebalance rounds (each within max.poll.interval) plus the
        session expiry of members that crashed and the coordinator's load."""
        return 6 * self.max_poll_interval_ms + 2 * self.session_timeout_ms

    def member_names(self) -> Tuple[str, ...]:
        return tuple(f"m{i}" for i in range(self.members))

    def fault_plan(self) -> FaultPlan:
        window_ms = (2_000, max(2_000, self.duration_ms - 5_000))
        return FaultPlan(self.member_names(), tuple(range(1, self.brokers + 1)), TOPIC,
                         self.static or self.faults == "static-bounce", window_ms,
                         self.max_faults, self.session_timeout_ms, self.max_poll_interval_ms, self.faults,
                         self.extra_faults)


@attrs.frozen(eq=False)
class Verdict:
    seed: int
    config: SimConfig
    assignor: str
    schedule: Schedule
    violations: Tuple[Violation, ...]
    overlaps: Tuple[Overlap, ...]
    coverage: Dict[str, int]
    history: History
    simulated_ms: int

    @property
    def ok(self) -> bool:
        return not self.violations

    def checks_failed(self) -> set:
        return {v.check for v in self.violations}

    def digest(self) -> str:
        """SHA-256 of everything the run produced: the history's text, the violations, the coverage,
        the overlaps (sorted: their order follows frozenset iteration), the simulated time, the
        assignor and the schedule.  Two runs with one digest simulated the same thing."""
        text = "\n".join([
            self.history.format(),
            repr(sorted(str(v) for v in self.violations)),
            repr(sorted(self.coverage.items())),
            repr(sorted((str(o.partition), o.members, o.start_ms, o.end_ms) for o in self.overlaps)),
            str(self.simulated_ms), self.assignor, self.schedule.to_text()])
        return hashlib.sha256(text.encode()).hexdigest()

    def describe(self) -> str:
        protocol = " (KIP-848)" if self.config.consumer_protocol else ""
        if self.config.transactional:
            protocol += " exactly-once"
        if self.config.rolling_restart_to:
            protocol += (f", rolling restart into {self.config.rolling_restart_to} "
                         f"({self.config.target_assignor if self.config.migrates else 'same protocol'})")
        lines = [f"seed {self.seed}: {self.config.members} members, {self.config.partitions} partitions, "
                 f"{self.assignor}{protocol}{' static' if self.config.static else ''}, "
                 f"{len(self.schedule.faults)} faults, "
                 f"{self.simulated_ms} ms simulated: {'OK' if self.ok else 'VIOLATED'}"]
        lines += [f"  ! {v}" for v in self.violations[:20]]
        if self.overlaps:
            longest = max(o.duration_ms for o in self.overlaps)
            lines.append(f"  {len(self.overlaps)} overlap(s) the protocol allows (one owner cut off), "
                         f"longest {longest} ms")
        return "\n".join(lines)


#: The state machines whose transitions the history records (coverage), by their state type.
_MACHINE_KINDS = {ClassicMemberState: "member", GroupState: "group", ConsumerMemberState: "member",
                  ConsumerGroupState: "group", CoordinatorMemberState: "coordinator member"}


def _broker_key(node_id: Optional[int]) -> int:
    """The network's key of a request's broker (0: any broker, a bootstrap request)."""
    return node_id or 0


class _FaultEvent:
    """A scheduled fault (a named callable, so the scheduler's queue stays printable)."""

    def __init__(self, simulation: "_Simulation", fault: Fault, index: int) -> None:
        self.simulation = simulation
        self.fault = fault
        self.index = index

    def __call__(self, now_ms: int) -> None:
        self.simulation.apply(self.fault, self.index)


class _Simulation:
    def __init__(self, seed: int, config: SimConfig, schedule: Schedule) -> None:
        self.seed = seed
        self.config = config
        self.schedule = schedule
        choices = SERVER_ASSIGNORS if config.consumer_protocol else ASSIGNORS
        self.assignor = (random.Random(f"config-{seed}").choice(choices) if config.assignor == "any"
                         else config.assignor)
        self.static = config.static or config.faults == "static-bounce"
        self.clock = MockClock(0)
        ids = iter(range(10**6))
        self.kafka = InMemoryKafka(config.brokers, offsets_partitions=3, clock=self.clock,
                                   coordinator_config=config.coordinator_config(),
                                   member_id_factory=lambda prefix: f"{prefix}-{next(ids)}")
        self.kafka.create_topic(TOPIC, config.partitions)
        self.kafka.create_topic(AUX_TOPIC, 2)
        self.cluster = self.kafka.cluster
        self.history = History()
        self.network = SimNetwork(seed, config.network)
        self.scheduler = EventScheduler(self.clock)
        # The simulation reaches the cluster only through the hub: its deadline can wait for a change.
        self.kafka.hub.cache_timer = True
        # ... from this one thread: no locks on a request's way (InProcessHub.drive_single_threaded).
        self.kafka.hub.drive_single_threaded()
        self.scheduler.add_timers(self.kafka.hub)
        #: The producers' batches appended so far (one counter they share; see _wake_long_polls).
        self._appends = [0]
        self.producers = [Producer(f"p{i}", TOPIC, self.cluster, self.history,
                                   random.Random(f"producer-{seed}-{i}"), config.produce_interval_ms, i,
                                   config.duration_ms, config.produce_batch, appends=self._appends)
                          for i in range(config.producers)]
        for producer in self.producers:
            self.scheduler.add_timers(producer)
        self.scheduler.add_timers(self.network)
        self.ownership = OwnershipChecker(self.history)
        self.scheduler.after_instant.append(self._after_instant)
        self.apps: Dict[str, ConsumerApp] = {}
        #: Each app's member by name, kept with ``apps`` (start, stop): the ownership look's question at
        #: every touched instant, without a dict built each time.
        self._members_by_name: Dict[str, Any] = {}
        self.violations: List[Violation] = []
        self._failovers_seen = 0
        #: What last woke the long-polling applications: the cluster's replication rounds and the
        #: producers' appends (what moves a high watermark, besides faults).
        self._rounds_seen = self._appends_seen = -1
        self._acknowledged_at_move: Optional[tuple] = None
        #: Processes started so far per member name: a restarted KIP-848 member makes a new member id.
        self._incarnations: Dict[str, int] = {}
        #: Members whose application exited on a fatal error and waits for its supervisor's restart.
        self.restarting: set = set()
        #: Exactly-once mode (None otherwise): transaction coordinators, output, producers.
        self.eos = None if not config.transactional else ExactlyOnceHosting(
            self.kafka, self.network, self.scheduler, self.clock, self.history, GROUP, config.partitions,
            config.max_poll_interval_ms, self.committed_offsets, self._reachable, _broker_key)
        #: Each member's protocol and assignor, and the rolling restart (if any).
        self.deployment = Deployment(seed, config, self.assignor, self, self.history)

    # -- members --------------------------------------------------------------------------------

    def start(self, name: str) -> ConsumerApp:
        config, now = self.config, self.clock()
        profile = draw_profile(random.Random(f"app-{self.seed}-{name}"), config.commit_mode,
                               config.processing_ms_per_record)
        if config.transactional:
            # No auto-commit either; a transaction costs a few round trips of acks=all writes, so each
            # takes up to Kafka's max.poll.records (500) to keep up with the producers.
            profile = attrs.evolve(profile, commit_mode="transactional", max_records=EOS_MAX_RECORDS)
        member: MemberContract
        deployment = self.deployment
        protocol = deployment.protocols[name] = deployment.protocol_of(name)
        if protocol == CONSUMER:
            incarnation = self._incarnations[name] = self._incarnations.get(name, 0) + 1
            # KIP-1082: the process makes its member id; from its own stream, so a seed replays.
            ids = random.Random(f"member-id-{self.seed}-{name}-{incarnation}")
            member = ConsumerProtocolMember(ConsumerProtocolConfig(
                group_id=GROUP, group_instance_id=self.instance_id_of(name), client_id=name,
                max_poll_interval_ms=config.max_poll_interval_ms, retry_backoff_ms=50,
                group_remote_assignor=deployment.assignor_for(protocol),
                enable_auto_commit=profile.commit_mode == "auto",
                auto_commit_interval_ms=profile.auto_commit_interval_ms, fetch_committed_on_assignment=True),
                now, random_bytes=ids.randbytes)
        else:
            member = GroupMember(MemberConfig(
                group_id=GROUP, assignors=self.assignors_of(name, deployment.assignor_for(protocol)),
                client_id=name,
                group_instance_id=self.instance_id_of(name),
                session_timeout_ms=config.session_timeout_ms,
                heartbeat_interval_ms=config.heartbeat_interval_ms,
                max_poll_interval_ms=config.max_poll_interval_ms, retry_backoff_ms=50,
                enable_auto_commit=profile.commit_mode == "auto",
                auto_commit_interval_ms=profile.auto_commit_interval_ms, fetch_committed_on_assignment=True),
                now)
        member.subscribe([TOPIC], now)
        member.update_metadata(self.kafka.partitions_per_topic(), now)
        eos = self.eos
        producer = eos.transactional_producer(name) if eos is not None else None
        app = ConsumerApp(name, member.config.group_instance_id, member, profile, self.cluster, self.history,
                          now, reachable=self._reachable, on_failed=self._member_failed, producer=producer,
                          data=eos.data if eos is not None else None, output_partitions=config.partitions,
                          long_poll=config.long_poll)
        transport = self.network.transport(name, self.kafka.transport(name), self.clock, _broker_key,
                                           observer=app)
        app.runner = MemberRunner(member, transport, self.clock)
        self.apps[name] = app
        self._members_by_name[name] = member
        driven = self.scheduler.add_member(name, app.runner, app)
        if producer is not None:
            # An answer to the producer wakes the application's loop blocked in its transaction.
            producer.transport.on_completion_scheduled = lambda due_ms: setattr(driven, "dirty", True)
        return app

    def assignors_of(self, name: str, assignor: Optional[str] = None) -> Tuple[str, ...]:
        """The member's assignor list: ``assignor`` (default the group's), or its place in a mix (``m<i>``
        the i-th member, ``j<i>`` the i-th joiner after them, round the mix)."""
        assignor = self.assignor if assignor is None else assignor
        mix = ASSIGNOR_MIXES.get(assignor)
        if mix is None:
            return (assignor,)
        index = int(name[1:]) + (self.config.members if name.startswith("j") else 0)
        return mix[index % len(mix)]

    def instance_id_of(self, name: str) -> Optional[str]:
        """A static member's group.instance.id: the same across its restarts."""
        return f"i-{name}" if self.static else None

    def _member_failed(self, name: str) -> None:
        """The application exits on its member's fatal error; its supervisor restarts it a little later
        (with the same static instance id, as a redeployed process)."""
        app = self.apps[name]
        self.history.record(MemberFailed(self.clock(), name, str(app.member.last_error)))
        self.restarting.add(name)

        def exit_now(now_ms: int) -> None:
            if self.apps.get(name) is app:
                self.stop(name, clean=False)

        def restart(now_ms: int) -> None:
            self.restarting.discard(name)
            if name not in self.apps:
                self.start(name)
        self.scheduler.call_at(self.clock(), exit_now)  # not while the scheduler polls this application
        self.scheduler.call_at(self.clock() + SUPERVISOR_RESTART_MS, restart)

    def _reachable(self, member: str, broker: int) -> bool:
        return not self.network.requests_cut(member, broker)

    def stop(self, name: str, clean: bool) -> None:
        app = self.apps.pop(name, None)
        self._members_by_name.pop(name, None)
        if app is None or app.runner is None:
            return
        self.scheduler.remove_member(name)
        self.ownership.forget(name)
        runner = app.runner
        if app.producer is not None:
            app.producer.transport.close()
        if clean:
            # The application closes its consumer: the member commits (auto), revokes and leaves.
            app.member.close(self.clock(), positions=None if app.producer is not None else app.committable())
            # The application runs the revocation callbacks its member waits on before leaving (the
            # KIP-848 member does; the classic one leaves regardless and ignores a poll while closing).

            def visit() -> None:
                app.member.take_events()
                app.member.on_app_poll(self.clock())
                for _round in range(20):
                    if not runner.step(0):
                        break
                self.kafka.hub.handle_timer(self.clock())
                self.network.handle_timer(self.clock())

            # Every 5 ms for at most 250 ms, until the member has left.
            autojump(self.clock, self.clock() + 50 * 5, visit, lambda end_ms: min(end_ms, self.clock() + 5),
                     done=lambda: app.member.closed)
        runner.transport.close()
        self.history.record(MemberStopped(self.clock(), name, clean))

    # -- faults -------------------------------------------------------------------------------------

    def schedule_faults(self) -> None:
        for index, fault in enumerate(self.schedule.faults):
            self.scheduler.call_at(fault.at_ms, _FaultEvent(self, fault, index))

    def apply(self, fault: Fault, index: int) -> None:
        now, kind, target = self.clock(), fault.kind, fault.target
        self.history.record(FaultApplied(now, str(fault).strip().split("  ", 1)[-1]))
        undo = fault.fault_kind.apply(self, fault, now)
        if undo is not None:
            def heal(now_ms: int) -> None:
                self.history.record(FaultApplied(now_ms, f"heal {kind} {target}"))
                undo()
            self.scheduler.call_at(fault.end_ms, heal)

    # What a fault may touch (kgroup.sim.faults.FaultContext), besides the clock, cluster, network,
    # scheduler, applications and start/stop.

    group_id = GROUP
    topic = TOPIC
    aux_topic = AUX_TOPIC

    @property
    def max_members(self) -> int:
        return self.config.members + 3

    @property
    def max_poll_interval_ms(self) -> int:
        return self.config.max_poll_interval_ms

    @property
    def bounce_leaves_cleanly(self) -> bool:
        return self.config.consumer_protocol and self.static

    def restart_broker_if_dead(self, broker: int) -> None:
        if self.cluster.brokers[broker] is BrokerState.DEAD:
            self.kafka.restart_broker(broker)

    def subscribe(self, app: ConsumerApp, topics: Sequence[str]) -> None:
        if app.member.failed:
            return
        app.member.subscribe(list(topics), self.clock())
        app.member.update_metadata(self.kafka.partitions_per_topic(), self.clock())

    # -- observation -------------------------------------------------------------------------------

    def _after_instant(self, now_ms: int) -> None:
        ownership, scheduler = self.ownership, self.scheduler
        if self.config.long_poll:
            self._wake_long_polls()
        if ownership.holding or (scheduler.touched and (
                scheduler.touched_keys is None or not ownership.unchanged(
                    self._members_by_name, scheduler.touched_keys))):
            # Otherwise no member changed since the last look (only the touched ones could have): it
            # would find what that one found.
            ownership.after_instant(now_ms, [(name, app.member) for name, app in self.apps.items()])
        failovers = self.kafka.hosting.failovers
        if len(failovers) > self._failovers_seen:
            group_slot = self.kafka.hosting.partition_for(GROUP)
            for old, new, slot, at_ms in failovers[self._failovers_seen:]:
                if slot == group_slot:
                    self.history.record(CoordinatorMoved(at_ms, old, new))
                    if self._acknowledged_at_move is None:
                        self._acknowledged_at_move = (at_ms, last_acknowledged(self.history))
            self._failovers_seen = len(failovers)
        if self._acknowledged_at_move is not None and self.kafka.hosting.coordinator_for(GROUP) is not None:
            self._check_failover_kept_commits(now_ms)
        if self.eos is not None:
            self.eos.observe_failovers()
        if self.config.migrates:
            self.deployment.observe_group_type(GROUP, now_ms)

    def _wake_long_polls(self) -> None:
        """A replication round or an append may have moved a high watermark: an application blocked in
        a long poll asks again whether records arrived (it then polls at the next instant, as a fetch
        answered once the records are there)."""
        rounds, appends = self.cluster.partition_rounds, self._appends[0]
        if rounds == self._rounds_seen and appends == self._appends_seen:
            return  # (compared without building anything: this runs after every instant)
        self._rounds_seen, self._appends_seen = rounds, appends
        for name, app in self.apps.items():
            if app.waiting_for_records:
                self.scheduler.app_timer_moved(name)

    def _check_failover_kept_commits(self, now_ms: int) -> None:
        """The new coordinator, once loaded, serves every commit acknowledged before the move."""
        moved_ms, acknowledged = cast(tuple, self._acknowledged_at_move)
        self._acknowledged_at_move = None
        committed = self.committed_offsets()
        for tp, offset in sorted(acknowledged.items()):
            if committed.get(tp, -1) < offset:
                self.violations.append(Violation(
                    "acknowledged-commit-lost", now_ms,
                    f"{tp}: the commit of {offset} was acknowledged before the coordinator moved at "
                    f"{moved_ms} ms; the new coordinator serves {committed.get(tp)}"))

    def on_transition(self, machine, old, new) -> None:
        kind = _MACHINE_KINDS.get(type(new))
        if kind is not None:
            self.history.record(Transition(self.clock(), kind, machine.name, old.name, new.name))

    # -- the end ------------------------------------------------------------------------------------

    def heal_everything(self) -> None:
        for fault in self.scheduler.pending_calls():
            fault(self.clock())
        for broker, state in self.cluster.brokers.items():
            if state is BrokerState.DEAD:
                self.kafka.restart_broker(broker)
            self.kafka.heal_broker(broker)
            self.kafka.slow_follower(broker, None)
        self.network.heal_all()
        for app in self.apps.values():
            app.paused_until_ms = -1
            if app.member.subscription != frozenset((TOPIC,)):
                self.subscribe(app, (TOPIC,))

    def settled(self) -> bool:
        """The coordinator says Stable with exactly our members, each Stable in one generation (member
        epoch) on the current coordinator with no rejoin pending (nothing left to reconcile)."""
        members = [a.member for a in self.apps.values()]
        if self.restarting:
            return False
        if not members:
            return True
        node = self.kafka.coordinator_node(GROUP)
        if not all(m.settled and m.coordinator_id == node for m in members):
            return False
        if len({m.generation.generation_id for m in members}) != 1:
            return False
        consumer_protocol = self.config.final_protocol == CONSUMER
        stable = ConsumerGroupState.STABLE if consumer_protocol else GroupState.STABLE
        if self.kafka.group_state(GROUP) is not stable:
            return False
        if not consumer_protocol:
            described = self.kafka.describe_group(GROUP)
            return described is not None and {m.member_id for m in described.members} == {
                m.member_id for m in members}
        # KIP-848: the coordinator calls a member Stable once it has sent it the assignment; the group
        # has settled when every member has it too (the heartbeat answer may still be on its way).
        return self.coordinator_assignments() == {m.member_id: m.assignment for m in members}

    def coordinator_assignments(self) -> Optional[Dict[str, frozenset]]:
        """KIP-848: each member's assigned partitions as the coordinator has them (None: no group)."""
        def read(now_ms: int) -> Optional[Dict[str, frozenset]]:
            coordinator = self.kafka.hosting.coordinator_for(GROUP)
            group = None if coordinator is None else coordinator.consumer_group(GROUP)
            if group is None:
                return None
            return {member_id: member.assigned_partitions for member_id, member in group.members.items()}
        return cast(Optional[Dict[str, frozenset]], self.kafka.hub.query(read))

    def check_settles(self) -> bool:
        deadline = self.clock() + self.config.settle_bound_ms
        while not self.settled():
            if self.clock() >= deadline:
                states = {a.name: (a.member.state.name, a.member.generation.generation_id,
                                   len(a.member.assignment)) for a in self.apps.values()}
                self.violations.append(Violation(
                    "not-settled", self.clock(),
                    f"the group did not settle within {self.config.settle_bound_ms} ms of the last fault: "
                    f"coordinator {self.kafka.group_state(GROUP)}, members {states}"))
                return False
            self.scheduler.run_until_ms(self.clock() + 50)
        sizes = sorted(len(a.member.assignment) for a in self.apps.values())
        total = len(self.cluster.topics[TOPIC])
        if sizes and (sum(sizes) != total or sizes[-1] - sizes[0] > 1):
            self.violations.append(Violation(
                "unbalanced", self.clock(),
                f"settled, but not every one of {total} partitions owned once and balanced: sizes {sizes}"))
        final = {a.name: (a.member.generation.member_id, a.member.generation.generation_id,
                          a.member.assignment) for a in self.apps.values()}
        final_assignor = self.deployment.assignor_for(self.config.final_protocol)
        self.violations += check_sticky_moves(self.history, final_assignor, final, self.clock())
        return True

    def committed_offsets(self) -> Dict[TopicPartition, int]:
        def read(now_ms):
            coordinator = self.kafka.hosting.coordinator_for(GROUP)
            if coordinator is None:
                return None
            return coordinator.handle(None, OffsetFetchRequest(GROUP, None), now_ms).deliveries[0].response
        response = cast(Optional[OffsetFetchResponse], self.kafka.hub.query(read))
        if response is None:
            return {}
        return {p.topic_partition: p.committed.offset for p in response.partitions
                if p.committed is not None and p.committed.offset >= 0}

    def final_logs(self) -> Dict[TopicPartition, Sequence[str]]:
        logs: Dict[TopicPartition, Sequence[str]] = {}
        for partition in self.cluster.topics[TOPIC]:
            if partition.leader is not None:
                log = partition.logs[partition.leader]
                logs[TopicPartition(TOPIC, partition.index)] = [e.payload for e in log.entries[:log.hw]]
        return logs

    def finish_transactions(self, eos: ExactlyOnceHosting) -> None:
        """Exactly-once mode, at the end: wait (bounded) until every transaction is decided and its
        markers written, then read the output and the offsets one last time."""
        deadline = self.clock() + self.config.settle_bound_ms
        while not eos.transactions_decided(self.apps.values()) and self.clock() < deadline:
            self.scheduler.run_until_ms(self.clock() + 50)
        if not eos.transactions_decided(self.apps.values()):
            self.violations.append(Violation(
                "not-settled", self.clock(),
                f"transactions still open {self.config.settle_bound_ms} ms after the catch-up"))
        eos.reader.read(self.clock())

    def generations(self) -> set:
        return {a.member.generation.generation_id for a in self.apps.values()}

    def close(self) -> None:
        for app in self.apps.values():
            if app.runner is not None:
                app.runner.transport.close()
            if app.producer is not None:
                app.producer.transport.close()
        self.kafka.close()


def run(seed_or_schedule: Union[int, Schedule], config: SimConfig = SimConfig(),
        planted: Optional[Any] = None) -> Verdict:
    """Simulate ``config`` under the schedule of a seed (or the given schedule, replayed with its
    seed's application streams); ``planted(simulation)`` may break something first (tests)."""
    if isinstance(seed_or_schedule, Schedule):
        schedule = seed_or_schedule
        seed = schedule.seed if schedule.seed is not None else 0
    else:
        seed = seed_or_schedule
        schedule = generate_schedule(seed, config.fault_plan())
    sim = _Simulation(seed, config, schedule)
    sink = sim.on_transition  # one bound method: the sinks are removed by identity
    add_transition_sink(sink)
    try:
        if planted is not None:
            planted(sim)
        for name in config.member_names():
            sim.start(name)
        sim.schedule_faults()
        rollout_end_ms, rollout = 0, sim.deployment.rollout
        if rollout is not None:
            rollout.schedule()
            rollout_end_ms = rollout.latest_end_ms(sim.max_members - config.members) + 1_000
        bounce_only = config.faults == "static-bounce" and schedule.faults
        if bounce_only:
            sim.scheduler.run_until_ms(schedule.faults[0].at_ms - 500)
            if not sim.settled():
                sim.violations.append(Violation(
                    "not-settled", sim.clock(),
                    "static-bounce: the group was not Stable before the first bounce"))
            before = sim.generations()
        sim.scheduler.run_until_ms(max(config.duration_ms, schedule.last_fault_end_ms + 1_000))
        while rollout is not None and not rollout.done and sim.clock() < rollout_end_ms:
            sim.scheduler.run_until_ms(min(sim.clock() + 500, rollout_end_ms))
        if rollout is not None and not rollout.done:
            sim.violations.append(Violation(
                "not-settled", sim.clock(), f"the rolling restart did not finish by {rollout_end_ms} ms: "
                f"{rollout.old_protocol_members()} still on the old protocol"))
        sim.heal_everything()
        if sim.check_settles():
            sim.scheduler.run_until_ms(sim.clock() + 3_000)  # the consumers catch up and commit
        if bounce_only and sim.generations() != before:
            sim.violations.append(Violation(
                "static-bounce-rebalanced", sim.clock(),
                f"static members bounced within the session timeout, yet the group rebalanced: "
                f"generation {sorted(before)} -> {sorted(sim.generations())}"))
        if sim.eos is not None:
            sim.finish_transactions(sim.eos)
        sim.ownership.close(sim.clock())
        final_committed = sim.committed_offsets()
        violations = sim.ownership.violations[:20] + sim.violations + check_history(
            sim.history, final_committed, sim.final_logs())
        if sim.eos is not None:
            violations += check_exactly_once(sim.history, final_committed)
        return Verdict(seed, config, sim.assignor, schedule, tuple(violations), tuple(sim.ownership.overlaps),
                       coverage(sim.history, sim.ownership.overlaps), sim.history, sim.clock())
    finally:
        remove_transition_sink(sink)
        sim.close()


def run_seed(seed: int, config: SimConfig = SimConfig()) -> Verdict:
    return run(seed, config)
