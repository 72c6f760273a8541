"""A seeded fault campaign: consumer groups on the in-memory cluster under random faults.

One seed decides everything, from two independent random streams: the fault
schedule (``Random("faults-<seed>")``) and the application's behaviour
(``Random("app-<seed>")``), so dropping a fault does not reshuffle what the
members do.  String seeds hash with SHA-512 in :mod:`random`, never with
``PYTHONHASHSEED``, so a seed replays bit for bit.

The clock is a :class:`MockClock` that a :class:`~kgroup.testing.scheduler.Scheduler`
moves to the next deadline of any member, coordinator, replication round,
application poll or fault.  The
members are kgroup's pure :class:`GroupMember`; the cluster, coordinators and
``__consumer_offsets`` replication are the real in-memory ones.

Invariants (checked after every step and at the end; a violation is a string):

- no two members own a partition in the same generation;
- per partition, the committed offsets the coordinators accepted never go
  backwards, and each accepted commit carries the generation the application
  produced its offsets in (no stale-generation commit is accepted);
- an acknowledged commit survives coordinator failover (the final committed
  offset is the last acknowledged one or a commit sent after it);
- after the last fault the group settles (Stable, every partition owned,
  balanced) within a bound derived from the timeouts;
- a static member that restarts within its session timeout causes no rebalance
  (the ``static-bounce`` family, where that is the only fault).

Families: ``eager`` (range / sticky), ``cooperative`` (cooperative-sticky),
``upgrade`` (Kafka's upgrade path: members listing ``("cooperative-sticky",
"range")``, which are eager, mixed with members already on cooperative-sticky
alone), ``static`` (static members under every fault) and ``static-bounce``.
"""
from __future__ import annotations

import random
from typing import Any, Callable, Dict, List, Optional, Sequence, cast

import attrs

