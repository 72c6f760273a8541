"""Test-only assignors and drivers for the member tests."""
import pytest

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member.classic import codec
from kgroup.assignors import Assignor, RebalanceProtocol
from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig
from kgroup.core.member import GroupMember, MemberConfig, ClassicMemberState, PartitionsAssigned
from kgroup.io.inprocess import InProcessHub
from kgroup.io.runner import MemberRunner
from kgroup.testing import MockClock
from kgroup.testing.scheduler import PollCadence, Scheduler
from kgroup.values import Assignment


class SplitAssignor(Assignor):
    """Deals each topic's partitions round-robin over sorted member ids (test-only)."""

    name = "split"
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def assign(self, partitions_per_topic, subscriptions, partition_racks=None):
        members = sorted(subscriptions)
        out = {mid: [] for mid in members}
        i = 0
        for topic in sorted(partitions_per_topic):
            for p in range(partitions_per_topic[topic]):
                subscribed = [mid for mid in members if topic in subscriptions[mid].topics]
                if subscribed:
                    out[subscribed[i % len(subscribed)]].append((topic, p))
                    i += 1
        return {mid: Assignment(parts) for mid, parts in out.items()}


class EagerOnly(SplitAssignor):
    name = "eager-only"
    supported_protocols = (RebalanceProtocol.EAGER,)


class CooperativeOnly(SplitAssignor):
    name = "coop-only"
    supported_protocols = (RebalanceProtocol.COOPERATIVE,)


OK = ErrorCode.NONE


class Harness:
    """One pure member answered by hand; ``pending`` holds what it sent, by request type."""

    def __init__(self, topics=("t",), **config):
        config.setdefault("assignors", (SplitAssignor(),))
        config.setdefault("session_timeout_ms", 1000)
        config.setdefault("heartbeat_interval_ms", 300)
        config.setdefault("max_poll_interval_ms", 5000)
        config.setdefault("retry_backoff_ms", 50)
        config.setdefault("enable_auto_commit", False)
        config.setdefault("fetch_committed_on_assignment", False)
        self.clock = MockClock(1000)
        self.member = GroupMember(MemberConfig(group_id="g", **config), self.clock.now_ms)
        if topics:
            self.member.subscribe(list(topics), self.clock.now_ms)
        self.pending = {}

    @property
    def now(self):
        return self.clock.now_ms

    def pump(self):
        """Collect outbound requests; return them as a list of request values."""
        out = self.member.outbound(self.now)
        for ob in out:
            self.pending.setdefault(type(ob.request), []).append(ob)
        return [ob.request for ob in out]

    def reply(self, request_type, response):
        ob = self.pending[request_type].pop(0)
        self.member.on_response(ob.token, response, self.now)
        return ob.request

    def fail(self, request_type):
        ob = self.pending[request_type].pop(0)
        self.member.on_transport_error(ob.token, self.now)
        return ob.request

    def find(self):
        assert [type(r) for r in self.pump()] == [m.FindCoordinatorRequest]
        self.reply(m.FindCoordinatorRequest, m.FindCoordinatorResponse(OK, node_id=0))

    def join(self, partitions, generation=1, member_id="m1", leader="other"):
        """From a prepared member: answer its JoinGroup and SyncGroup."""
        if self.member.coordinator_id is None:
            self.find()
        self.member.on_app_poll(self.now)
        self.member.take_events()
        self.member.on_app_poll(self.now)
        reqs = self.pump()
        assert m.JoinGroupRequest in [type(r) for r in reqs], reqs
        self.reply(m.JoinGroupRequest, m.JoinGroupResponse(
            OK, generation_id=generation, protocol_type="consumer",
            protocol_name=self.member.config.assignors[0].name, leader=leader, member_id=member_id))
        assert m.SyncGroupRequest in [type(r) for r in self.pump()]
        self.reply(m.SyncGroupRequest, m.SyncGroupResponse(
            OK, "consumer", self.member.config.assignors[0].name,
            codec.encode_assignment(Assignment(partitions))))
        return self.member.take_events()


class CooperativeSplit(SplitAssignor):
    """SplitAssignor made KIP-429 safe: a partition that changes owner is withheld for one round."""

    name = "coop-split"
    supported_protocols = (RebalanceProtocol.COOPERATIVE,)

    def assign(self, partitions_per_topic, subscriptions, partition_racks=None):
        target = super().assign(partitions_per_topic, subscriptions)
        owner = {tp: mid for mid, sub in subscriptions.items() for tp in sub.owned_partitions}
        return {
            mid: Assignment([tp for tp in a.partitions if owner.get(tp, mid) == mid])
            for mid, a in target.items()
        }


