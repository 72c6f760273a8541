"""The history checks on hand-made histories: each passes a good one and names a bad one."""
from kgroup.sim import simulator
from kgroup.sim.checker import (
    OwnershipChecker, check_acknowledged_commits_survive, check_commit_generations, check_lost_writes,
    check_offsets_monotonic, check_resumes, check_sticky_moves,
)
from kgroup.sim.history import (
    CommitAnswered, CommitSent, FaultApplied, History, OwnershipChanged, Processed, Resumed,
)
from kgroup.values import TopicPartition

TP = TopicPartition("events", 0)


def _history(*events):
    history = History()
    for event in events:
        history.record(event)
    return history


def test_offsets_going_back_are_named_and_acknowledged_commits_must_survive():
    history = _history(CommitSent(1, "m0", "a", 1, TP, 10, "STABLE"),
                       CommitAnswered(2, "m0", "a", 1, TP, 10, "NONE", handled_ms=1),
                       CommitSent(3, "m1", "b", 1, TP, 5, "STABLE"),
                       CommitAnswered(4, "m1", "b", 1, TP, 5, "NONE", handled_ms=3))
    assert [v.check for v in check_offsets_monotonic(history)] == ["offset-went-back"]
    assert check_acknowledged_commits_survive(history, {TP: 5}) == []
    lost = check_acknowledged_commits_survive(history, {TP: 3})
    assert [v.check for v in lost] == ["acknowledged-commit-lost"]


def test_commits_are_ordered_by_when_the_coordinator_handled_them_not_by_when_answers_arrived():
    """A member frozen right after sending reads its answer seconds later: its commit of 10 was handled
    at 2, before m1's commit of 50 (handled at 5), so the committed offset never went back and 50 is
    the one that must survive, though the answers arrived in the other order."""
    history = _history(CommitSent(1, "m0", "a", 1, TP, 10, "STABLE"),
                       CommitSent(4, "m1", "b", 2, TP, 50, "STABLE"),
                       CommitAnswered(6, "m1", "b", 2, TP, 50, "NONE", handled_ms=5),
                       CommitAnswered(900, "m0", "a", 1, TP, 10, "NONE", handled_ms=2))
    assert check_offsets_monotonic(history) == []
    assert check_acknowledged_commits_survive(history, {TP: 50}) == []
    assert [v.check for v in check_acknowledged_commits_survive(history, {TP: 10})] == [
        "acknowledged-commit-lost"]
    # The other way round, a commit handled later going back is named even when its answer came first.
    late = _history(CommitAnswered(6, "m1", "b", 2, TP, 5, "NONE", handled_ms=5),
                    CommitAnswered(7, "m0", "a", 2, TP, 50, "NONE", handled_ms=3))
    violations = check_offsets_monotonic(late)
    assert [v.check for v in violations] == ["offset-went-back"]
    assert "from 50 (m0) to 5 (m1)" in violations[0].message


def test_resume_below_an_acknowledged_commit_is_a_duplicate_and_above_any_commit_a_skip():
    history = _history(CommitSent(1, "m0", "a", 1, TP, 10, "STABLE"),
                       CommitAnswered(2, "m0", "a", 1, TP, 10, "NONE", handled_ms=1),
                       Resumed(5, "m1", "b", 2, TP, 4, asked_at_ms=3),
                       Resumed(6, "m2", "c", 3, TP, 12, asked_at_ms=3),
                       Resumed(7, "m2", "c", 3, TP, 10, asked_at_ms=3))
    assert [v.check for v in check_resumes(history)] == ["duplicate", "poll-skip"]


def test_stale_generation_commit_and_lost_write():
    history = _history(Processed(1, "m0", "a", 3, TP, 0, 10),
                       OwnershipChanged(2, "m1", "b", 4, "STABLE", frozenset({TP}), True),
                       Processed(2, "m1", "b", 4, TP, 12, 20),
                       CommitAnswered(3, "m0", "a", 4, TP, 10, "NONE", handled_ms=2))
    assert [v.check for v in check_commit_generations(history)] == ["stale-generation-commit"]
    assert [v.check for v in check_lost_writes(history, {TP: [f"r{i}" for i in range(20)]})] == ["lost-write"]


