"""Issue 9's seeded fault campaign (kgroup.sim.fault_campaign: families of kgroup.sim runs) and the
proof that its checks bite on the bugs issue 9 fixed.

Default run: DEFAULT_SEEDS seeds over every family.  ``-m slow``: 10,000 seeds.  A failing seed replays
exactly: ``python -c "from kgroup.sim.fault_campaign import run_seed; print(run_seed(SEED).describe())"``.
"""
import os
import subprocess
import sys
import time

import pytest

from kgroup.sim.campaign import run_jobs
from kgroup.sim.checker import check_commit_generations
from kgroup.sim.history import CommitAnswered, History, OwnershipChanged, Processed
from kgroup.sim import fault_campaign as fc
from kgroup.values import TopicPartition

import campaign_planted_bugs

DEFAULT_SEEDS = 150
CHUNK = 25
CAMPAIGN_SEEDS = 10_000
#: Seeds of the 10,000 that fail on a genuine finding not fixed yet (docs/fault_campaign.md).  None since
#: seed 4976 (a static cooperative member restarting while it owes its follow-up rejoin) was fixed in the
#: coordinator; ``test_seed_4976_settles`` keeps it.
KNOWN_FAILING_SEEDS: tuple = ()
#: Seeds whose applications commit ``retried`` (so a retry can outlive a newer commit).
UNORDERED_SEEDS = (0, 40, 78)


def _failed(seeds):
    return [v for v in (fc.run_seed(seed) for seed in seeds) if not v.ok]


@pytest.mark.parametrize("first_seed", range(0, DEFAULT_SEEDS, CHUNK))
def test_campaign_seeds_hold_every_invariant(first_seed):
    failed = _failed(range(first_seed, first_seed + CHUNK))
    assert not failed, fc.campaign_summary(failed)


def test_a_seed_replays_exactly_and_families_draw_from_their_own_streams():
    first, second = fc.run_seed(11), fc.run_seed(11)
    assert first.history.format() == second.history.format() and first.violations == second.violations
    # The fault stream alone decides the schedule: the same seed plans the same faults in any family
    # that draws the same kinds (static families add restarts).
    schedules = {fc.plan(5, family).schedule for family in ("eager", "cooperative", "upgrade")}
    assert len(schedules) == 1
    assert fc.plan(5, "eager").config.members == fc.plan(5, "static").config.members
    with pytest.raises(ValueError, match="unknown family"):
        fc.plan(5, "chaotic")


def test_schedules_do_not_depend_on_the_hash_seed():
    code = "from kgroup.sim.fault_campaign import plan; print([plan(s).describe() for s in range(20)])"
    outputs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": str(h)}).stdout for h in (0, 1, 2)}
    assert len(outputs) == 1


def test_every_family_is_exercised_by_the_default_seeds():
    scenarios = [fc.plan(s) for s in range(DEFAULT_SEEDS)]
    assert {s.family for s in scenarios} == set(fc.FAMILIES)
    upgrade = next(s for s in scenarios if s.family == "upgrade")
    assert upgrade.config.assignor == "upgrade"
    bounces = [f.kind for s in scenarios if s.family == "static-bounce" for f in s.schedule.faults]
    assert bounces and set(bounces) == {"bounce"}


def test_the_upgrade_family_mixes_eager_and_cooperative_members():
    """Kafka's documented rolling upgrade (KIP-429): eager members listing both assignors beside
    members on cooperative-sticky alone, one group."""
    verdict = fc.run_seed(0, "upgrade")
    eager = {e.member for e in verdict.history.of(OwnershipChanged) if e.eager}
    cooperative = {e.member for e in verdict.history.of(OwnershipChanged) if not e.eager}
    assert verdict.ok and {"m0", "m1"} <= eager | cooperative and "m0" in eager and "m1" in cooperative


# -- the checks catch the bugs they exist for ------------------------------------------------

