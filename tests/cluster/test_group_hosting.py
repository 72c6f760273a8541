"""Group coordinators on __consumer_offsets leaders: placement, routing, loading, commit-before-answer."""
import pytest

from kgroup.core import messages as m
from kgroup.core.cluster import ClusterStateMachine, ClusterConfig
from kgroup.core.cluster.group_hosting import BrokerUnreachable, GroupHosting, GroupHostingConfig
from kgroup.core.cluster.offsets_topic import GROUP_METADATA_TOPIC, java_string_hash, partition_for_group
from kgroup.core.coordinator import GroupCoordinatorConfig, GroupState
from kgroup.core.error_codes import ErrorCode as E
from kgroup.errors import ConfigError
from kgroup.values import TopicPartition

FAST = GroupCoordinatorConfig(group_min_session_timeout_ms=100, group_initial_rebalance_delay_ms=0)


def _hosting(brokers=(1, 2, 3), load_ms=0, min_isr=1, partitions=5):
    cluster = ClusterStateMachine(ClusterConfig(broker_ids=brokers, min_insync_replicas=min_isr))
    ids = iter(range(10**6))
    return GroupHosting(cluster, GroupHostingConfig(offsets_topic_partitions=partitions,
                                                    group_load_time_ms=load_ms, coordinator=FAST),
                        member_id_factory=lambda prefix: f"{prefix}-{next(ids)}")


def _join(group="g", member_id="", instance=None):
    return m.JoinGroupRequest(group, member_id, session_timeout_ms=1000, rebalance_timeout_ms=1000,
                              group_instance_id=instance, protocols=(m.JoinGroupProtocol("range", b"x"),))


def _answers(deliveries):
    return {d.request_key: d.response for d in deliveries}


def _call(h, node, key, request, now_ms, rounds=3):
    """Send, then run fetch rounds until the answer is released (records must reach the ISR first)."""
    answers = _answers(h.send(node, key, request, now_ms))
    for _ in range(rounds):
        if key in answers:
            return answers[key]
        answers.update(_answers(h.handle_timer(h.cluster.get_timer())))
    raise AssertionError(f"no answer to {key!r}")


def test_placement_is_javas_string_hash_modulo_partitions():
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("") == 0
    assert java_string_hash("polygenelubricants") == -(2**31)  # Utils.abs maps MIN_VALUE to 0
    assert partition_for_group("polygenelubricants", 50) == 0
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00  # surrogate pair: two UTF-16 units
    assert partition_for_group("hello", 50) == 99162322 % 50
    assert partition_for_group("negative?", 50) == abs(java_string_hash("negative?")) % 50


def test_find_coordinator_answers_the_leader_of_the_groups_partition():
    h = _hosting()
    index = h.partition_for("orders")
    leader = h.cluster.partition(GROUP_METADATA_TOPIC, index).leader
    (d,) = h.send(None, "k", m.FindCoordinatorRequest("orders"), 0)
    assert d.response.error_code is E.NONE and d.response.node_id == leader == h.coordinator_node("orders")


def test_offsets_topic_replication_factor_is_capped_by_brokers():
    h = _hosting(brokers=(1, 2))
    assert all(len(p.assigned) == 2 for p in h.cluster.topics[GROUP_METADATA_TOPIC])
    with pytest.raises(ConfigError, match="offsets_topic_partitions"):
        GroupHostingConfig(offsets_topic_partitions=0)


def test_non_coordinator_broker_answers_not_coordinator_for_every_group_request():
    h = _hosting()
    other = next(b for b in (1, 2, 3) if b != h.coordinator_node("g"))
    requests = [
        _join(),
        m.SyncGroupRequest("g", 1, "m"),
        m.HeartbeatRequest("g", 1, "m"),
        m.LeaveGroupRequest("g", (m.MemberIdentity("m"),)),
        m.OffsetCommitRequest("g", (m.PartitionOffsetCommit(TopicPartition("t", 0),
                                                            m.OffsetAndMetadata(1)),)),
        m.OffsetFetchRequest("g"),
    ]
    for i, request in enumerate(requests):
        (d,) = h.send(other, i, request, 0)
        codes = [p.error_code for p in d.response.partitions] if isinstance(request, m.OffsetCommitRequest) \
            else [d.response.error_code]
        assert codes == [E.NOT_COORDINATOR], request
    (d,) = h.send(other, "describe", m.DescribeGroupsRequest(("g",)), 0)
    assert d.response.groups[0].error_code is E.NOT_COORDINATOR