def test_ownership_overlap_across_generations_is_reported_not_violated():
    class Member:
        def __init__(self, generation, owned):
            from kgroup.assignors import RebalanceProtocol
            from kgroup.core.member import ClassicMemberState
            from kgroup.core.member.shared.events import Generation
            self.generation = Generation(generation, f"id{generation}", "range")
            self.state = ClassicMemberState.STABLE
            self.assignment = frozenset(owned)
            self.protocol = RebalanceProtocol.EAGER

    checker = OwnershipChecker(History())
    checker.after_instant(10, [("m0", Member(1, [TP])), ("m1", Member(2, [TP]))])
    checker.after_instant(30, [("m1", Member(2, [TP]))])
    assert checker.violations == [] and [o.duration_ms for o in checker.overlaps] == [20]
    checker.after_instant(40, [("m0", Member(2, [TP])), ("m1", Member(2, [TP]))])
    assert [v.check for v in checker.violations] == ["same-generation-owners"]


def test_a_group_that_never_settles_is_named():
    sim = simulator._Simulation(0, simulator.SimConfig(members=2, partitions=2, max_poll_interval_ms=500,
                                                       session_timeout_ms=200, heartbeat_interval_ms=50),
                                simulator.Schedule())
    try:
        sim.start("m0")
        sim.kafka.kill_broker(1), sim.kafka.kill_broker(2), sim.kafka.kill_broker(3)
        assert not sim.check_settles()
        assert [v.check for v in sim.violations] == ["not-settled"]
    finally:
        sim.close()


def _tps(*indexes, topic="events"):
    return frozenset(TopicPartition(topic, i) for i in indexes)


def _owned(at_ms, member, generation, *indexes, state="STABLE", topic="events"):
    owned = _tps(*indexes, topic=topic)
    return OwnershipChanged(at_ms, member, f"{member}-id", generation, state, owned, True)


def test_needless_move_judges_against_the_generation_before_the_last_membership_change():
    # Generation 1: m0 and m1 share 4 partitions; m0 revokes before rejoining (eager), which is not
    # its assignment.  Generation 2 adds m2 (the membership change); generation 3, same members.
    history = _history(_owned(10, "m0", 1, 0, 1), _owned(10, "m1", 1, 2, 3), _owned(20, "m0", 1),
                       _owned(30, "m0", 2, 0), _owned(30, "m1", 2, 2, 3), _owned(30, "m2", 2, 1))
    final = {"m0": ("m0-id", 3, _tps(0)), "m1": ("m1-id", 3, _tps(2, 3)), "m2": ("m2-id", 3, _tps(1))}
    # Sticky: m0 gave up one partition (down to the floor, 4 // 3 = 1); nothing moved needlessly.
    assert check_sticky_moves(history, "sticky", final, 40) == []
    # Each lost both its partitions although one would do (losing one down to the floor is allowed).
    shuffled = {"m0": ("m0-id", 3, _tps(2)), "m1": ("m1-id", 3, _tps(0, 1)), "m2": ("m2-id", 3, _tps(3))}
    violations = check_sticky_moves(history, "cooperative-sticky", shuffled, 40)
    assert [(v.check, v.message.split(":")[1].split()[0]) for v in violations] == [
        ("needless-move", "m0"), ("needless-move", "m1")]
    # Range and roundrobin promise no stickiness: never judged.
    assert check_sticky_moves(history, "range", shuffled, 40) == []
    assert check_sticky_moves(history, "roundrobin", shuffled, 40) == []


