"""The simulator with KIP-848 members (``group_protocol="consumer"``): the same checks, faults and replay.

The members are kgroup's pure :class:`~kgroup.core.member.consumer.ConsumerProtocolMember`, the
coordinator the in-memory cluster's consumer groups, the assignor the coordinator's (``uniform`` or
``range``).  Generations are member epochs.
"""
import pytest

import attrs

from kgroup.cli import main
from kgroup.core.member.consumer import ConsumerProtocolMember
from kgroup.errors import ConfigError
from kgroup.sim import SimConfig, run
from kgroup.sim.history import MemberFailed, MemberStopped
from kgroup.sim.schedule import parse_schedule

SMALL = SimConfig(members=3, partitions=6, duration_ms=10_000, max_faults=5, group_protocol="consumer")
SEEDS = 60
#: Seed 83 of ``kgroup campaign --group-protocol consumer --assignor range``, shrunk: a member restarted
#: (a new member id) reconciles the partitions it was just given while its regular heartbeat reports
#: what it had reconciled before, nothing; the old member's expiry moves those partitions on.  (Shrunk
#: again when a blocked commit_sync started waking on its answer instead of every 5 ms: the two early
#: faults only set the timing up.)
SEED_83 = """\
# seed 83
  4442 ms  slow_poll m2 for 2050 ms
 16737 ms  slow_follower b1 for 5817 ms
 17610 ms  join j1
 29810 ms  join j0
 31955 ms  crash m2 for 4401 ms
 34424 ms  crash m0 for 501 ms
"""


@pytest.mark.parametrize("first_seed", range(0, SEEDS, 20))
def test_kip848_seeds_hold_every_invariant(first_seed):
    """Dynamic and static members, uniform and range, every fault kind."""
    failed = []
    for seed in range(first_seed, first_seed + 20):
        verdict = run(seed, attrs.evolve(SMALL, static=seed % 2 == 1))
        if not verdict.ok:
            failed.append(verdict.describe() + "\n" + verdict.schedule.to_text())
    assert not failed, "\n".join(failed)


def test_a_kip848_run_reaches_the_coordinators_reconciliation_states():
    coverage = run(0, SimConfig(group_protocol="consumer", assignor="uniform")).coverage
    for state in ("coordinator member:UNREVOKED_PARTITIONS", "coordinator member:UNRELEASED_PARTITIONS",
                  "member:RECONCILING", "member:ACKNOWLEDGING", "group:ASSIGNING", "group:RECONCILING"):
        assert coverage.get(state, 0) > 0, (state, coverage)


def test_unreconciled_partitions_reported_as_owned_keep_seed_83_safe(monkeypatch):
    """kgroup's member reports partitions it was assigned and has not reconciled as owned (a departure
    from Kafka's client, docs/guide/consumer-protocol.md); without it two members own one partition."""
    schedule = parse_schedule(SEED_83)
    config = SimConfig(group_protocol="consumer", assignor="range")
    assert run(schedule, config).ok
    monkeypatch.setattr(ConsumerProtocolMember, "_incoming", lambda self: frozenset())
    verdict = run(schedule, config)
    assert "same-generation-owners" in verdict.checks_failed(), verdict.describe()


def test_a_static_member_killed_and_restarted_at_once_is_refused_until_its_session_expires():
    """KIP-848's pitfall: a static member that did not leave (epoch -2) holds its instance id, so the
    new process's join gets UNRELEASED_INSTANCE_ID, which Kafka's client treats as fatal; the
    application exits and its supervisor restarts it once the old session expired."""
    schedule = parse_schedule("# seed 1\n  4000 ms  crash m1 for 200 ms\n")
    verdict = run(schedule, attrs.evolve(SMALL, static=True, assignor="uniform"))
    assert verdict.ok, verdict.describe()
    failures = verdict.history.of(MemberFailed)
    assert [f.member for f in failures] == ["m1"]
    assert "instance id 'i-m1' is still held" in failures[0].error
    assert verdict.coverage["member failed, restarted"] == 1


def test_a_static_bounce_through_close_does_not_rebalance():
    """A static member's restart through close() leaves with epoch -2: the new process takes its place
    and assignment, with no new target assignment (the ``static-bounce`` check)."""
    config = attrs.evolve(SMALL, faults="static-bounce", assignor="uniform")
    for seed in range(5):
        verdict = run(seed, config)
        assert verdict.ok, verdict.describe()
        assert not verdict.history.of(MemberFailed)
        assert {e.clean for e in verdict.history.of(MemberStopped)} == {True}


def test_a_kip848_seed_replays_exactly():
    config = attrs.evolve(SMALL, static=True)
    assert run(7, config).history.format() == run(7, config).history.format()


def test_kip848_config_errors():
    with pytest.raises(ConfigError, match="assignor 'sticky' is not one of uniform, range"):
        SimConfig(group_protocol="consumer", assignor="sticky")
    with pytest.raises(ConfigError, match="group_protocol must be one of classic, consumer"):
        SimConfig(group_protocol="kip848")
    with pytest.raises(ConfigError, match="assignor 'uniform'"):
        SimConfig(assignor="uniform")  # a coordinator's assignor with the classic protocol


def test_cli_simulates_a_kip848_group(capsys):
    code = main(["simulate", "--seed", "2", "--group-protocol", "consumer", "--assignor", "uniform",
                 "--members", "3", "--partitions", "6", "--duration-ms", "6000", "--max-faults", "3"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "uniform (KIP-848)" in out and "OK" in out