def test_campaign_catches_eager_members_claiming_ownership_on_the_upgrade_path():
    """Issue 9 item 1 reinstated: the upgrade-path group leaves partitions orphaned."""
    seeds = (0, 1, 5)
    assert all(fc.run_seed(seed, "upgrade").ok for seed in seeds)
    with campaign_planted_bugs.eager_members_claim_their_last_assignment():
        verdicts = [fc.run_seed(seed, "upgrade") for seed in seeds]
    assert all("unbalanced" in verdict.checks_failed() for verdict in verdicts), fc.campaign_summary(verdicts)


def test_campaign_catches_committed_offsets_going_backwards():
    """Issue 9 item 2 reinstated: a retry lands after a newer acknowledged commit."""
    seeds = UNORDERED_SEEDS
    assert all(fc.plan(seed).config.commit_mode == "retried" and fc.run_seed(seed).ok for seed in seeds)
    with campaign_planted_bugs.retries_unordered():
        verdicts = [fc.run_seed(seed) for seed in seeds]
    assert all("offset-went-back" in v.checks_failed() for v in verdicts), fc.campaign_summary(verdicts)


def test_stale_generation_check_flags_a_commit_made_before_another_member_owned_the_partition():
    """Issue 9 item 3: the check itself, on a planted history (the bug needs a retry that outlives
    a rebalance, which the unit test ``test_commit_made_in_an_old_generation_is_not_sent_in_the_new_one``
    drives directly)."""
    tp = TopicPartition("events", 0)
    history = History()
    for event in [
        Processed(1, "m0", "a", 2, tp, 0, 5),
        OwnershipChanged(1, "m0", "a", 2, "STABLE", frozenset({tp}), True),
        OwnershipChanged(2, "m0", "a", 3, "STABLE", frozenset({tp}), True),
        # made in 2, kept the partition into 3: fine
        CommitAnswered(3, "m0", "a", 3, tp, 5, "NONE", handled_ms=2),
        Processed(4, "m0", "a", 3, tp, 5, 10),
        OwnershipChanged(5, "m1", "b", 4, "STABLE", frozenset({tp}), True),
        # made in 3, accepted as 4 (b owned it in 4)
        CommitAnswered(6, "m0", "a", 4, tp, 10, "NONE", handled_ms=5),
        Processed(7, "m1", "b", 4, tp, 10, 20),
        CommitAnswered(8, "m1", "b", 4, tp, 20, "NONE", handled_ms=7),  # fine
    ]:
        history.record(event)
    violations = check_commit_generations(history)
    assert [v.check for v in violations] == ["stale-generation-commit"] and "@10" in violations[0].message


def test_seed_4976_settles():
    """The static cooperative member restarted while it owed KIP-429's follow-up rejoin: the
    coordinator rebalances instead of handing the new process its stored assignment, so no partition
    stays unowned (``_owes_follow_up_rejoin`` in kgroup/core/coordinator/coordinator.py)."""
    verdict = fc.run_seed(4976)
    assert verdict.ok, verdict.describe()


# -- the long campaign -----------------------------------------------------------------------

@pytest.mark.slow
def test_ten_thousand_seeds(capsys):
    started = time.perf_counter()
    scenarios = [fc.plan(seed) for seed in range(CAMPAIGN_SEEDS)]
    result = run_jobs([(s.schedule, s.config) for s in scenarios], os.cpu_count())
    elapsed = time.perf_counter() - started
    failed = [(seed, s, o) for seed, (s, o) in enumerate(zip(scenarios, result.outcomes)) if not o.ok]
    with capsys.disabled():
        print(f"\nfault campaign: {CAMPAIGN_SEEDS} seeds in {elapsed:.0f} s "
              f"({CAMPAIGN_SEEDS / elapsed:.1f} seeds/s on {result.workers} processes), "
              f"{len(failed)} with violations")
        print("coverage: " + ", ".join(f"{key} {count}" for key, count in sorted(result.coverage().items())))
    # Exactly the known seeds fail: a fix or a new failure both show here.
    assert tuple(seed for seed, _, _ in failed) == KNOWN_FAILING_SEEDS, "\n".join(
        f"seed {seed}: {s.describe()}\n  {o.violations[:3]}" for seed, s, o in failed[:10])
