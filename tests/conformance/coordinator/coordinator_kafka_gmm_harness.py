"""A small analogue of Kafka's GroupMetadataManagerTestContext for the ported classic-group tests.

Defaults follow the Kafka test context: initial rebalance delay 3 s, min session
timeout 10 ms, max session timeout 10 min, new-member join timeout 5 min,
member ids ``<client or instance id>-<n>``.  Requests are plain
``kgroup.core.messages`` values; a parked request's response shows up later in
``ctx.responses``.
"""
from __future__ import annotations

import itertools
from typing import Iterable, Optional

from kgroup.assignors.server_base import ServerAssignor
from kgroup.core.consumer_group_messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig, GroupState
from kgroup.core.coordinator_common.config import ConsumerGroupMigrationPolicy
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    DeleteGroupsRequest, DescribeGroupsRequest, HeartbeatRequest, JoinGroupProtocol, JoinGroupRequest,
    LeaveGroupRequest, ListGroupsRequest, MemberIdentity, OffsetAndMetadata, OffsetCommitRequest,
    OffsetFetchRequest, PartitionOffsetCommit, SyncGroupAssignment, SyncGroupRequest,
)
from kgroup.values import TopicPartition

E = ErrorCode
S = GroupState
GROUP = "group-id"
DEFAULT_PROTOCOLS = (JoinGroupProtocol("range", b"range-metadata"),)
#: Kafka's withProtocolSuperset(): both assignors.
SUPERSET = (JoinGroupProtocol("range", b"range-metadata"), JoinGroupProtocol("roundrobin", b"rr-metadata"))
CLIENT_ID = "client"
DEFAULT_DELAY_MS = 3_000


class MockPartitionAssignor(ServerAssignor):
    """Kafka's MockPartitionAssignor: answers the prepared group assignment (empty for members not named)."""

    def __init__(self, name: str = "range") -> None:
        self.name = name
        self.prepared: dict = {}

    def prepare(self, assignment: dict) -> None:
        self.prepared = dict(assignment)

    def target(self, member_id: str) -> frozenset:
        return frozenset(self.prepared.get(member_id, ()))

    def assign(self, members, partitions_per_topic):
        return {member_id: frozenset(self.prepared.get(member_id, ())) for member_id in members}


