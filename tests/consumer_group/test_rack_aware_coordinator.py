"""The KIP-848 coordinator hands partition racks to a rack-aware server assignor (issue 27 item 3).

Member racks come from ConsumerGroupHeartbeat's RackId, partition racks from the coordinator's
``partition_racks`` lookup (on the broker: the racks of each partition's replica brokers); an assignor
that does not set ``uses_partition_racks`` is still called with two arguments (tests/consumer_group's
prepared assignor is one).
"""
from __future__ import annotations

from consumer_group_harness import GROUP, tps

from kgroup.core.consumer_group_messages import ConsumerGroupHeartbeatRequest
from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode

CONFIG = GroupCoordinatorConfig(consumer_group_assignors=("uniform", "range", "uniform-rack-aware"))
TOPICS = {"orders": 4}
#: Partitions 0 and 1 on rack-b, 2 and 3 on rack-a: uniform's ranges would put all four off-rack.
RACKS = {"orders": [frozenset({"rack-b"})] * 2 + [frozenset({"rack-a"})] * 2}


def join(coordinator, member_id, rack, assignor, now_ms=0):
    request = ConsumerGroupHeartbeatRequest(
        group_id=GROUP, member_id=member_id, member_epoch=0, rebalance_timeout_ms=5000, rack_id=rack,
        subscribed_topic_names=("orders",), topic_partitions=(), server_assignor=assignor)
    [delivery] = coordinator.handle(member_id, request, now_ms).deliveries
    return delivery.response


def test_the_coordinator_gives_members_the_partitions_on_their_rack():
    coordinator = GroupCoordinator(CONFIG, topic_metadata=TOPICS.get,
                                   partition_racks=lambda topic: RACKS.get(topic, ()))
    join(coordinator, "member-a", "rack-a", "uniform-rack-aware")
    join(coordinator, "member-b", "rack-b", "uniform-rack-aware")
    group = coordinator.consumer_group(GROUP)
    assert group is not None
    assert group.target_of("member-a") == tps({"orders": [2, 3]})
    assert group.target_of("member-b") == tps({"orders": [0, 1]})


def test_uniform_ignores_the_racks_it_is_not_given():
    coordinator = GroupCoordinator(CONFIG, topic_metadata=TOPICS.get,
                                   partition_racks=lambda topic: RACKS.get(topic, ()))
    join(coordinator, "member-a", "rack-a", "uniform")
    join(coordinator, "member-b", "rack-b", "uniform")
    group = coordinator.consumer_group(GROUP)
    assert group is not None and group.target_of("member-a") == tps({"orders": [0, 1]})


def test_asking_for_it_when_the_coordinator_does_not_offer_it_is_unsupported_assignor():
    coordinator = GroupCoordinator(GroupCoordinatorConfig(), topic_metadata=TOPICS.get)
    response = join(coordinator, "member-a", "rack-a", "uniform-rack-aware")
    assert response.error_code is ErrorCode.UNSUPPORTED_ASSIGNOR
