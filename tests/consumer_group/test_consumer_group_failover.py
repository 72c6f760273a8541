"""A KIP-848 consumer group survives a coordinator failover mid-reconciliation (mock clock, sans-I/O).

Like tests/cluster/test_coordinator_failover.py for classic groups: the group's records are in its
``__consumer_offsets`` partition, so when the coordinator's broker dies the new leader loads them and
the members carry on with their epochs; a revocation pending at the failure still gates the move.
"""
from __future__ import annotations

import itertools

from consumer_group_harness import tps

from kgroup.core.cluster.config import ClusterConfig
from kgroup.core.cluster.group_hosting import GroupHosting, GroupHostingConfig
from kgroup.core.cluster.state_machine import ClusterStateMachine
from kgroup.core.consumer_group.member import MemberState
from kgroup.core.consumer_group_messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import OffsetAndMetadata, OffsetCommitRequest, PartitionOffsetCommit
from kgroup.values import TopicPartition

E = ErrorCode
GROUP = "g"


class Cluster:
    def __init__(self) -> None:
        self.now_ms = 0
        self.cluster = ClusterStateMachine(ClusterConfig(), now_ms=0)
        self.cluster.create_topic("t", 4, 3)
        config = GroupHostingConfig(offsets_topic_partitions=3, group_load_time_ms=50,
                                    coordinator=GroupCoordinatorConfig())
        self.hosting = GroupHosting(self.cluster, config)
        self._keys = itertools.count()

    def call(self, request, max_wait_ms: int = 5_000):
        """Send to the group's coordinator now; tick until answered (replication releases the answer)."""
        key = next(self._keys)
        answers = self.hosting.send(self.hosting.coordinator_node(GROUP), key, request, self.now_ms)
        waited = 0
        while not any(d.request_key == key for d in answers):
            assert waited <= max_wait_ms, f"no answer to {request} within {max_wait_ms} ms"
            self.now_ms += 10
            waited += 10
            answers += self.hosting.handle_timer(self.now_ms)
        (answer,) = [d.response for d in answers if d.request_key == key]
        return answer

    def heartbeat(self, member_id: str, epoch: int, **fields) -> ConsumerGroupHeartbeatResponse:
        while True:
            response = self.call(ConsumerGroupHeartbeatRequest(GROUP, member_id, epoch, **fields))
            if response.error_code not in (E.NOT_COORDINATOR, E.COORDINATOR_LOAD_IN_PROGRESS,
                                           E.COORDINATOR_NOT_AVAILABLE):
                assert response.error_code is E.NONE, response
                return response
            self.now_ms += 100  # the client backs off and finds the coordinator again
            self.hosting.handle_timer(self.now_ms)

    def group(self):
        coordinator = self.hosting.coordinator_for(GROUP)
        assert coordinator is not None
        coordinator.assert_invariants()
        return coordinator.consumer_group(GROUP)


def test_failover_mid_reconciliation_keeps_epochs_assignments_and_pending_revocations():
    c = Cluster()
    join = dict(rebalance_timeout_ms=30_000, subscribed_topic_names=("t",), topic_partitions=())
    assert frozenset(c.heartbeat("m1", 0, **join).assignment) == tps({"t": range(4)})
    assert c.heartbeat("m2", 0, **join).assignment == ()
    # Epochs as Kafka 4.4 numbers them: a new group's first assignment is epoch 2 (KAFKA-20268).
    r1 = c.heartbeat("m1", 2)  # told to give two partitions up
    kept = frozenset(r1.assignment)
    assert len(kept) == 2 and c.group().members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    offsets = (PartitionOffsetCommit(TopicPartition("t", 0), OffsetAndMetadata(42)),)
    commit = OffsetCommitRequest(GROUP, offsets, 2, "m1", api_version=9)
    assert c.call(commit).partitions[0].error_code is E.NONE

    old = c.hosting.coordinator_node(GROUP)
    c.hosting.kill_broker(old, c.now_ms)
    c.now_ms += 1_000
    c.hosting.handle_timer(c.now_ms)
    assert c.hosting.coordinator_node(GROUP) not in (None, old)

    # The new coordinator still withholds the partitions m1 has not revoked.
    assert c.heartbeat("m2", 3).assignment is None
    group = c.group()
    assert group.members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    assert group.members["m2"].state is MemberState.UNRELEASED_PARTITIONS
    assert group.offsets[TopicPartition("t", 0)].offset == 42
    # m1 revokes; both reach epoch 3 with the partitions split.
    assert c.heartbeat("m1", 2, topic_partitions=kept).member_epoch == 3
    r2 = c.heartbeat("m2", 3)
    assert frozenset(r2.assignment) == tps({"t": range(4)}) - kept
    assert all(m.state is MemberState.STABLE and m.member_epoch == 3 for m in c.group().members.values())