class Ctx:
    def __init__(self, *, initial_delay_ms: int = DEFAULT_DELAY_MS, max_size: int = 2**31 - 1,
                 min_session_ms: int = 10, max_session_ms: int = 600_000,
                 new_member_join_timeout_ms: int = 300_000, topics: Optional[dict[str, int]] = None,
                 migration_policy: ConsumerGroupMigrationPolicy = ConsumerGroupMigrationPolicy.BIDIRECTIONAL,
                 assignor: Optional[MockPartitionAssignor] = None, consumer_max_size: int = 2**31 - 1,
                 records: Iterable = (), offset_metadata_max_bytes: int = 4096) -> None:
        """``topics``, ``assignor``, ``records`` and ``offset_metadata_max_bytes`` are the Kafka context's
        withMetadataImage, withConsumerGroupAssignors, replayed records (withConsumerGroup / a replayed
        classic group) and withOffsetMetadataMaxSize."""
        self.assignor = assignor or MockPartitionAssignor()
        self.topics = dict(topics or {})
        self.config = GroupCoordinatorConfig(
            group_min_session_timeout_ms=min_session_ms, group_max_session_timeout_ms=max_session_ms,
            group_initial_rebalance_delay_ms=initial_delay_ms, group_max_size=max_size,
            group_new_member_join_timeout_ms=new_member_join_timeout_ms,
            consumer_group_migration_policy=migration_policy, consumer_group_max_size=consumer_max_size,
            consumer_group_assignors=(self.assignor.name,),
            offset_metadata_max_bytes=offset_metadata_max_bytes)
        self.delay_ms = initial_delay_ms
        counter = itertools.count(1)
        self._load_kwargs = dict(member_id_factory=lambda p: f"{p}-{next(counter)}",
                                 topic_metadata=self.topics.get,
                                 server_assignors={self.assignor.name: self.assignor})
        self.records: list = list(records)
        self.coordinator = GroupCoordinator.load(self.records, 0, self.config, **self._load_kwargs)
        self.now_ms = 0
        self.responses: dict = {}
        self._keys = itertools.count()

    # -- plumbing ------------------------------------------------------------------

    def _absorb(self, result) -> None:
        for delivery in result.deliveries:
            assert delivery.request_key not in self.responses, f"answered twice: {delivery.request_key}"
            self.responses[delivery.request_key] = delivery.response
        self.records.extend(result.records)

    def send(self, request):
        """Send; return the request key (its response, if any, is ``ctx.responses.get(key)``)."""
        key = ("req", next(self._keys))
        self._absorb(self.coordinator.handle(key, request, self.now_ms))
        return key

    def call(self, request):
        """Send a request that must be answered at once; return the response."""
        key = self.send(request)
        assert key in self.responses, f"{type(request).__name__} was parked"
        return self.responses[key]

    def result(self, key):
        return self.responses.get(key)

    def sleep(self, ms: int) -> None:
        """Kafka's context.sleep: advance the clock, then fire every timer due by then.

        As Kafka's MockCoordinatorTimer, due timers fire at the new time (not at their own
        deadlines), so a timer they re-arm counts from the end of the sleep.
        """
        self.now_ms += ms
        self._absorb(self.coordinator.handle_timer(self.now_ms))

    def consumer_heartbeat(self, **fields) -> ConsumerGroupHeartbeatResponse:
        fields.setdefault("group_id", GROUP)
        response = self.call(ConsumerGroupHeartbeatRequest(**fields))
        self.coordinator.assert_invariants()
        return response

    def consumer_group(self, group_id: str = GROUP):
        return self.coordinator.consumer_group(group_id)

    def timer_deadline(self, key) -> Optional[int]:
        return self.coordinator._context.timer.deadline_of(key)

    def assert_replays(self) -> GroupCoordinator:
        """The records written so far rebuild the same groups (what a coordinator failover loads)."""
        loaded = GroupCoordinator.load(self.records, self.now_ms, self.config, **self._load_kwargs)
        assert loaded.persisted_view() == self.coordinator.persisted_view()
        loaded.assert_invariants()
        return loaded

    def state(self, group_id: str = GROUP) -> Optional[GroupState]:
        return self.coordinator.group_state(group_id)

    def group(self, group_id: str = GROUP):
        return self.coordinator._classic.groups[group_id]

    # -- requests ------------------------------------------------------------------

    def join_request(self, group_id: str = GROUP, member_id: str = "", instance_id: Optional[str] = None,
                     protocols=DEFAULT_PROTOCOLS, protocol_type: str = "consumer", session_ms: int = 500,
                     rebalance_ms: int = 500, api_version: int = 9, client_id: str = CLIENT_ID):
        return JoinGroupRequest(group_id, member_id=member_id, session_timeout_ms=session_ms,
                                rebalance_timeout_ms=rebalance_ms, group_instance_id=instance_id,
                                protocol_type=protocol_type, protocols=protocols, client_id=client_id,
                                api_version=api_version)

    def join(self, **kw):
        return self.send(self.join_request(**kw))

    def sync(self, member_id: str, generation_id: int, group_id: str = GROUP,
             instance_id: Optional[str] = None, assignments: dict | None = None,
             protocol_type: Optional[str] = None, protocol_name: Optional[str] = None):
        pairs = tuple(SyncGroupAssignment(m, a) for m, a in (assignments or {}).items())
        return self.send(SyncGroupRequest(group_id, generation_id, member_id, group_instance_id=instance_id,
                                          protocol_type=protocol_type, protocol_name=protocol_name,
                                          assignments=pairs))

    def heartbeat(self, member_id: str, generation_id: int, group_id: str = GROUP,
                  instance_id: Optional[str] = None) -> ErrorCode:
        request = HeartbeatRequest(group_id, generation_id, member_id, group_instance_id=instance_id)
        return self.call(request).error_code

    def leave(self, *members: tuple, group_id: str = GROUP):
        idents = tuple(MemberIdentity(m, i) for m, i in members)
        return self.call(LeaveGroupRequest(group_id, idents))

    def describe(self, *group_ids: str):
        return self.call(DescribeGroupsRequest(group_ids)).groups

    def list_groups(self, *states: str):
        return self.call(ListGroupsRequest(states)).groups

    def delete(self, *group_ids: str):
        return [r.error_code for r in self.call(DeleteGroupsRequest(group_ids)).results]

    def commit(self, group_id: str = GROUP, member_id: str = "", generation_id: int = -1,
               instance_id: Optional[str] = None, offset: int = 100, partition: int = 0) -> ErrorCode:
        commit = PartitionOffsetCommit(TopicPartition("foo", partition), OffsetAndMetadata(offset))
        response = self.call(OffsetCommitRequest(group_id, (commit,), generation_id=generation_id,
                                                 member_id=member_id, group_instance_id=instance_id))
        return response.partitions[0].error_code

    def fetch(self, group_id: str = GROUP, partitions=(0,)):
        tps = None if partitions is None else tuple(TopicPartition("foo", p) for p in partitions)
        return self.call(OffsetFetchRequest(group_id, tps))

    # -- scenarios (the Kafka context's helpers) -----------------------------------

    def create_group(self, group_id: str = GROUP) -> None:
        """Kafka's createClassicGroup: an Empty group (here made by a simple-consumer commit)."""
        assert self.commit(group_id) is E.NONE
        assert self.state(group_id) is S.EMPTY

    def join_dynamic_and_complete_join(self, group_id: str = GROUP, **kw):
        """Kafka's joinClassicGroupAsDynamicMemberAndCompleteJoin: MEMBER_ID_REQUIRED round, then the join."""
        first = self.call(self.join_request(group_id=group_id, **kw))
        assert first.error_code is E.MEMBER_ID_REQUIRED
        key = self.join(group_id=group_id, member_id=first.member_id, **kw)
        self.sleep(self.delay_ms)
        response = self.result(key)
        assert response is not None and response.error_code is E.NONE, response
        return response

    def join_dynamic_and_complete_rebalance(self, group_id: str = GROUP, **kw):
        """Kafka's joinClassicGroupAsDynamicMemberAndCompleteRebalance: one member, Stable."""
        joined = self.join_dynamic_and_complete_join(group_id, **kw)
        assert joined.generation_id == 1 and self.state(group_id) is S.COMPLETING_REBALANCE
        synced = self.result(self.sync(joined.member_id, 1, group_id=group_id))
        assert synced.error_code is E.NONE and self.state(group_id) is S.STABLE
        return joined

    def static_members_join_and_rebalance(self, leader_instance: str = "leader-instance-id",
                                          follower_instance: str = "follower-instance-id",
                                          group_id: str = GROUP, rebalance_ms: int = 10_000,
                                          session_ms: int = 5_000):
        """Kafka's staticMembersJoinAndRebalance: two static members, assignments [1] and [2], Stable."""
        leader_key = self.join(group_id=group_id, instance_id=leader_instance, protocols=SUPERSET,
                               rebalance_ms=rebalance_ms, session_ms=session_ms)
        follower_key = self.join(group_id=group_id, instance_id=follower_instance, protocols=SUPERSET,
                                 rebalance_ms=rebalance_ms, session_ms=session_ms)
        assert self.result(leader_key) is None and self.result(follower_key) is None
        self.sleep(self.delay_ms)
        self.sleep(self.delay_ms)
        leader, follower = self.result(leader_key), self.result(follower_key)
        assert leader.error_code is E.NONE and follower.error_code is E.NONE
        assert leader.generation_id == follower.generation_id == 1
        assert self.state(group_id) is S.COMPLETING_REBALANCE
        assignments = {leader.member_id: b"\x01", follower.member_id: b"\x02"}
        leader_sync = self.result(self.sync(leader.member_id, 1, group_id=group_id,
                                            instance_id=leader_instance, assignments=assignments))
        assert leader_sync.error_code is E.NONE and self.state(group_id) is S.STABLE
        follower_sync = self.result(self.sync(follower.member_id, 1, group_id=group_id,
                                              instance_id=follower_instance))
        assert follower_sync.error_code is E.NONE
        return Rebalance(1, leader.member_id, leader_sync.assignment, follower.member_id,
                         follower_sync.assignment)

    def join_with_n_members(self, n: int, group_id: str = GROUP, rebalance_ms: int = 10_000,
                            session_ms: int = 5_000):
        """Kafka's joinWithNMembers: n dynamic members join; the initial delay, then the rebalance
        timeout, complete the join."""
        ids = [self.call(self.join_request(group_id=group_id, rebalance_ms=rebalance_ms,
                                           session_ms=session_ms)).member_id for _ in range(n)]
        keys = [self.join(group_id=group_id, member_id=mid, rebalance_ms=rebalance_ms, session_ms=session_ms)
                for mid in ids]
        self.sleep(self.delay_ms)
        assert all(self.result(k) is None for k in keys)
        self.sleep(rebalance_ms)
        assert all(self.result(k).error_code is E.NONE for k in keys)
        assert self.state(group_id) is S.COMPLETING_REBALANCE
        return [self.result(k) for k in keys]


