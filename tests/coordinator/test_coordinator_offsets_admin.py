"""OffsetCommit / OffsetFetch, DescribeGroups, ListGroups, DeleteGroups."""
from __future__ import annotations

from coordinator_harness import Client, Driver, make_stable

from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig, GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest, OffsetAndMetadata, OffsetCommitRequest,
    OffsetFetchRequest, PartitionOffsetCommit,
)
from kgroup.values import TopicPartition

E = ErrorCode
S = GroupState
NO_DELAY = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0)
TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


def _commit(group_id, offsets, **kw):
    return OffsetCommitRequest(group_id, tuple(PartitionOffsetCommit(tp, OffsetAndMetadata(o, "m"))
                                               for tp, o in offsets.items()), **kw)


def test_simple_consumer_commit_creates_an_empty_group_and_fetch_returns_it():
    d = Driver()
    response = d.request(_commit("simple", {TP0: 10, TP1: 20}))
    assert [p.error_code for p in response.partitions] == [E.NONE, E.NONE]
    assert d.coordinator.group_state("simple") is S.EMPTY
    fetched = d.request(OffsetFetchRequest("simple", (TP0, TopicPartition("t", 9))))
    assert fetched.error_code is E.NONE
    assert fetched.partitions[0].committed == OffsetAndMetadata(10, "m")
    assert fetched.partitions[1].committed is None
    everything = d.request(OffsetFetchRequest("simple"))
    assert {p.topic_partition: p.committed.offset for p in everything.partitions} == {TP0: 10, TP1: 20}


def test_generation_bearing_commit_to_an_unknown_group_is_illegal_generation():
    d = Driver()
    response = d.request(_commit("nope", {TP0: 1}, generation_id=3, member_id="m"))
    assert response.partitions[0].error_code is E.ILLEGAL_GENERATION
    assert d.coordinator.group_ids() == []


def test_member_commits_in_its_generation_and_stale_or_anonymous_commits_fail():
    d = Driver(NO_DELAY)
    c1 = Client(d, "c1")
    make_stable(d, c1)
    ok = d.request(_commit("g", {TP0: 5}, generation_id=c1.generation_id, member_id=c1.member_id))
    assert ok.partitions[0].error_code is E.NONE
    anonymous = d.request(_commit("g", {TP0: 6}))
    assert anonymous.partitions[0].error_code is E.UNKNOWN_MEMBER_ID
    stranger = d.request(_commit("g", {TP0: 6}, generation_id=c1.generation_id, member_id="x"))
    assert stranger.partitions[0].error_code is E.UNKNOWN_MEMBER_ID
    fetched = d.request(OffsetFetchRequest("g", (TP0,)))
    assert fetched.partitions[0].committed.offset == 5


def test_commit_during_preparing_rebalance_with_the_current_generation_is_accepted():
    d = Driver(NO_DELAY)
    c1, c2 = Client(d, "c1"), Client(d, "c2")
    make_stable(d, c1)
    c2.join()
    assert d.coordinator.group_state("g") is S.PREPARING_REBALANCE
    response = d.request(_commit("g", {TP0: 7}, generation_id=c1.generation_id, member_id=c1.member_id))
    assert response.partitions[0].error_code is E.NONE


def test_deleted_group_loses_its_offsets_and_records_say_so():
    d = Driver()
    d.request(_commit("gone", {TP0: 1}))
    assert d.request(DeleteGroupsRequest(("gone",))).results[0].error_code is E.NONE
    loaded = GroupCoordinator.load(d.records, d.clock.now_ms)
    assert loaded.group_ids() == [] and loaded.persisted_view() == d.coordinator.persisted_view()
    # A simple consumer may use the id again; the old offsets are gone.
    d.request(_commit("gone", {TP1: 2}))
    everything = d.request(OffsetFetchRequest("gone"))
    assert [p.topic_partition for p in everything.partitions] == [TP1]


def test_describe_and_list_groups():
    d = Driver(NO_DELAY)
    c1, c2 = Client(d, "c1"), Client(d, "c2")
    make_stable(d, c1, c2)
    d.request(_commit("simple", {TP0: 1}))
    described = d.request(DescribeGroupsRequest(("g", "missing"))).groups
    g, missing = described
    assert (g.error_code, g.group_state, g.protocol_type, g.protocol_data) == \
        (E.NONE, "Stable", "consumer", "range")
    assert {m.member_id: m.member_assignment for m in g.members} == {c1.member_id: c1.assignment,
                                                                     c2.member_id: c2.assignment}
    assert all(m.member_metadata for m in g.members)
    assert missing.group_state == "Dead"
    listed = d.request(ListGroupsRequest()).groups
    assert {(x.group_id, x.group_state) for x in listed} == {("g", "Stable"), ("simple", "Empty")}
    only_empty = d.request(ListGroupsRequest(("empty",))).groups
    assert [x.group_id for x in only_empty] == ["simple"]
