"""The simulator's fault kinds as registered classes (issue 25 point 7): each one is read, printed,
drawn, applied and shrunk through the registry, and ``freeze`` (a process paused whole, as by a
stop-the-world GC) was added as one class and one registry line."""
import random

import attrs
import pytest

from kgroup.errors import ConfigError
from kgroup.sim import Fault, SimConfig, parse_schedule, run
from kgroup.sim.faults import DRAWN_FAULT_KINDS, FAULT_KINDS, FaultDraw
from kgroup.sim.history import CommitAnswered, CoordinatorMoved, FaultApplied, OwnershipChanged
from kgroup.sim.schedule import Schedule, ScheduleFormatError, generate_schedule
from kgroup.sim.shrink import shrink

SMALL = SimConfig(members=3, partitions=6, duration_ms=12_000)

#: One fault of every kind, each aimed at a target of its own kind.
ONE_OF_EACH = """# seed 3
  2500 ms  crash m0 for 300 ms
  2700 ms  leave m1 for 300 ms
  3000 ms  slow_poll m2 for 200 ms
  3200 ms  bounce m0 for 100 ms
  3400 ms  resubscribe m1 for 400 ms
  3600 ms  kill_broker b1 for 500 ms
  4400 ms  controlled_shutdown b2 for 500 ms
  5200 ms  isolate_broker b3 for 500 ms
  6000 ms  slow_follower b1 for 500 ms
  6800 ms  move_coordinator group for 500 ms
  7600 ms  partition m0>b1 for 300 ms
  7700 ms  lossy m1-* for 300 ms value 30
  7800 ms  reset m2-b2
  8000 ms  join j0
  8200 ms  add_partitions events value 2
  8400 ms  freeze m2 for 300 ms
  8600 ms  preferred_election cluster
"""


def test_one_schedule_line_of_every_registered_kind_prints_parses_and_applies():
    schedule = parse_schedule(ONE_OF_EACH)
    assert [f.kind for f in schedule.faults] == list(FAULT_KINDS)  # the example covers the registry
    assert schedule.to_text() == ONE_OF_EACH
    verdict = run(schedule, SMALL)
    applied = [e.fault.split()[0] for e in verdict.history.of(FaultApplied) if not e.fault.startswith("heal")]
    assert applied == list(FAULT_KINDS)
    healed = {e.fault.split()[1] for e in verdict.history.of(FaultApplied) if e.fault.startswith("heal")}
    # Every kind with something to undo undid it (these have none).
    assert healed == set(FAULT_KINDS) - {"slow_poll", "reset", "join", "add_partitions", "preferred_election"}
    assert verdict.ok, verdict.describe()


@pytest.mark.parametrize("line, error", [
    ("100 ms freeze b1 for 10 ms", "line 1: freeze aims at a member"),
    ("100 ms kill_broker m0", "kill_broker aims at a broker"),
    ("100 ms partition m0 for 10 ms", "partition aims at a link"),
    ("100 ms partition m0-group", "partition aims at a link"),
])
def test_a_fault_aimed_at_a_target_of_another_kind_is_refused(line, error):
    with pytest.raises(ScheduleFormatError, match=error):
        parse_schedule(line)
    with pytest.raises(ScheduleFormatError):
        Fault(100, line.split()[2], line.split()[3])


def test_each_kind_shrinks_to_a_smaller_fault_of_itself_or_not_at_all():
    shrunk = {kind: FAULT_KINDS[kind].shrink(fault) for kind, fault in
              ((f.kind, f) for f in parse_schedule(ONE_OF_EACH).faults)}
    assert [str(f).strip() for f in shrunk["freeze"]] == [
        "8400 ms  freeze m2", "8400 ms  freeze m2 for 150 ms"]
    assert [str(f).strip() for f in shrunk["lossy"]] == [
        "7700 ms  lossy m1-* for 300 ms value 10", "7700 ms  lossy m1-* value 30",
        "7700 ms  lossy m1-* for 150 ms value 30"]
    assert [str(f).strip() for f in shrunk["add_partitions"]] == ["8200 ms  add_partitions events value 1"]
    assert shrunk["join"] == shrunk["reset"] == shrunk["preferred_election"] == ()
    for fault in parse_schedule(ONE_OF_EACH).faults:  # smaller: the same fault, less of it
        for candidate in shrunk[fault.kind]:
            assert attrs.evolve(candidate, duration_ms=fault.duration_ms, value=fault.value) == fault
            assert candidate.duration_ms <= fault.duration_ms and candidate.value <= fault.value
            assert candidate != fault


@attrs.frozen
class _FakeVerdict:
    """What shrink reads of a verdict: its schedule, config and failed checks."""

    schedule: Schedule
    config: SimConfig = SMALL

    def checks_failed(self) -> set:
        # The "bug": a crash of m1 of at least 100 ms while m2's link to broker 1 is lossy.
        faults = self.schedule.faults
        crash = any(f.kind == "crash" and f.target == "m1" and f.duration_ms >= 100 for f in faults)
        lossy = any(f.kind == "lossy" and f.target == "m2-b1" for f in faults)
        return {"lost-write"} if crash and lossy else set()


def test_shrinking_removes_needless_faults_then_makes_each_remaining_one_smaller():
    schedule = parse_schedule("""# seed 5
  2500 ms  join j0
  3000 ms  crash m1 for 3000 ms
  3500 ms  lossy m2-b1 for 2000 ms value 60
  4000 ms  kill_broker b2 for 800 ms
""")
    result = shrink(_FakeVerdict(schedule), runner=lambda candidate, config: _FakeVerdict(candidate))
    # Halving 3000 ms while the run still fails: 1500, 750, 375, 187 (93 passes); 0 ms and 10 % are tried.
    assert result.minimal.to_text() == (
        "# seed 5\n  3000 ms  crash m1 for 187 ms\n  3500 ms  lossy m2-b1 value 10\n")
    assert result.verdict.checks_failed() == {"lost-write"}


