"""The member's control state as data: the rejoin gate's table, the reaction tables, the request kinds.

Also: reading events does not change the member's state (project issue 10),
and Kafka ConsumerCoordinatorTest's commit-versus-generation scenarios that
the commit reaction table's generation modifier encodes.
"""
import enum

import pytest

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode as E
from kgroup.core.fsm import check_table
from kgroup.core.member import CommitCompleted, ClassicMemberState, PartitionsRevoked
from kgroup.core.member.classic import reactions
from kgroup.core.member.shared.events import EventQueue
from kgroup.core.member.classic.reactions import Reaction, reaction_to
from kgroup.core.member.classic.rejoin import LEGAL_PREVIOUS, Rejoin, RejoinGate
from kgroup.core.member.shared.requests import RequestKind
from kgroup.errors import CommitFailedError, IllegalStateTransition
from kgroup.values import TopicPartition as TP

from member_fakes import OK, EagerOnly, Harness


# -- the rejoin gate's table ---------------------------------------------------------------

def test_rejoin_table_has_a_row_for_every_state():
    check_table(Rejoin, LEGAL_PREVIOUS)
    assert set(LEGAL_PREVIOUS) == set(Rejoin)


def test_rejoin_gate_rejects_a_move_its_table_does_not_list():
    gate = RejoinGate("rejoin[g]")
    with pytest.raises(IllegalStateTransition) as info:
        gate._fsm.transition_to(Rejoin.READY)   # a JoinGroup without a requested rejoin
    assert "NOT_NEEDED" in str(info.value) and "READY" in str(info.value)


def test_rejoin_gate_opens_only_after_events_delivered_and_a_poll():
    events = EventQueue()
    gate = RejoinGate("rejoin[g]")
    gate.request("test")
    gate.gate_on(events.append(PartitionsRevoked({TP("t", 0)})))
    gate.prepared(None, events.delivered_count)
    assert gate.state is Rejoin.GATED
    gate.app_polled(events.delivered_count)          # polled, events not taken yet
    assert gate.state is Rejoin.GATED
    events.take()
    assert gate.state is Rejoin.GATED                # taking them changes nothing by itself
    gate.app_polled(events.delivered_count)
    assert gate.state is Rejoin.READY


def test_rejoin_gate_waits_for_the_prejoin_commit_after_the_events():
    events = EventQueue()
    gate = RejoinGate("rejoin[g]")
    gate.request("test")
    gate.gate_on(events.append(PartitionsRevoked({TP("t", 0)})))
    gate.prepared(prejoin_commit_token=7, events_delivered=events.delivered_count)
    assert gate.state is Rejoin.GATED
    events.take()
    gate.app_polled(events.delivered_count)
    assert gate.state is Rejoin.COMMITTING
    gate.commit_finished(6)                          # another commit
    assert gate.state is Rejoin.COMMITTING
    gate.commit_finished(7)
    assert gate.state is Rejoin.READY and gate.prejoin_commit_token is None


def test_rejoin_gate_commit_finished_while_gated_leaves_only_the_events():
    events = EventQueue()
    gate = RejoinGate("rejoin[g]")
    gate.request("test")
    gate.gate_on(events.append(PartitionsRevoked({TP("t", 0)})))
    gate.prepared(prejoin_commit_token=7, events_delivered=events.delivered_count)
    gate.commit_finished(7)
    assert gate.state is Rejoin.GATED
    events.take()
    gate.app_polled(events.delivered_count)
    assert gate.state is Rejoin.READY


# -- reading events does not change state ------------------------------------------------------

def _state_of(value, depth=0):
    """A comparable picture of ``value``'s attributes, recursively (methods by name)."""
    if depth > 6 or value is None or isinstance(value, (bool, int, str, bytes, float, enum.Enum)):
        return value
    if callable(value) and hasattr(value, "__func__"):
        return ("method", value.__func__.__qualname__)
    if isinstance(value, dict):
        return tuple(sorted(((repr(k), _state_of(v, depth + 1)) for k, v in value.items()), key=repr))
    if isinstance(value, (list, tuple)):
        return tuple(_state_of(v, depth + 1) for v in value)
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(repr(v) for v in value))
    fields = dict(getattr(value, "__dict__", {}))
    for cls in type(value).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if hasattr(value, slot):
                fields[slot] = getattr(value, slot)
    if not fields:
        return repr(value)
    return (type(value).__name__, tuple(sorted((k, _state_of(v, depth + 1)) for k, v in fields.items())))


def _member_state_without_events(member):
    return _state_of({k: v for k, v in vars(member).items() if k != "_events"})


def test_take_events_changes_nothing_but_the_event_queue():
    """Project issue 10: reading events must not change state (the gate advances on the next poll)."""
    h = Harness(assignors=(EagerOnly(),))
    h.join([TP("t", 0), TP("t", 1)])
    h.member.request_rejoin("test")
    h.member.on_app_poll(h.now)                       # eager: revokes everything, gated on it
    before = _member_state_without_events(h.member)
    events = h.member.take_events()
    assert any(isinstance(e, PartitionsRevoked) for e in events)
    assert _member_state_without_events(h.member) == before
    assert h.pump() == []                             # still gated until the next poll
    h.member.on_app_poll(h.now)
    assert [type(r) for r in h.pump()] == [m.JoinGroupRequest]


