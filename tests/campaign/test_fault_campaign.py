"""Issue 9's seeded fault campaign (kgroup.testing.fault_campaign) and the proof that its checks bite.

Default run: 300 seeds over every family.  ``-m slow``: 10,000 seeds.  A
failing seed replays exactly: ``python -c "from kgroup.testing.fault_campaign
import run_seed; print(run_seed(SEED))"``.
"""
import os
import subprocess
import sys
import time
from multiprocessing import Pool

import pytest

from kgroup.testing import fault_campaign as fc
from kgroup.values import TopicPartition

import planted_bugs

DEFAULT_SEEDS = 300
CHUNK = 25
CAMPAIGN_SEEDS = 10_000


def _violations(seeds):
    failed = []
    for seed in seeds:
        verdict = fc.run_seed(seed)
        if not verdict.ok:
            failed.append(verdict)
    return failed


@pytest.mark.parametrize("first_seed", range(0, DEFAULT_SEEDS, CHUNK))
def test_campaign_seeds_hold_every_invariant(first_seed):
    failed = _violations(range(first_seed, first_seed + CHUNK))
    assert not failed, fc.campaign_summary(failed)


def test_a_seed_replays_exactly_and_families_draw_from_their_own_streams():
    first, second = fc.run_seed(11), fc.run_seed(11)
    assert first == second
    # The fault stream alone decides the schedule: the same seed plans the same faults in any family.
    assert fc.plan(5, "eager").faults == fc.plan(5, "cooperative").faults


def test_schedules_do_not_depend_on_the_hash_seed():
    code = "from kgroup.testing.fault_campaign import plan; print([plan(s).describe() for s in range(20)])"
    outputs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": str(h)}).stdout for h in (0, 1, 2)}
    assert len(outputs) == 1


def test_every_family_is_exercised_by_the_default_seeds():
    assert {fc.plan(s).family for s in range(DEFAULT_SEEDS)} == set(fc.FAMILIES)


# -- the checks catch the bugs they exist for ------------------------------------------------

def test_campaign_catches_eager_members_claiming_ownership_on_the_upgrade_path():
    """Issue 9 item 1 reinstated: the upgrade-path group leaves partitions orphaned."""
    with planted_bugs.eager_members_claim_their_last_assignment():
        verdicts = [fc.run_seed(seed, "upgrade") for seed in (3, 17, 26)]
    assert all(any("not every partition owned" in v for v in verdict.violations) for verdict in verdicts)


def test_campaign_catches_committed_offsets_going_backwards():
    """Issue 9 item 2 reinstated: a retry lands after a newer acknowledged commit."""
    with planted_bugs.retries_unordered():
        verdicts = [fc.run_seed(seed) for seed in (398,)]
    assert all(any("went back" in v for v in verdict.violations) for verdict in verdicts)


def test_stale_generation_check_flags_a_commit_made_before_another_member_owned_the_partition():
    """Issue 9 item 3: the check itself, on a planted history (the bug needs a retry that outlives
    a rebalance, which the unit test ``test_commit_made_in_an_old_generation_is_not_sent_in_the_new_one``
    drives directly)."""
    campaign = fc._Campaign(fc.plan(0, "eager"))
    try:
        tp = TopicPartition(fc.TOPIC, 0)
        campaign.produced_in[("a", tp, 10)] = {3}
        campaign.owner_in.update({(tp, 3): "a", (tp, 4): "b"})
        campaign.accepted_commits.append((100, "m0", "a", tp, 10, 4))  # made in 3, accepted as 4
        campaign.produced_in[("b", tp, 20)] = {4}
        campaign.accepted_commits.append((200, "m1", "b", tp, 20, 4))  # fine
        campaign.produced_in[("a", tp, 5)] = {2}
        campaign.owner_in[(tp, 2)] = "a"
        campaign.accepted_commits.append((300, "m0", "a", tp, 5, 3))  # kept the partition: fine
        campaign.check_commit_generations()
    finally:
        campaign.close()
    assert len(campaign.violations) == 1 and "tp" not in campaign.violations[0]
    assert "stale-generation" in campaign.violations[0] and "@10" in campaign.violations[0]


# -- the long campaign -----------------------------------------------------------------------

@pytest.mark.slow
def test_ten_thousand_seeds(capsys):
    started = time.perf_counter()
    chunks = [range(s, min(s + 100, CAMPAIGN_SEEDS)) for s in range(0, CAMPAIGN_SEEDS, 100)]
    with Pool(os.cpu_count() or 2) as pool:
        failed = [v for part in pool.map(_violations, chunks) for v in part]
    elapsed = time.perf_counter() - started
    with capsys.disabled():
        print(f"\nfault campaign: {CAMPAIGN_SEEDS} seeds in {elapsed:.0f} s "
              f"({CAMPAIGN_SEEDS / elapsed:.1f} seeds/s on {os.cpu_count()} processes), "
              f"{len(failed)} with violations")
    assert not failed, fc.campaign_summary(failed)