def test_needless_move_starts_after_a_subscription_or_partition_count_change():
    # No membership change; in generation 2 m0 also subscribed to a second topic and gave up
    # partition 1 for the balance over six partitions; once it unsubscribed it got another one back.
    history = _history(_owned(10, "m0", 1, 0, 1), _owned(10, "m1", 1, 2, 3),
                       OwnershipChanged(20, "m0", "m0-id", 2, "STABLE",
                                        _tps(0) | _tps(0, 1, topic="audit"), True),
                       _owned(20, "m1", 2, 1, 2, 3))
    final = {"m0": ("m0-id", 3, _tps(0, 3)), "m1": ("m1-id", 3, _tps(1, 2))}
    assert check_sticky_moves(history, "sticky", final, 40) == []
    # Judged against generation 1 instead, m0 would have lost partition 1 and m1 partition 3 needlessly.
    assert [v.check for v in check_sticky_moves(_history(*history.events[:2]), "sticky", final, 40)] == [
        "needless-move"] * 2
    # The topic grew at 25 ms: generation 3 began after it, so it is the reference.
    grown = _history(_owned(10, "m0", 1, 0), _owned(10, "m1", 1, 1),
                     FaultApplied(25, "add_partitions events value 2"),
                     _owned(30, "m0", 2, 0, 2), _owned(30, "m1", 2, 1, 3))
    assert check_sticky_moves(grown, "sticky", {"m0": ("m0-id", 3, _tps(0, 2)),
                                                "m1": ("m1-id", 3, _tps(1, 3))}, 40) == []
    assert [v.check for v in check_sticky_moves(grown, "sticky", {"m0": ("m0-id", 3, _tps(0, 1)),
                                                                  "m1": ("m1-id", 3, _tps(2, 3))}, 40)] == [
        "needless-move"]


def test_needless_move_does_not_judge_a_member_that_lost_its_partitions():
    """Found by the fault campaign (seed 4753): members fenced when the coordinator moved went
    UNJOINED, lost their partitions (KIP-429) and rejoined claiming none; no assignor can keep them."""
    history = _history(_owned(10, "m0", 2, 0, 1), _owned(10, "m1", 2, 2, 3),
                       _owned(30, "m1", -1, state="UNJOINED"))
    final = {"m0": ("m0-id", 3, _tps(2)), "m1": ("m1-id", 3, _tps(0, 1, 3))}
    # m0 lost both partitions (one would do) and is judged; m1 was reset after generation 2 began.
    violations = check_sticky_moves(history, "cooperative-sticky", final, 40)
    assert [v.message.split(":")[1].split()[0] for v in violations] == ["m0"]
    # A reset before the reference generation began does not excuse anything after it.
    early = _history(_owned(5, "m1", -1, state="UNJOINED"), *history.events[:2])
    assert len(check_sticky_moves(early, "cooperative-sticky", final, 40)) == 2


def test_ownership_checker_says_whether_touched_members_are_unchanged_since_its_last_look():
    """Issue 28: the simulator looks again only when a member it polled or stepped changed."""
    from kgroup.core.member import ClassicMemberState
    from kgroup.core.member.shared.events import Generation

    class Member:
        def __init__(self):
            self.generation = Generation(1, "id1", "range")
            self.state = ClassicMemberState.STABLE
            self.assignment = frozenset([TP])

    m0, m1 = Member(), Member()
    checker = OwnershipChecker(History())
    assert not checker.unchanged({"m0": m0, "m1": m1}, ["m0"])  # no look yet
    checker.after_instant(10, [("m0", m0), ("m1", m1)])
    assert checker.unchanged({"m0": m0, "m1": m1}, ["m0", "m1"])
    m1.assignment = frozenset()  # a new owned set (a new object), as a member makes on a change
    both = {"m0": m0, "m1": m1}
    assert checker.unchanged(both, ["m0"]) and not checker.unchanged(both, ["m1"])
    assert not checker.unchanged({"m0": m0}, ["m0"])  # a member gone: the list differs
    checker.forget("m1")
    assert not checker.unchanged({"m0": m0, "m1": m1}, ["m0"])