def test_every_kind_draws_a_fault_that_prints_and_parses_back():
    plan = SMALL.fault_plan()
    for name, kind in FAULT_KINDS.items():
        drawn = FaultDraw(random.Random(name), plan, 2_500, 700, "m1", 2, [])
        fault = Fault(2_500, name, *kind.draw(drawn))
        assert parse_schedule(f"{fault}\n").faults == (fault,)


def test_freeze_is_drawn_only_on_request_so_every_seed_keeps_its_schedule():
    assert "freeze" in FAULT_KINDS and "freeze" not in DRAWN_FAULT_KINDS
    with_freeze = attrs.evolve(SMALL, extra_faults=("freeze",))
    drawn = [generate_schedule(seed, with_freeze.fault_plan()) for seed in range(60)]
    assert any(f.kind == "freeze" and f.target.startswith("m") for s in drawn for f in s.faults)
    assert all(f.kind != "freeze" for seed in range(60)
               for f in generate_schedule(seed, SMALL.fault_plan()).faults)
    for extra in (("crash",), ("explode",), ("freeze", "freeze")):
        with pytest.raises(ConfigError, match="extra fault kind"):
            attrs.evolve(SMALL, extra_faults=extra)


def _m1_events(verdict, start_ms, end_ms):
    return [e for e in verdict.history.events
            if getattr(e, "member", None) == "m1" and start_ms < e.at_ms < end_ms]


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_freeze_longer_than_the_session_leaves_a_zombie_that_is_fenced_when_it_thaws(protocol):
    config = attrs.evolve(SMALL, group_protocol=protocol)
    assert config.session_timeout_ms < 3_000  # the freeze outlasts the session: the group expels m1
    verdict = run(parse_schedule("# seed 1\n  4000 ms  freeze m1 for 3000 ms\n"), config)
    assert [(e.at_ms, e.fault) for e in verdict.history.of(FaultApplied)] == [
        (4000, "freeze m1 for 3000 ms"), (7000, "heal freeze m1")]
    assert _m1_events(run(1, attrs.evolve(config, faults="none")), 4000, 7000)  # unfrozen, m1 is busy
    assert not _m1_events(verdict, 4000, 7000)  # frozen: no poll, fetch, commit or ownership change
    # The others took m1's partitions while it slept; it still believed it owned them (the overlap the
    # protocol allows), and on waking learnt it had been expelled: fenced (KIP-848) or without a
    # generation (classic), before it rejoined.
    assert any("m1" in overlap.members for overlap in verdict.overlaps)
    woke = [e for e in verdict.history.of(OwnershipChanged) if e.member == "m1" and e.at_ms >= 7000][0]
    if protocol == "consumer":
        assert (woke.state, woke.owned) == ("FENCED", frozenset())
    else:
        assert woke.generation == -1
    assert verdict.ok, verdict.describe()


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_freeze_shorter_than_the_session_goes_unnoticed_by_the_group(protocol):
    config = attrs.evolve(SMALL, group_protocol=protocol)
    freeze_ms = 300
    assert freeze_ms + config.heartbeat_interval_ms < config.session_timeout_ms
    verdict = run(parse_schedule(f"# seed 1\n  4000 ms  freeze m1 for {freeze_ms} ms\n"), config)
    assert not _m1_events(verdict, 4000, 4000 + freeze_ms)
    assert not [e for e in verdict.history.of(OwnershipChanged) if e.at_ms >= 4000]  # no rebalance
    assert verdict.ok, verdict.describe()


#: Seeds whose frozen member read, on thawing, the answer of a commit the coordinator had handled
#: before the group moved its partitions on: the history checker took the late answer for a commit
#: going back until it ordered commits by when the coordinator handled them (docs/simulator.md).
FREEZE_CONFIG = SimConfig(members=3, partitions=6, duration_ms=10_000, max_faults=5, extra_faults=("freeze",))


@pytest.mark.parametrize("protocol,seed", [("classic", 1), ("classic", 7), ("classic", 22), ("classic", 28),
                                           ("consumer", 1), ("consumer", 7), ("consumer", 22)])
def test_a_frozen_members_late_commit_answer_is_not_an_offset_going_back(protocol, seed):
    config = attrs.evolve(FREEZE_CONFIG, group_protocol=protocol)
    verdict = run(seed, config)
    assert any(f.kind == "freeze" for f in verdict.schedule.faults)
    late = [e for e in verdict.history.of(CommitAnswered)
            if e.error == "NONE" and e.at_ms - e.handled_ms > config.session_timeout_ms]
    assert late, "the seed no longer has an answer read long after the coordinator handled it"
    assert verdict.ok, verdict.describe()


def test_a_preferred_election_after_the_coordinator_failed_over_moves_it_back():
    text = "# seed 1\n  3000 ms  kill_broker group for 500 ms\n  6000 ms  preferred_election cluster\n"
    verdict = run(parse_schedule(text), SMALL)
    moves = [(e.at_ms, e.old_broker, e.new_broker) for e in verdict.history.of(CoordinatorMoved)]
    first, failed_over, moved_back = moves  # loaded at 0 ms, failed over at the kill, moved back at 6000 ms
    assert failed_over[0] == 3000 and failed_over[1] == first[2] != failed_over[2]
    assert moved_back == (6000, failed_over[2], first[2])
    assert verdict.ok, verdict.describe()
    with pytest.raises(ScheduleFormatError, match="preferred_election aims at the cluster"):
        parse_schedule("100 ms preferred_election b1")
