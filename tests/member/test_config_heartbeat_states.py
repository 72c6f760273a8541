import pytest

from kgroup.assignors import RebalanceProtocol
from kgroup.core.member import LEGAL_PREVIOUS, HeartbeatTimer, MemberConfig, ClassicMemberState
from kgroup.core.member.classic.states import new_member_state_machine
from kgroup.errors import ConfigError, IllegalStateTransition

from member_fakes import CooperativeOnly, EagerOnly, SplitAssignor


def config(**kw):
    kw.setdefault("assignors", (SplitAssignor(),))
    return MemberConfig(group_id=kw.pop("group_id", "g"), **kw)


@pytest.mark.parametrize("kw", [
    dict(heartbeat_interval_ms=1000, session_timeout_ms=1000),
    dict(heartbeat_interval_ms=2000, session_timeout_ms=1000),
    dict(session_timeout_ms=0),
    dict(heartbeat_interval_ms=-1),
    dict(max_poll_interval_ms=0),
    dict(retry_backoff_ms=0),
    dict(auto_commit_interval_ms=0),
    dict(rebalance_timeout_ms=0),
    dict(group_id=""),
    dict(assignors=()),
    dict(assignors=(EagerOnly(), CooperativeOnly())),
    dict(assignors=(SplitAssignor(), SplitAssignor())),
    dict(group_instance_id=""),
])
def test_impossible_configs_fail_at_construction(kw):
    with pytest.raises(ConfigError):
        config(**kw)


def test_protocol_is_highest_common():
    assert config().protocol is RebalanceProtocol.COOPERATIVE
    assert config(assignors=(SplitAssignor(), EagerOnly())).protocol is RebalanceProtocol.EAGER


def test_rebalance_timeout_defaults_to_max_poll_and_static_stays_on_close():
    c = config(max_poll_interval_ms=7000)
    assert c.effective_rebalance_timeout_ms == 7000
    assert c.leaves_on_close(None) is True
    static = config(group_instance_id="i1")
    assert static.leaves_on_close(None) is False
    assert static.leaves_on_close(True) is True


def test_heartbeat_timing_math():
    hb = HeartbeatTimer(session_timeout_ms=1000, interval_ms=300, max_poll_interval_ms=5000,
                        retry_backoff_ms=50, now_ms=0)
    assert hb.next_heartbeat_ms() == 300 and not hb.should_heartbeat(299) and hb.should_heartbeat(300)
    hb.sent(300)
    assert hb.next_heartbeat_ms() == 600
    hb.fail()
    assert hb.next_heartbeat_ms() == 350  # retry backoff after a failed heartbeat
    hb.sent(350)
    assert hb.next_heartbeat_ms() == 650
    assert hb.session_deadline_ms() == 1000 and hb.session_expired(1000) and not hb.session_expired(999)
    hb.received(400)
    assert hb.session_deadline_ms() == 1400
    hb.reset_session(900)
    assert hb.session_deadline_ms() == 1900 and hb.next_heartbeat_ms() == 1200
    assert hb.poll_deadline_ms() == 5000
    hb.poll(4000)
    assert not hb.poll_expired(8999) and hb.poll_expired(9000)
    with pytest.raises(ConfigError):
        HeartbeatTimer(100, 100, 1000, 10, 0)


def test_state_table_rejects_illegal_moves():
    fsm = new_member_state_machine("m")
    assert set(LEGAL_PREVIOUS) == set(ClassicMemberState)
    with pytest.raises(IllegalStateTransition):
        fsm.transition_to(ClassicMemberState.STABLE)
    with pytest.raises(IllegalStateTransition):
        fsm.transition_to(ClassicMemberState.COMPLETING_REBALANCE)
    fsm.transition_to(ClassicMemberState.PREPARING_REBALANCE)
    fsm.transition_to(ClassicMemberState.COMPLETING_REBALANCE)
    fsm.transition_to(ClassicMemberState.STABLE)
    fsm.transition_to(ClassicMemberState.FATAL)
    for state in ClassicMemberState:
        with pytest.raises(IllegalStateTransition):
            fsm.transition_to(state)