class Rebalance:
    def __init__(self, generation_id, leader_id, leader_assignment, follower_id, follower_assignment) -> None:
        self.generation_id = generation_id
        self.leader_id = leader_id
        self.leader_assignment = leader_assignment
        self.follower_id = follower_id
        self.follower_assignment = follower_assignment


def setup_group_with_pending_member(ctx: Ctx):
    """Kafka's setupGroupWithPendingMember: a Stable pair rebalancing, plus one pending member.

    Returns (leader_id, follower_id, pending_member_id); the group is PreparingRebalance with
    the leader and the follower awaiting the join (their join keys in ``ctx.parked``).
    """
    request = dict(rebalance_ms=10_000, session_ms=5_000)
    leader = ctx.join_dynamic_and_complete_join(**request)
    assert ctx.result(ctx.sync(leader.member_id, leader.generation_id)).error_code is E.NONE
    follower_key = ctx.join(api_version=3, **request)
    leader_key = ctx.join(member_id=leader.member_id, **request)
    assert ctx.state() is S.COMPLETING_REBALANCE
    joined_leader, joined_follower = ctx.result(leader_key), ctx.result(follower_key)
    assert joined_leader.error_code is E.NONE and joined_follower.error_code is E.NONE
    assert joined_leader.leader == joined_follower.leader == leader.member_id
    generation = joined_leader.generation_id
    assert ctx.result(ctx.sync(leader.member_id, generation)).error_code is E.NONE
    assert ctx.state() is S.STABLE
    leader_key = ctx.join(member_id=leader.member_id, **request)
    assert ctx.result(leader_key) is None and ctx.state() is S.PREPARING_REBALANCE
    pending = ctx.call(ctx.join_request(rebalance_ms=10_000, session_ms=2_500))
    assert pending.error_code is E.MEMBER_ID_REQUIRED and len(ctx.group().pending_members) == 1
    follower_key = ctx.join(member_id=joined_follower.member_id, **request)
    assert ctx.result(follower_key) is None and len(ctx.group().members) == 2
    ctx.parked = {"leader": leader_key, "follower": follower_key}
    return leader.member_id, joined_follower.member_id, pending.member_id
