"""Several pure members against the real in-memory GroupCoordinator on a MockClock (no threads)."""
from kgroup.core.member import ClassicMemberState

from member_fakes import CooperativeSplit, EagerOnly, InProcessGroup as Group


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
    assert first.member.state is ClassicMemberState.FATAL


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