def test_taking_events_twice_without_a_poll_does_not_open_the_gate():
    h = Harness(assignors=(EagerOnly(),))
    h.join([TP("t", 0)])
    h.member.request_rejoin("test")
    h.member.on_app_poll(h.now)
    h.member.take_events()
    h.member.take_events()
    assert h.pump() == []
    h.member.on_app_poll(h.now)
    assert [type(r) for r in h.pump()] == [m.JoinGroupRequest]


# -- reaction tables and request kinds -------------------------------------------------------------

_COORDINATOR_KINDS = [RequestKind.HEARTBEAT, RequestKind.JOIN, RequestKind.SYNC, RequestKind.COMMIT]


def test_every_request_kind_has_a_reaction_table_and_a_success_is_handled():
    assert set(reactions.TABLES) == set(RequestKind)
    with_handler = set(Harness().member._on_success)
    assert with_handler == {RequestKind.FIND, RequestKind.JOIN, RequestKind.SYNC}
    for kind in set(RequestKind) - with_handler:
        success = reaction_to(kind, E.NONE, generation_current=True)
        assert not success & (Reaction.FAIL | Reaction.RESET_GENERATION | Reaction.REJOIN), kind


@pytest.mark.parametrize("kind", _COORDINATOR_KINDS)
@pytest.mark.parametrize("code", [E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID])
def test_a_gone_generation_is_one_shared_reaction(kind, code):
    """Java AbstractCoordinator.resetGenerationOnResponseError + requestRejoin, for every request."""
    assert reactions.ON_GENERATION_GONE in reaction_to(kind, code, generation_current=True)


@pytest.mark.parametrize("kind", _COORDINATOR_KINDS)
def test_a_fenced_static_member_fails_on_every_coordinator_request(kind):
    assert Reaction.FAIL in reaction_to(kind, E.FENCED_INSTANCE_ID, generation_current=True)


def test_an_older_generations_heartbeat_answer_only_touches_timing():
    for code in (E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID, E.REBALANCE_IN_PROGRESS):
        stale = reaction_to(RequestKind.HEARTBEAT, code, generation_current=False)
        assert not stale & reactions.GENERATION_STEPS, code


def test_unlisted_codes_take_the_tables_default():
    assert reaction_to(RequestKind.JOIN, E.GROUP_MAX_SIZE_REACHED, True) is Reaction.FAIL
    assert reaction_to(RequestKind.COMMIT, E.OFFSET_METADATA_TOO_LARGE, True) is Reaction.REPORT
    assert reaction_to(RequestKind.LEAVE, E.UNKNOWN_MEMBER_ID, True) is Reaction.NONE


# -- Kafka ConsumerCoordinatorTest: a commit answered after the generation moved on ----------------

def _commit_in_flight_then_new_generation(h):
    """A commit sent in generation 1 is still in flight when the member joins generation 2."""
    h.join([TP("t", 0)], generation=1)
    token = h.member.commit_offsets({TP("t", 0): 100}, h.now)
    assert [type(r) for r in h.pump()] == [m.OffsetCommitRequest]
    h.member.request_rejoin("test")
    h.member.on_app_poll(h.now)
    h.member.take_events()
    h.member.on_app_poll(h.now)
    assert [type(r) for r in h.pump()] == [m.JoinGroupRequest]
    h.reply(m.JoinGroupRequest, m.JoinGroupResponse(OK, 2, "consumer", "split", "x", "m1-new"))
    return token


@pytest.mark.parametrize("code", [E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID])
def test_kafka_testCommitOffsetErrorWithNewGeneration_keeps_the_new_generation(code):
    """Kafka ConsumerCoordinatorTest.testCommitOffsetIllegalGenerationWithNewGeneration and
    testCommitOffsetUnknownMemberWithNewGeneration: the commit fails, the new generation stays."""
    h = Harness()
    token = _commit_in_flight_then_new_generation(h)
    h.reply(m.OffsetCommitRequest, m.OffsetCommitResponse((m.PartitionError(TP("t", 0), code),)))
    assert h.member.state is ClassicMemberState.COMPLETING_REBALANCE
    assert (h.member.generation.generation_id, h.member.member_id) == (2, "m1-new")
    [done] = [e for e in h.member.take_events() if isinstance(e, CommitCompleted)]
    assert done.token == token and isinstance(done.error, CommitFailedError)


@pytest.mark.parametrize("code,member_id", [(E.ILLEGAL_GENERATION, "m1"), (E.UNKNOWN_MEMBER_ID, "")])
def test_kafka_testCommitOffsetErrorShouldResetGeneration(code, member_id):
    """Kafka ConsumerCoordinatorTest.testCommitOffsetIllegalGenerationShouldResetGenerationId (member id
    kept) and testCommitOffsetUnknownMemberShouldResetToNoGeneration (member id dropped)."""
    h = Harness()
    h.join([TP("t", 0)], generation=1)
    h.member.commit_offsets({TP("t", 0): 100}, h.now)
    h.pump()
    h.reply(m.OffsetCommitRequest, m.OffsetCommitResponse((m.PartitionError(TP("t", 0), code),)))
    assert h.member.generation.generation_id == -1 and h.member.member_id == member_id
    assert h.member.rejoin_needed
