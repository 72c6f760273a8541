"""Several pure members against the real in-memory GroupCoordinator on a MockClock (no threads)."""
import pytest

from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig
from kgroup.core.member import GroupMember, MemberConfig, MemberState, PartitionsAssigned
from kgroup.io.inprocess import InProcessHub
from kgroup.io.runner import MemberRunner
from kgroup.testing import MockClock

from member_fakes import CooperativeSplit, EagerOnly, Ownership

TOPICS = {"t": 6}


class Group:
    def __init__(self, assignor_factory, initial_delay_ms=0):
        self.clock = MockClock(0)
        config = GroupCoordinatorConfig(group_min_session_timeout_ms=100,
                                        group_initial_rebalance_delay_ms=initial_delay_ms)
        ids = iter(range(1000))
        self.hub = InProcessHub(GroupCoordinator(config, member_id_factory=lambda prefix: f"{prefix}-{next(ids)}"),
                                clock=self.clock)
        self.assignor_factory = assignor_factory
        self.runners = {}
        self.ownership = Ownership()
        self.generations = []

    def add(self, name, **kw):
        kw.setdefault("session_timeout_ms", 1000)
        kw.setdefault("heartbeat_interval_ms", 200)
        kw.setdefault("enable_auto_commit", False)
        kw.setdefault("fetch_committed_on_assignment", False)
        member = GroupMember(MemberConfig(group_id="g", assignors=(self.assignor_factory(),), client_id=name, **kw),
                             self.clock.now_ms)
        member.subscribe(["t"], self.clock.now_ms)
        member.update_metadata(TOPICS, self.clock.now_ms)
        self.runners[name] = MemberRunner(member, self.hub.transport(), self.clock)
        return member

    def run(self, ms, step_ms=10):
        for _ in range(ms // step_ms):
            for name, runner in list(self.runners.items()):
                member = runner.member
                events = member.take_events()
                self.ownership.apply(name, events)
                for e in events:
                    if isinstance(e, PartitionsAssigned):
                        self.generations.append(e.generation.generation_id)
                member.on_app_poll(self.clock.now_ms)
                runner.step(0)
            self.hub.tick()
            self.clock.advance(step_ms)

    def settled(self):
        members = [r.member for r in self.runners.values()]
        if not all(m.state is MemberState.STABLE and not m.rejoin_needed for m in members):
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


def test_three_eager_members_balance_then_rebalance_when_one_leaves():
    g = Group(EagerOnly)
    for name in "abc":
        g.add(name)
    g.run_until_settled()
    assert g.sizes() == [2, 2, 2]
    assert not g.ownership.violations
    leaving = g.runners.pop("b")
    leaving.member.close(g.clock.now_ms)
    leaving.step(0)
    assert leaving.member.closed
    g.run_until_settled()
    assert g.sizes() == [3, 3]


def test_cooperative_join_converges_in_two_rounds_without_double_ownership():
    g = Group(CooperativeSplit)
    g.add("a")
    g.add("b")
    g.run_until_settled()
    before = max(g.generations)
    g.add("c")
    g.run_until_settled()
    assert g.sizes() == [2, 2, 2]
    assert not g.ownership.violations
    assert max(g.generations) - before <= 2


def test_member_evicted_after_session_timeout_others_take_over():
    g = Group(EagerOnly)
    for name in "abc":
        g.add(name)
    g.run_until_settled()
    g.runners.pop("c")   # crashes: never heard from again
    g.run_until_settled(limit_ms=5000)
    assert g.sizes() == [3, 3]


def test_static_member_bounce_within_session_timeout_causes_no_rebalance():
    g = Group(EagerOnly)
    g.add("a", group_instance_id="a")
    g.add("b", group_instance_id="b")
    g.run_until_settled()
    generation = g.runners["a"].member.generation.generation_id
    old = g.runners.pop("b")
    old.member.close(g.clock.now_ms)
    old.step(0)
    g.add("b", group_instance_id="b")
    g.run_until_settled()
    assert g.runners["a"].member.generation.generation_id == generation
    assert g.sizes() == [3, 3]


def test_fenced_static_member_turns_fatal():
    g = Group(EagerOnly)
    g.add("a", group_instance_id="same")
    g.run_until_settled()
    first = g.runners.pop("a")
    g.add("a2", group_instance_id="same")   # takes over the instance id
    g.run_until_settled()
    g.clock.advance(300)
    first.step(0)
    first.step(0)
    assert first.member.state is MemberState.FATAL


def test_cooperative_sticky_assignor_two_rounds_no_double_ownership():
    from kgroup.assignors import get_assignor

    g = Group(lambda: get_assignor("cooperative-sticky"))
    g.add("a")
    g.add("b")
    g.run_until_settled()
    before = max(g.generations)
    g.add("c")
    g.run_until_settled()
    assert g.sizes() == [2, 2, 2]
    assert not g.ownership.violations
    assert max(g.generations) - before <= 2
    leaving = g.runners.pop("a")
    leaving.member.close(g.clock.now_ms)
    g.ownership.apply("a", leaving.member.take_events())
    leaving.step(0)
    g.run_until_settled()
    assert g.sizes() == [3, 3] and not g.ownership.violations