from kgroup.core.cluster import BrokerState
from kgroup.core.coordinator import GroupCoordinatorConfig, GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member import (
    CommittedFetched,
    GroupMember,
    MemberConfig,
    MemberState,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kgroup.core.messages import (
    OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse,
)
from kgroup.io.runner import MemberRunner
from kgroup.io.inprocess import InProcessTransport
from kgroup.io.transport import Completion, Transport
from kgroup.testing.clock import MockClock
from kgroup.testing.in_memory_kafka import InMemoryKafka
from kgroup.testing.scheduler import HubTimers, Scheduler
from kgroup.values import TopicPartition

__all__ = ["FAMILIES", "Fault", "Scenario", "Verdict", "plan", "run_scenario", "run_seed"]

FAMILIES = ("eager", "cooperative", "upgrade", "static", "static-bounce")
GROUP = "campaign"
TOPIC = "events"
BROKERS = (1, 2, 3)
SESSION_TIMEOUT_MS = 1_000
HEARTBEAT_INTERVAL_MS = 200
MAX_POLL_INTERVAL_MS = 3_000
FAULT_WINDOW_MS = 15_000
#: After the last fault: every generation completes within the rebalance timeout
#: (max_poll_interval_ms) once the members are back; a few rounds, plus session
#: expiry of members that crashed and coordinator load.
SETTLE_BOUND_MS = 6 * MAX_POLL_INTERVAL_MS + 2 * SESSION_TIMEOUT_MS
COORDINATOR = GroupCoordinatorConfig(group_min_session_timeout_ms=100, group_initial_rebalance_delay_ms=0)


@attrs.frozen
class Fault:
    """One timed event of a schedule; ``target`` is a member name or a broker id."""

    at_ms: int
    kind: str
    target: Any = None
    duration_ms: int = 0

    def __str__(self) -> str:
        extra = f" for {self.duration_ms} ms" if self.duration_ms else ""
        return f"{self.at_ms:>6} ms  {self.kind} {self.target if self.target is not None else ''}{extra}"


@attrs.frozen
class Scenario:
    seed: int
    family: str
    partitions: int
    members: tuple[str, ...]
    faults: tuple[Fault, ...]

    def describe(self) -> str:
        lines = [f"seed {self.seed}: family {self.family}, {len(self.members)} members, "
                 f"{self.partitions} partitions"]
        lines += [f"  {fault}" for fault in self.faults]
        return "\n".join(lines)


@attrs.frozen
class Verdict:
    scenario: Scenario
    violations: tuple[str, ...]
    generations: int
    commits_accepted: int

    @property
    def ok(self) -> bool:
        return not self.violations


_MEMBER_FAULTS = ("crash", "leave", "join", "slow_poll", "isolate_member", "static_bounce")
_BROKER_FAULTS = ("kill_broker", "restart_broker", "controlled_shutdown", "isolate_broker")


def plan(seed: int, family: Optional[str] = None) -> Scenario:
    """The scenario of ``seed`` (the family too, unless given)."""
    rng = random.Random(f"faults-{seed}")
    family = family or rng.choice(FAMILIES)
    members = tuple(f"m{i}" for i in range(rng.randint(2, 4)))
    partitions = rng.choice((4, 6, 8))
    faults: List[Fault] = []
    if family == "static-bounce":
        at_ms = 4_000
        for _ in range(rng.randint(1, 3)):
            at_ms += rng.randint(500, 3_000)
            # Back well within the session timeout, as a rolling restart is.
            down_ms = rng.randint(50, SESSION_TIMEOUT_MS // 2)
            faults.append(Fault(at_ms, "static_bounce", rng.choice(members), down_ms))
            at_ms += SESSION_TIMEOUT_MS
        return Scenario(seed, family, partitions, members, tuple(faults))
    kinds = _MEMBER_FAULTS + _BROKER_FAULTS if family == "static" else _MEMBER_FAULTS[:-1] + _BROKER_FAULTS
    for _ in range(rng.randint(1, 6)):
        kind = rng.choice(kinds)
        at_ms = rng.randint(1_000, FAULT_WINDOW_MS)
        if kind in _BROKER_FAULTS:
            target: object = rng.choice(BROKERS)
        elif kind == "join":
            target = None
        else:
            target = rng.choice(members)
        duration_ms = rng.randint(200, 2 * MAX_POLL_INTERVAL_MS) if kind in (
            "slow_poll", "isolate_member", "isolate_broker", "static_bounce") else 0
        faults.append(Fault(at_ms, kind, target, duration_ms))
    faults.sort(key=lambda f: (f.at_ms, f.kind, str(f.target)))
    return Scenario(seed, family, partitions, members, tuple(faults))


def _group_assignors(family: str, rng: random.Random) -> tuple:
    """The assignor lists members may have (all share one assignor, as a real group must)."""
    if family == "eager":
        return ((rng.choice(("range", "sticky")),),)
    if family == "cooperative":
        return (("cooperative-sticky",),)
    if family == "upgrade":
        # Kafka's documented upgrade path: the first rolling bounce lists both (eager),
        # the second leaves cooperative-sticky alone.
        return (("cooperative-sticky", "range"), ("cooperative-sticky",))
    return ((rng.choice(("range", "sticky", "cooperative-sticky")),),)


class _RecordingTransport(Transport):
    """Wraps a member's transport; records the commits it sends and those accepted."""

    def __init__(self, inner: InProcessTransport, name: str, campaign: "_Campaign") -> None:
        self._inner = inner
        self._name = name
        self._campaign = campaign
        self._commits: Dict[int, OffsetCommitRequest] = {}

    def send(self, request: object, node_id=None) -> int:
        correlation_id = self._inner.send(request, node_id)
        if isinstance(request, OffsetCommitRequest):
            self._commits[correlation_id] = request
            self._campaign.on_commit_sent(self._name, request)
        return correlation_id

    def poll(self, timeout_ms: int) -> list[Completion]:
        completions = self._inner.poll(timeout_ms)
        for completion in completions:
            request = self._commits.pop(completion.correlation_id, None)
            if request is not None and isinstance(completion.result, OffsetCommitResponse):
                self._campaign.on_commit_answered(self._name, request, completion.result)
        return completions

    def isolate(self) -> None:
        self._inner.isolate()

    def heal(self) -> None:
        self._inner.heal()

    def wakeup(self) -> None:
        self._inner.wakeup()

    def close(self) -> None:
        self._inner.close()


@attrs.define
class _App:
    """One consumer process: a member, its runner and what the application knows."""

    name: str
    instance_id: Optional[str]
    assignors: tuple
    auto_commit: bool
    member: GroupMember
    transport: _RecordingTransport
    runner: MemberRunner
    positions: Dict[TopicPartition, int] = attrs.Factory(dict)
    awaiting_fetch: set = attrs.Factory(set)
    next_poll_ms: int = 0
    paused_until_ms: int = -1

    def next_poll(self) -> int:
        """When the application polls next: its own cadence, unless a slow poll holds it."""
        return max(self.next_poll_ms, self.paused_until_ms)


class _AppPolls:
    """One application's polls as the scheduler sees them (a slow poll pauses them)."""

    def __init__(self, app: _App, campaign: "_Campaign") -> None:
        self.app = app
        self.campaign = campaign

    def next_poll_ms(self) -> Optional[int]:
        return self.app.next_poll()

    def poll(self, now_ms: int) -> None:
        self.campaign.app_poll(self.app, now_ms)


class _FaultEvent:
    """A scheduled fault; applying it may schedule its undoing half."""

    def __init__(self, fault: Fault, campaign: "_Campaign") -> None:
        self.fault = fault
        self.campaign = campaign

    def __call__(self, now_ms: int) -> None:
        undo: List[Fault] = []
        self.campaign.apply(self.fault, undo)
        self.campaign.schedule(undo)


class _Campaign:
    def __init__(self, scenario: Scenario,
                 member_hooks: Optional[Callable[[GroupMember], None]] = None) -> None:
        self.scenario = scenario
        self.rng = random.Random(f"app-{scenario.seed}")
        self.clock = MockClock(0)
        ids = iter(range(10**6))
        self.kafka = InMemoryKafka(len(BROKERS), offsets_partitions=3, clock=self.clock,
                                   coordinator_config=COORDINATOR,
                                   member_id_factory=lambda prefix: f"{prefix}-{next(ids)}")
        self.kafka.create_topic(TOPIC, scenario.partitions)
        self.scheduler = Scheduler(self.clock)
        self.scheduler.add_timers(HubTimers(self.kafka.hub))
        self.scheduler.after_instant.append(lambda now_ms: self.check_ownership())
        self.member_hooks = member_hooks
        self.assignor_lists = _group_assignors(scenario.family, self.rng)
        self.apps: Dict[str, _App] = {}
        self.names = (f"j{i}" for i in range(1000))
        self.violations: List[str] = []
        self.accepted: Dict[TopicPartition, List[int]] = {}
        self.unanswered: Dict[TopicPartition, List[int]] = {}
        self.accepted_commits: List[tuple] = []
        self.owner_in: Dict[tuple, str] = {}  # (tp, generation) -> member id that owned it
        self.produced_in: Dict[tuple, set] = {}  # (member_id, tp, offset) -> generations it was produced in
        self.generations_seen: set = set()
        self.commits_accepted = 0
        self.static = scenario.family in ("static", "static-bounce")

    # -- members ------------------------------------------------------------------

    def start(self, name: str, instance_id: Optional[str] = None, assignors: Optional[tuple] = None) -> _App:
        assignors = assignors or self.rng.choice(self.assignor_lists)
        auto_commit = self.rng.random() < 0.5
        config = MemberConfig(
            group_id=GROUP, assignors=assignors, client_id=name, group_instance_id=instance_id,
            session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            max_poll_interval_ms=MAX_POLL_INTERVAL_MS, retry_backoff_ms=50, enable_auto_commit=auto_commit,
            auto_commit_interval_ms=self.rng.choice((300, 1_000)), fetch_committed_on_assignment=True)
        now = self.clock()
        member = GroupMember(config, now)
        if self.member_hooks is not None:
            self.member_hooks(member)
        member.subscribe([TOPIC], now)
        member.update_metadata(self.kafka.partitions_per_topic(), now)
        transport = _RecordingTransport(self.kafka.transport(), name, self)
        runner = MemberRunner(member, transport, self.clock)
        app = _App(name, instance_id, assignors, auto_commit, member, transport, runner,
                   next_poll_ms=now)
        self.apps[name] = app
        self.scheduler.add_member(name, runner, _AppPolls(app, self))
        return app

    def stop(self, name: str, clean: bool) -> Optional[_App]:
        app = self.apps.pop(name, None)
        if app is None:
            return None
        self.scheduler.remove_member(name)
        if clean:
            app.member.close(self.clock(), positions=self._positions(app))
            for _ in range(50):
                self._drain(app)
                self.kafka.hub.tick()
                if app.member.closed:
                    break
                self.clock.advance(10)
        app.transport.close()
        return app

    def _positions(self, app: _App) -> dict:
        return {tp: p for tp, p in app.positions.items() if tp not in app.awaiting_fetch}

    # -- the application ------------------------------------------------------------

    def app_poll(self, app: _App, now: int) -> None:
        member = app.member
        for event in member.take_events():
            if isinstance(event, PartitionsAssigned):
                for tp in event.partitions:
                    app.awaiting_fetch.add(tp)
            elif isinstance(event, PartitionsRevoked):
                revoked = {tp: app.positions[tp] for tp in event.partitions
                           if tp in app.positions and tp not in app.awaiting_fetch}
                if revoked and member.state is not MemberState.FATAL:
                    self._commit(app, revoked, now, deadline_ms=now + self._sync_commit_timeout_ms())
                for tp in event.partitions:
                    app.positions.pop(tp, None)
                    app.awaiting_fetch.discard(tp)
            elif isinstance(event, PartitionsLost):
                for tp in event.partitions:
                    app.positions.pop(tp, None)
                    app.awaiting_fetch.discard(tp)
            elif isinstance(event, CommittedFetched) and event.error is None:
                for tp, committed in event.offsets.items():
                    if tp in app.awaiting_fetch and tp in member.assignment:
                        app.awaiting_fetch.discard(tp)
                        app.positions[tp] = 0 if committed is None else committed.offset
        if member.state is MemberState.FATAL or member.closed:
            return
        # Consume a few records of every partition it owns, then maybe commit.
        for tp in sorted(member.assignment):
            if tp in app.positions and tp not in app.awaiting_fetch:
                app.positions[tp] += self.rng.randint(0, 5)
        positions = self._positions(app)
        self._note_produced(app, positions)
        member.on_app_poll(now, positions)
        if positions and member.state is MemberState.STABLE and self.rng.random() < 0.15:
            sync = self.rng.random() < 0.5
            deadline_ms = now + self._sync_commit_timeout_ms() if sync else None
            self._commit(app, positions, now, deadline_ms=deadline_ms)
        app.next_poll_ms = now + self.rng.randint(20, 200)

    def _sync_commit_timeout_ms(self) -> int:
        # Short ones fail during an outage; long ones (Java's default.api.timeout.ms is 60 s)
        # are still retrying when the member has rebalanced.
        return self.rng.choice((2_000, 20_000))

    def _commit(self, app: _App, offsets: dict, now: int, deadline_ms: Optional[int]) -> None:
        self._note_produced(app, offsets)
        app.member.commit_offsets(offsets, now, deadline_ms=deadline_ms)

    def _note_produced(self, app: _App, offsets: dict) -> None:
        generation = app.member.generation
        for tp, offset in offsets.items():
            key = (generation.member_id, tp, offset)
            self.produced_in.setdefault(key, set()).add(generation.generation_id)

    # -- commit observations ----------------------------------------------------------

    def on_commit_sent(self, name: str, request: OffsetCommitRequest) -> None:
        for commit in request.offsets:
            # Until answered, the coordinator may or may not have applied it.
            self.unanswered.setdefault(commit.topic_partition, []).append(commit.committed.offset)

    def on_commit_answered(self, name: str, request: OffsetCommitRequest,
                           response: OffsetCommitResponse) -> None:
        codes = {p.topic_partition: p.error_code for p in response.partitions}
        for commit in request.offsets:
            tp, offset = commit.topic_partition, commit.committed.offset
            unanswered = self.unanswered.get(tp, [])
            if offset in unanswered:
                unanswered.remove(offset)
            if codes.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR) is not ErrorCode.NONE:
                continue
            self.commits_accepted += 1
            history = self.accepted.setdefault(tp, [])
            if history and offset < history[-1]:
                self.violations.append(f"{self.clock()} ms: committed offset of {tp} went back from "
                                       f"{history[-1]} to {offset} (commit by {name})")
            history.append(offset)
            self.accepted_commits.append(
                (self.clock(), name, request.member_id, tp, offset, request.generation_id))

    # -- faults -------------------------------------------------------------------------

    def apply(self, fault: Fault, undo: List[Fault]) -> None:
        kafka, now = self.kafka, self.clock()
        kind, target = fault.kind, fault.target
        if kind in ("crash", "leave"):
            if len(self.apps) > 1 and target in self.apps:
                self.stop(str(target), clean=kind == "leave")
        elif kind == "join":
            if len(self.apps) < 5:
                self.start(next(self.names), instance_id=f"i-{next(self.names)}" if self.static else None)
        elif kind == "slow_poll":
            if target in self.apps:
                self.apps[str(target)].paused_until_ms = now + MAX_POLL_INTERVAL_MS + fault.duration_ms
        elif kind == "isolate_member":
            if target in self.apps:
                self.apps[str(target)].transport.isolate()
                undo.append(Fault(now + fault.duration_ms, "heal_member", target))
        elif kind == "heal_member":
            if target in self.apps:
                self.apps[str(target)].transport.heal()
        elif kind == "static_bounce":
            app = self.apps.get(str(target))
            if app is not None:
                self.stop(app.name, clean=False)
                restart = (app.name, app.instance_id, app.assignors)
                undo.append(Fault(now + fault.duration_ms, "static_restart", restart))
        elif kind == "static_restart":
            name, instance_id, assignors = target
            if name not in self.apps:
                self.start(name, instance_id, assignors)
        elif kind == "kill_broker":
            if kafka.cluster.brokers[target] is not BrokerState.DEAD:
                kafka.kill_broker(target)
        elif kind == "restart_broker":
            if kafka.cluster.brokers[target] is BrokerState.DEAD:
                kafka.restart_broker(target)
        elif kind == "controlled_shutdown":
            if kafka.cluster.brokers[target] is BrokerState.LIVE:
                kafka.controlled_shutdown(target)
                undo.append(Fault(now + 2_000, "restart_broker", target))
        elif kind == "isolate_broker":
            if kafka.cluster.brokers[target] is BrokerState.LIVE:
                kafka.isolate_broker(target)
                undo.append(Fault(now + fault.duration_ms, "heal_broker", target))
        elif kind == "heal_broker":
            kafka.heal_broker(target)
        else:
            raise ValueError(f"unknown fault kind {kind!r}")

    # -- driving -------------------------------------------------------------------------

    def _drain(self, app: _App) -> None:
        for _ in range(20):
            if not app.runner.step(0):
                return

    def schedule(self, faults: Sequence[Fault]) -> None:
        """Faults at their times; at one instant, in the order given (a schedule is sorted)."""
        for fault in faults:
            self.scheduler.call_at(fault.at_ms, _FaultEvent(fault, self))

    def pending_faults(self) -> List[Fault]:
        """Take the faults not yet applied (the undoing halves of faults that outlast the window)."""
        return [cast(_FaultEvent, event).fault for event in self.scheduler.pending_calls()]

    def run_until(self, end_ms: int) -> None:
        """Apply due faults, poll, step members and the cluster at every instant with something
        due, up to ``end_ms`` (the scheduler's instant)."""
        self.scheduler.run_until_ms(end_ms)

    # -- checks --------------------------------------------------------------------------

    def check_ownership(self) -> None:
        owners: Dict[tuple, str] = {}
        for app in self.apps.values():
            generation = app.member.generation.generation_id
            if generation < 0:
                continue
            self.generations_seen.add(generation)
            for tp in app.member.assignment:
                self.owner_in.setdefault((tp, generation), app.member.member_id)
                other = owners.setdefault((generation, tp), app.name)
                if other != app.name:
                    self.violations.append(f"{self.clock()} ms: {tp} owned by {other} and {app.name} "
                                           f"in generation {generation}")

    def settled(self) -> bool:
        kafka = self.kafka
        node = kafka.coordinator_node(GROUP)
        members = [a.member for a in self.apps.values()]
        if not members:
            return kafka.group_state(GROUP) in (GroupState.EMPTY, GroupState.DEAD, None)
        if not all(m.state is MemberState.STABLE and not m.rejoin_needed and m.coordinator_id == node
                   for m in members):
            return False
        if len({m.generation.generation_id for m in members}) != 1:
            return False
        if kafka.group_state(GROUP) is not GroupState.STABLE:
            return False
        described = kafka.describe_group(GROUP)
        ours = {m.member_id for m in members}
        return described is not None and {m.member_id for m in described.members} == ours

    def check_commit_generations(self) -> None:
        """Every accepted commit was made in the generation it carried, or its member kept the
        partition from the generation it made it in to that one (a cooperative member commits
        what it revokes in the new generation: nobody else owned the partition in between)."""
        for at_ms, name, member_id, tp, offset, generation in self.accepted_commits:
            made_in = self.produced_in.get((member_id, tp, offset), set())
            if generation in made_in or any(self._kept(member_id, tp, g, generation) for g in made_in):
                continue
            first = min(made_in, default=generation)
            owners = {h: self.owner_in.get((tp, h)) for h in range(first, generation + 1)}
            self.violations.append(
                f"{at_ms} ms: {name} committed {tp}@{offset} as generation {generation}, but produced it in "
                f"generation(s) {sorted(made_in)} and the partition's owners were {owners}: "
                "a stale-generation "
                "commit was accepted")

    def _kept(self, member_id: str, tp: TopicPartition, made_in: int, generation: int) -> bool:
        """Nobody but ``member_id`` owned ``tp`` after generation ``made_in`` up to ``generation``."""
        return made_in < generation and all(
            self.owner_in.get((tp, h), member_id) == member_id for h in range(made_in + 1, generation + 1))

    def member_generations(self) -> set:
        return {a.member.generation.generation_id for a in self.apps.values()}

    def committed_offsets(self) -> Dict[TopicPartition, int]:
        def read(now_ms):
            coordinator = self.kafka.hosting.coordinator_for(GROUP)
            if coordinator is None:
                return None
            tps = tuple(TopicPartition(TOPIC, p) for p in range(self.scenario.partitions))
            result = coordinator.handle(None, OffsetFetchRequest(GROUP, tps), now_ms)
            return result.deliveries[0].response
        response = cast(OffsetFetchResponse, self.kafka.hub.query(read))
        return {p.topic_partition: p.committed.offset for p in response.partitions
                if p.committed is not None and p.committed.offset >= 0}

    def finish(self) -> None:
        """Heal everything, wait for the group to settle, then check it and its offsets."""
        for broker in BROKERS:
            state = self.kafka.cluster.brokers[broker]
            if state is BrokerState.DEAD:
                self.kafka.restart_broker(broker)
        for broker in BROKERS:
            self.kafka.heal_broker(broker)
        for app in self.apps.values():
            app.transport.heal()
            app.paused_until_ms = -1
        start = self.clock()
        deadline = start + SETTLE_BOUND_MS
        while not self.settled():
            if self.clock() >= deadline:
                states = {a.name: (a.member.state.name, a.member.generation.generation_id,
                                   len(a.member.assignment)) for a in self.apps.values()}
                self.violations.append(f"the group did not settle within {SETTLE_BOUND_MS} ms of the last "
                                       f"fault: coordinator {self.kafka.group_state(GROUP)}, "
                                       f"members {states}")
                return
            self.run_until(self.clock() + 50)
        sizes = sorted(len(a.member.assignment) for a in self.apps.values())
        if sum(sizes) != self.scenario.partitions or sizes[-1] - sizes[0] > 1:
            self.violations.append(f"settled but not every partition owned once, balanced: sizes {sizes}")
        self.run_until(self.clock() + 1_000)  # outstanding commits finish
        self.check_commit_generations()
        committed = self.committed_offsets()
        for tp, history in self.accepted.items():
            final = committed.get(tp)
            if final is None or (final != history[-1] and final not in self.unanswered.get(tp, ())):
                self.violations.append(f"acknowledged commit lost: {tp} committed {final}, last acknowledged "
                                       f"{history[-1]}")

    def close(self) -> None:
        for app in self.apps.values():
            app.transport.close()
        self.kafka.close()


def run_scenario(scenario: Scenario, member_hooks: Optional[Callable[[GroupMember], None]] = None) -> Verdict:
    campaign = _Campaign(scenario, member_hooks)
    try:
        for name in scenario.members:
            instance_id = f"i-{name}" if campaign.static else None
            campaign.start(name, instance_id)
        faults = list(scenario.faults)
        if scenario.family == "static-bounce":
            campaign.run_until(faults[0].at_ms - 500)
            if not campaign.settled():
                campaign.violations.append("static-bounce: the group was not Stable before the first bounce")
            generation_before = campaign.member_generations()
        end = max([f.at_ms for f in faults] + [FAULT_WINDOW_MS]) + 1_000
        campaign.schedule(faults)
        campaign.run_until(end)
        for pending in campaign.pending_faults():  # the undoing half of a fault that outlasted the window
            campaign.apply(pending, [])
        campaign.finish()
        if scenario.family == "static-bounce":
            generation_after = campaign.member_generations()
            if generation_after != generation_before:
                campaign.violations.append(f"static members bounced within the session timeout, yet the "
                                           f"group rebalanced: generation {generation_before} -> "
                                           f"{generation_after}")
        return Verdict(scenario, tuple(campaign.violations), len(campaign.generations_seen),
                       campaign.commits_accepted)
    finally:
        campaign.close()


def run_seed(seed: int, family: Optional[str] = None) -> Verdict:
    return run_scenario(plan(seed, family))


def campaign_summary(verdicts: Sequence[Verdict]) -> str:
    failed = [v for v in verdicts if not v.ok]
    by_family: Dict[str, int] = {}
    for verdict in verdicts:
        by_family[verdict.scenario.family] = by_family.get(verdict.scenario.family, 0) + 1
    lines = [f"{len(verdicts)} seeds, {len(failed)} with violations; by family: {by_family}"]
    for verdict in failed[:10]:
        lines.append(verdict.scenario.describe())
        lines += [f"    ! {v}" for v in verdict.violations[:5]]
    return "\n".join(lines)
