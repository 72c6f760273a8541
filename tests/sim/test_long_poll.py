"""Long-polling applications (issue 28): a poll that would find nothing blocks until records arrive,
the member has news, or the application's auto-commit interval passes (Kafka's ``poll(timeout)``)."""
import pytest

from kgroup.core.cluster import ClusterStateMachine
from kgroup.sim import SimConfig, run
from kgroup.sim.app import ConsumerApp, Producer

QUIET = dict(members=2, partitions=4, duration_ms=8_000, faults="none", assignor="range", long_poll=True)


def _record_polls(monkeypatch):
    """Every application poll: (name, now, blocked-in-a-long-poll, when its cadence was due, the
    member settled, woken early by records: late for its cadence, before its poll timeout, without news
    from its member or a synchronous commit)."""
    polls = []
    handle = ConsumerApp.handle_timer

    def recorded(app, now):
        early = (app.next_ms < now < app.next_ms + app.profile.auto_commit_interval_ms
                 and app.sync_token is None and not app.member.has_events() and app.paused_until_ms < now)
        polls.append((app.name, now, app.waiting_for_records, app.next_ms, app.member.settled, early))
        handle(app, now)
    monkeypatch.setattr(ConsumerApp, "handle_timer", recorded)
    return polls


@pytest.mark.parametrize("long_poll", [True, False])
def test_without_records_a_settled_consumer_polls_only_at_its_poll_timeout(monkeypatch, long_poll):
    polls = _record_polls(monkeypatch)
    profiles = {}
    start = ConsumerApp.__init__

    def keep_profile(app, name, *args, **kwargs):
        start(app, name, *args, **kwargs)
        profiles[name] = app.profile
    monkeypatch.setattr(ConsumerApp, "__init__", keep_profile)
    verdict = run(1, SimConfig(producers=0, **{**QUIET, "long_poll": long_poll}))
    assert verdict.ok, verdict.describe()
    for name, profile in profiles.items():
        # From 3 s on: the group settled and every owner resumed from its committed offsets.
        mine = [(now, settled) for who, now, _blocked, _due, settled, _early in polls if who == name]
        gaps = [now - before for (before, was_settled), (now, settled) in zip(mine, mine[1:])
                if before >= 3_000 and was_settled and settled]
        assert len(gaps) > 3 and min(gaps) >= profile.poll_interval_ms, (name, gaps)
        if not long_poll:
            assert set(gaps) == {profile.poll_interval_ms}, (name, gaps)
        elif profile.commit_mode != "sync":
            # Nothing is ever produced, so each poll finds nothing and blocks for its timeout (the
            # auto-commit interval); the answer to the commit such a poll makes is news from the member,
            # which wakes the next one at its cadence.
            blocked_gap = profile.poll_interval_ms + profile.auto_commit_interval_ms
            assert gaps.count(blocked_gap) * 3 >= len(gaps), (name, profile, gaps)


def test_a_blocked_poll_wakes_the_instant_after_records_become_visible(monkeypatch):
    """A blocked poll wakes 1 ms after the replication round or append that moved a high watermark
    (the simulator re-asks it), never at its timeout while records wait."""
    polls = _record_polls(monkeypatch)
    moves = set()
    visit, produce = ClusterStateMachine._visit, Producer.handle_timer

    def visited(cluster, partitions, allowed):
        moves.add(cluster.now_ms)
        visit(cluster, partitions, allowed)

    def produced(producer, now_ms):
        moves.add(now_ms)
        produce(producer, now_ms)
    monkeypatch.setattr(ClusterStateMachine, "_visit", visited)
    monkeypatch.setattr(Producer, "handle_timer", produced)
    # Sparse records, so that polls find nothing and block between them.
    verdict = run(2, SimConfig(produce_interval_ms=300, produce_batch=1, **{**QUIET, "duration_ms": 20_000}))
    assert verdict.ok, verdict.describe()
    woken = [now for _name, now, _blocked, _due, _settled, early in polls if early]
    assert len(woken) > 10
    assert [now for now in woken if now - 1 not in moves] == []


def test_exactly_once_applications_do_not_long_poll():
    """An exactly-once loop blocks in its transaction instead (kgroup.sim.eos)."""
    import random

    from kgroup.core.member import GroupMember, MemberConfig
    from kgroup.sim.app import draw_profile

    def app(data):
        return ConsumerApp("m0", None, GroupMember(MemberConfig(group_id="g"), 0),
                           draw_profile(random.Random(0), "auto", 1), None, None, 0, data=data,
                           long_poll=True)
    assert app(None).long_poll and not app(object()).long_poll