def test_dead_broker_is_unreachable():
    h = _hosting()
    node = h.coordinator_node("g")
    h.kill_broker(node, 0)
    (d,) = h.send(node, "k", m.HeartbeatRequest("g", 1, "m"), 0)
    assert d.response == BrokerUnreachable(node)
    with pytest.raises(TypeError, match="cannot handle"):
        h.send(h.coordinator_node("g"), "k", object(), 0)


def test_join_response_is_held_until_the_records_are_committed_on_the_isr():
    h = _hosting()
    node = h.coordinator_node("g")
    p = h.cluster.partition(GROUP_METADATA_TOPIC, h.partition_for("g"))
    assert h.send(node, "j1", _join(), 0) == []  # the new group's record is not yet on the followers
    assert p.logs[node].leo > p.logs[node].hw
    answer = _answers(h.handle_timer(h.cluster.get_timer()))["j1"]
    assert answer.error_code is E.MEMBER_ID_REQUIRED
    member_id = answer.member_id
    assert h.send(node, "j2", _join(member_id=member_id), h.cluster.now_ms) == []
    answers = {}
    while "j2" not in answers:  # the join completes on its (0 ms) timer, then its records replicate
        assert p.logs[node].leo > p.logs[node].hw or h.coordinator_for("g").get_timer() is not None
        answers = _answers(h.handle_timer(h.cluster.get_timer()))
    assert answers["j2"].error_code is E.NONE and answers["j2"].generation_id == 1
    assert p.logs[node].hw == p.logs[node].leo
    assert all(log.leo == p.logs[node].leo for log in p.logs.values())


def test_write_refused_below_min_isr_answers_coordinator_not_available_and_reverts():
    h = _hosting(min_isr=2)
    node = h.coordinator_node("g")
    p = h.cluster.partition(GROUP_METADATA_TOPIC, h.partition_for("g"))
    for follower in [b for b in p.assigned if b != node]:
        h.kill_broker(follower, 0)
    answers = _answers(h.send(node, "j1", _join(), 0))
    assert answers["j1"].error_code is E.COORDINATOR_NOT_AVAILABLE
    assert h.group_state("g") is None  # reverted to the (empty) log: the group never existed
    assert p.logs[node].leo == 0


def test_new_leader_loads_the_log_and_answers_load_in_progress_meanwhile():
    h = _hosting(load_ms=500)
    h.handle_timer(500)  # initial load
    node = h.coordinator_node("g")
    member_id = _call(h, node, "j1", _join(), 500).member_id
    _call(h, node, "j2", _join(member_id=member_id), h.cluster.now_ms)
    _call(h, node, "s",
          m.SyncGroupRequest("g", 1, member_id, assignments=(m.SyncGroupAssignment(member_id, b"a"),)),
          h.cluster.now_ms)
    commit = m.OffsetCommitRequest(
        "g", (m.PartitionOffsetCommit(TopicPartition("t", 0), m.OffsetAndMetadata(42)),), 1, member_id)
    assert _call(h, node, "c", commit, h.cluster.now_ms).partitions[0].error_code is E.NONE

    failovers = h.kill_broker(node, 700)
    new = h.coordinator_node("g")
    assert new not in (None, node) and failovers == []
    (d,) = h.send(new, "hb", m.HeartbeatRequest("g", 1, member_id), 750)
    assert d.response.error_code is E.COORDINATOR_LOAD_IN_PROGRESS
    h.handle_timer(1200)
    assert h.group_state("g") is GroupState.STABLE
    (d,) = h.send(new, "hb", m.HeartbeatRequest("g", 1, member_id), 1200)
    assert d.response.error_code is E.NONE
    fetched = _call(h, new, "f", m.OffsetFetchRequest("g", (TopicPartition("t", 0),)), 1200)
    assert fetched.partitions[0].committed.offset == 42


def test_leadership_move_answers_parked_joins_not_coordinator():
    h = _hosting(load_ms=0)
    node = h.coordinator_node("g")
    first = _call(h, node, "a1", _join(), 0).member_id
    _call(h, node, "a2", _join(member_id=first), h.cluster.now_ms)
    second = _call(h, node, "b1", _join(), h.cluster.now_ms).member_id
    # Parked: the rebalance waits for the first member to rejoin.
    assert "b2" not in _answers(h.send(node, "b2", _join(member_id=second), h.cluster.now_ms)
                                + h.handle_timer(h.cluster.get_timer()))
    # Move leadership away from `node` while it stays alive: its coordinator resigns.
    p = h.cluster.partition(GROUP_METADATA_TOPIC, h.partition_for("g"))
    target = next(b for b in p.isr if b != node)
    p.assigned.remove(target)
    p.assigned.insert(0, target)
    answers = _answers(h.elect_preferred_leaders(h.cluster.now_ms))
    assert answers["b2"].error_code is E.NOT_COORDINATOR
    assert h.coordinator_node("g") == target
