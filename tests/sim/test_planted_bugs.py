"""Each check of the simulator catches the bug it exists for (a check that cannot fail is a defect)."""

import pytest

from kgroup.sim import CHECKS, SimConfig, run

import sim_planted_bugs as planted_bugs

SMALL = SimConfig(members=3, partitions=6, duration_ms=12_000, max_faults=6)
QUIET_RANGE = SimConfig(members=3, partitions=6, duration_ms=8_000, assignor="range", faults="none")
RANGE = SimConfig(members=3, partitions=6, duration_ms=12_000, assignor="range")


#: (bug, the check that must name it, config, seed)
CASES = [
    (planted_bugs.assignor_double_assigns, "same-generation-owners", QUIET_RANGE, 0),
    (planted_bugs.assignor_forgets_a_partition, "unbalanced", QUIET_RANGE, 0),
    (planted_bugs.eager_members_keep_partitions_through_the_join, "eager-owns-during-rebalance", RANGE, 0),
    (planted_bugs.revoked_commits_stamped_with_the_next_generation, "stale-generation-commit", RANGE, 1),
    (planted_bugs.new_owner_starts_from_the_beginning, "duplicate", SMALL, 0),
    (planted_bugs.consumer_skips_a_record, "poll-skip", SMALL, 0),
    (planted_bugs.commits_before_processing, "lost-write",
     SimConfig(members=3, partitions=6, duration_ms=12_000, processing_ms_per_record=20), 4),
    (planted_bugs.commits_released_before_the_high_watermark, "acknowledged-commit-lost", SMALL, 0),
    (planted_bugs.static_member_restarts_with_a_new_instance_id, "static-bounce-rebalanced",
     SimConfig(members=3, partitions=6, duration_ms=12_000, faults="static-bounce"), 0),
    (planted_bugs.commits_rewind_now_and_then, "offset-went-back", SMALL, 0),
    (planted_bugs.sticky_assignor_shuffles, "needless-move",
     SimConfig(members=3, partitions=6, duration_ms=12_000, max_faults=6, assignor="sticky"), 1),
]


@pytest.mark.parametrize("bug, check, config, seed", CASES, ids=[c[1] for c in CASES])
def test_each_check_catches_its_planted_bug(bug, check, config, seed):
    assert run(seed, config).ok, "the seed must pass without the bug"
    with bug():
        verdict = run(seed, config)
    assert check in verdict.checks_failed(), verdict.describe()


def test_every_check_has_a_planted_bug():
    # not-settled is the bound on settling; the forgetful assignor trips "unbalanced" first, so
    # it is shown on a planted history in test_checker.py.
    assert set(CHECKS) - {c[1] for c in CASES} == {"not-settled"}
