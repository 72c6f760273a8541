"""The classic member's fast paths (issue 28's simulator round) answer what the general forms answer.

``GroupMember.get_timer`` takes the earliest deadline without building lists, and ``_react`` walks
``reactions.steps_of(reaction)`` instead of testing every step of ``STEP_ORDER`` against the Flag;
these tests hold them to the general forms on every reaction and on every call of a simulated run.
"""
from __future__ import annotations

from kgroup.core.member.classic import member as classic_member
from kgroup.core.member.classic.reactions import STEP_ORDER, TABLES, Reaction, steps_of
from kgroup.core.member.shared.requests import RequestKind
from kgroup.sim import SimConfig, run


def _reactions():
    for table, default in TABLES.values():
        yield default
        yield from table.values()
    yield Reaction.NONE


def test_steps_of_lists_a_reactions_steps_in_step_order():
    seen = 0
    for reaction in _reactions():
        assert steps_of(reaction) == tuple(step for step in STEP_ORDER if step in reaction)
        assert steps_of(reaction) is steps_of(reaction)  # cached
        seen += 1
    assert seen > len(TABLES)


def _timer_from_candidates(member) -> object:
    """get_timer as it was before issue 28's round: the min of a list of every candidate."""
    if member._fsm.state is classic_member._STATE.FATAL:
        return None
    if not member._coordinator.known:
        return member._coordinator.find_due_ms() if member._wants_coordinator() else None
    candidates = member._coordinator.heartbeat_deadlines_ms() if member._heartbeating() else []
    if member._join_ready(None):
        candidates.append(member._requests.not_before_ms(RequestKind.JOIN))
    candidates.extend(member._requests.queued_not_before_ms())
    commit_due_ms = member._commits.get_timer()
    if commit_due_ms is not None:
        candidates.append(commit_due_ms)
    return min(candidates) if candidates else None


def test_get_timer_is_the_earliest_of_its_candidates_at_every_call_of_a_faulty_run(monkeypatch):
    fast = classic_member.GroupMember.get_timer
    calls = []

    def checked(self):
        answer = fast(self)
        assert answer == _timer_from_candidates(self)
        calls.append(answer)
        return answer

    monkeypatch.setattr(classic_member.GroupMember, "get_timer", checked)
    verdict = run(7, SimConfig(members=3, partitions=6, duration_ms=8_000, max_faults=4))
    assert verdict.schedule.faults  # a run with faults: coordinator moves, rejoins, retried commits
    assert len(calls) > 500  # (819 for this seed: the check ran on every answer)