class Ownership:
    """Applies listener events in callback order; fails on double ownership."""

    def __init__(self):
        self.owner = {}
        self.violations = []

    def apply(self, name, events):
        from kgroup.core.member import PartitionsAssigned, PartitionsLost, PartitionsRevoked

        for e in events:
            if isinstance(e, PartitionsAssigned):
                for tp in e.partitions:
                    if self.owner.get(tp, name) != name:
                        self.violations.append((tp, self.owner[tp], name))
                    self.owner[tp] = name
            elif isinstance(e, (PartitionsRevoked, PartitionsLost)):
                for tp in e.partitions:
                    if self.owner.get(tp) == name:
                        del self.owner[tp]


TOPICS = {"t": 6}


class InProcessGroup:
    """Pure members on an InProcessHub in front of a real GroupCoordinator, on a MockClock."""

    def __init__(self, assignor_factory, initial_delay_ms=0):
        self.clock = MockClock(0)
        config = GroupCoordinatorConfig(group_min_session_timeout_ms=100,
                                        group_initial_rebalance_delay_ms=initial_delay_ms)
        ids = iter(range(1000))
        coordinator = GroupCoordinator(config, member_id_factory=lambda prefix: f"{prefix}-{next(ids)}")
        self.hub = InProcessHub(coordinator, clock=self.clock)
        self.scheduler = Scheduler(self.clock)
        self.scheduler.add_timers(self.hub)
        self.poll_interval_ms = 10
        self.assignor_factory = assignor_factory
        self.runners = {}
        self.ownership = Ownership()
        self.generations = []

    def add(self, name, **kw):
        kw.setdefault("session_timeout_ms", 1000)
        kw.setdefault("heartbeat_interval_ms", 200)
        kw.setdefault("enable_auto_commit", False)
        kw.setdefault("fetch_committed_on_assignment", False)
        assignors = self.assignor_factory()
        assignors = tuple(assignors) if isinstance(assignors, (tuple, list)) else (assignors,)
        member = GroupMember(MemberConfig(group_id="g", assignors=assignors, client_id=name, **kw),
                             self.clock.now_ms)
        member.subscribe(["t"], self.clock.now_ms)
        member.update_metadata(TOPICS, self.clock.now_ms)
        runner = MemberRunner(member, self.hub.transport(), self.clock)
        self.runners[name] = runner
        app = PollCadence(lambda now_ms: self._app_poll(name, member, now_ms), self.poll_interval_ms,
                          first_ms=self.clock.now_ms)
        self.scheduler.remove_member(name)  # a test may have popped it from runners
        self.scheduler.add_member(name, runner, app)
        return member

    def _app_poll(self, name, member, now_ms):
        events = member.take_events()
        self.ownership.apply(name, events)
        for e in events:
            if isinstance(e, PartitionsAssigned):
                self.generations.append(e.generation.generation_id)
        member.on_app_poll(now_ms)

    def run(self, ms, step_ms=10):
        """Drive the members and the coordinator for ``ms`` of mock time (whole ``step_ms`` steps,
        as before the scheduler); the applications poll every ``step_ms``."""
        # Tests crash a member by popping it from ``runners``: drive exactly the ones left.
        for name in [n for n in self.scheduler.members if n not in self.runners]:
            self.scheduler.remove_member(name)
        for driven in self.scheduler.members.values():
            driven.app.interval_ms = step_ms
        self.scheduler.run_for(ms // step_ms * step_ms)

    def settled(self):
        members = [r.member for r in self.runners.values()]
        if not all(m.state is ClassicMemberState.STABLE and not m.rejoin_needed for m in members):
            return False
        owned = [tp for m in members for tp in m.assignment]
        return len(owned) == len(set(owned)) == sum(TOPICS.values())

    def run_until_settled(self, limit_ms=5000):
        for _ in range(limit_ms // 50):
            self.run(50)
            if self.settled():
                return
        pytest.fail(f"not settled: {[(r.member.state, r.member.assignment) for r in self.runners.values()]}")

    def sizes(self):
        return sorted(len(r.member.assignment) for r in self.runners.values())
