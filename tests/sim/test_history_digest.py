"""Pinned digests of whole runs: a speed-up of the simulator must not change what it simulates.

Each digest covers the recorded history's text, the verdict's violations, coverage, overlaps (sorted:
their order follows frozenset iteration) and simulated time.  They were recorded before the
throughput work of docs/simulator.md (*Performance*); a change that alters a digest changes behaviour
and must say why (and re-pin).  Re-pinned once: a loop blocked in a synchronous commit now wakes when
its member has news instead of looking every 5 ms (seeds 1, 7 and 12 have sync applications; seed 3
has none and kept its digest).  Re-pinned again: a commit's answer in the history carries when the
coordinator handled it (``CommitAnswered.handled_ms``, so the checks order commits as the coordinator
did); with that field left out of the text all eight digests, and the 90 of ``benchmarks.sim_digests``,
were the ones pinned before.  ``python -m benchmarks.sim_digests`` checks 90 runs the same way.
``SimConfig(long_poll=True)`` (issue 28, off by default) moves every run's polls: its digests are pinned
apart (``LONG_POLL``).
"""
import attrs
import pytest

from kgroup.sim import SimConfig, run

SMALL = SimConfig(members=3, partitions=6, duration_ms=10_000, max_faults=5)


def run_digest(seed: int, config: SimConfig) -> str:
    return run(seed, config).digest()


STATIC_COOPERATIVE = SimConfig(members=3, partitions=6, duration_ms=10_000, max_faults=5, static=True,
                               assignor="cooperative-sticky")
PINNED = [
    (1, SMALL, "4796ff2047293ad4f7285621be3c123ae1fe6093c1db2162c7eaece5339bc338"),
    (7, SMALL, "df768d343ac359859b62fdad899ef91483fef01eafba0bfa762db4b6324fce81"),
    (12, STATIC_COOPERATIVE, "bda3ea9eec171d2ffd8dba407bdf469bfab27a1624ff337d0f9620b26d9e19c8"),
    # The throughput shape: 5 members, 12 partitions, 60 s.
    (3, SimConfig(), "20f20dec3a95d1e6626da66d6e0fd8557206529afdb3cd9fa267cbcad2603ec7"),
]
#: The same runs with long-polling consumers.
LONG_POLL = [
    (1, SMALL, "282a253d294a08af127d0024ce98b534d4617bac78ce0e8c599b88baba3971f6"),
    (7, SMALL, "02d85be50d5c9ef04b466c05325696c6efb84b9b142096501ed403122e6499a7"),
    (12, STATIC_COOPERATIVE, "17465b701e5a76f66b3958087b4c4f7d23a42370a8fb42d4c0b0a2c380a4e748"),
    (3, SimConfig(), "42427acf543256b4149f0ddd166caf75a3725ffaff7fe7b980037b3c597311fd"),
]


@pytest.mark.parametrize("seed, config, digest", PINNED,
                         ids=[f"seed{s}-{c.members}x{c.partitions}" for s, c, _d in PINNED])
def test_a_run_still_simulates_exactly_what_it_did(seed, config, digest):
    assert run_digest(seed, config) == digest


@pytest.mark.parametrize("seed, config, digest", LONG_POLL,
                         ids=[f"seed{s}-{c.members}x{c.partitions}" for s, c, _d in LONG_POLL])
def test_a_long_polling_run_still_simulates_exactly_what_it_did(seed, config, digest):
    assert run_digest(seed, attrs.evolve(config, long_poll=True)) == digest


@pytest.mark.parametrize("long_poll", [False, True])
@pytest.mark.parametrize("seed", [2, 5])
def test_the_event_scheduler_simulates_what_the_plain_scheduler_does(seed, long_poll, monkeypatch):
    """Issue 28: the simulator's EventScheduler runs only what is due; with the plain Scheduler (which
    asks and fires everything at every instant) a run is the same, digest for digest.  With long polling
    this shows the simulator wakes a blocked poll whenever records arrived (the plain scheduler asks it
    at every instant)."""
    from kgroup.io.inprocess import InProcessHub
    from kgroup.sim import simulator
    from kgroup.testing.scheduler import Scheduler

    config = SimConfig(members=3, partitions=6, duration_ms=6_000, max_faults=4, long_poll=long_poll)
    event_digest = run_digest(seed, config)
    monkeypatch.setattr(simulator, "EventScheduler", Scheduler)
    # ... and the hub asks its backend for its deadline every time (no cache_timer).
    monkeypatch.setattr(InProcessHub, "get_timer", lambda hub: hub.backend.get_timer())
    assert run_digest(seed, config) == event_digest


def test_history_events_are_tuples_equal_only_to_their_own_kind():
    from kgroup.sim.history import Fetched, History, Processed
    from kgroup.values import TopicPartition

    batch = (40, "m0", "m0-1", 3, TopicPartition("events", 2), 10, 15)
    fetched, processed = Fetched(*batch), Processed(*batch)
    assert fetched == Fetched(*batch) and hash(fetched) == hash(Fetched(*batch))
    assert fetched != processed and len({fetched, processed}) == 2
    assert (fetched.partition, fetched.first_offset, fetched.end_offset) == (
        TopicPartition("events", 2), 10, 15)
    history = History()
    history.record(processed)
    assert history.format() == (
        "     40 ms  Processed member=m0 member_id=m0-1 generation=3 "
        "partition=TopicPartition(topic='events', partition=2) first_offset=10 end_offset=15")
