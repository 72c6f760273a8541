"""The adapter, driven through kafka-python 3.0's own leader code path."""
from __future__ import annotations

import random

import pytest
from kafka.cluster import ClusterMetadata
from kafka.consumer.subscription_state import SubscriptionState
from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from kafka.coordinator.assignors.abstract import RebalanceProtocol as KafkaRebalanceProtocol
from kafka.coordinator.consumer import ConsumerCoordinator
from kafka.protocol.consumer.group import JoinGroupResponse
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment
from kafka.protocol.metadata import MetadataResponse

from kgroup.assignors import get_assignor
from kgroup.assignors.kafka_python import KafkaPythonAssignor, subscription_from_member, to_kafka_python
from kgroup.testing.conformance import check_validity
from kgroup.values import Subscription, TopicPartition
from kgroup.wire.consumer_protocol import decode_assignment

NAMES = ["range", "roundrobin", "sticky", "cooperative-sticky"]
TOPICS = {"orders": 7, "payments": 4, "audit": 3}


def cluster_with(topics):
    R = MetadataResponse
    response = R(
        version=1,
        brokers=[R.MetadataResponseBroker(node_id=0, host="localhost", port=9092, rack=None)],
        controller_id=0,
        topics=[
            R.MetadataResponseTopic(error_code=0, name=name, is_internal=False, partitions=[
                R.MetadataResponseTopic.MetadataResponsePartition(
                    error_code=0, partition_index=p, leader_id=0, replica_nodes=[0], isr_nodes=[0])
                for p in range(count)
            ])
            for name, count in topics.items()
        ],
    )
    cluster = ClusterMetadata()
    # a real round trip through the wire struct, as the network client does
    cluster.update_metadata(R.decode(response.encode(version=1), version=1))
    return cluster


class _Net:
    """kafka-python's coordinator only takes a weak reference to this in __init__."""


class _Manager:
    def __init__(self, cluster):
        self.cluster = cluster
        self._net = _Net()


class _Client:
    def __init__(self, cluster):
        self._manager = _Manager(cluster)
        self.cluster = cluster


def coordinator(cluster, adapter, topics):
    subscription = SubscriptionState()
    subscription.subscribe(topics=list(topics))
    return ConsumerCoordinator(
        _Client(cluster), subscription, group_id="g", assignors=[adapter],
        enable_auto_commit=False, api_version=(4, 0),
    )


def join_members(adapters, topics_by_member, instance_ids):
    """JoinGroup member structs built from each member's own metadata() bytes."""
    Member = JoinGroupResponse.JoinGroupResponseMember
    return [
        Member(member_id=member_id, group_instance_id=instance_ids.get(member_id),
               metadata=adapters[member_id].metadata(set(topics_by_member[member_id])).encode())
        for member_id in sorted(adapters)
    ]


def run_round(name, cluster, topics_by_member, adapters, instance_ids, generation):
    leader_id = sorted(adapters)[0]
    leader = coordinator(cluster, adapters[leader_id], topics_by_member[leader_id])
    members = join_members(adapters, topics_by_member, instance_ids)
    group_assignment = leader._perform_assignment(leader_id, name, members)
    # kafka-python decoded each member's metadata in place; read what it saw
    expected_subs = {m.member_id: subscription_from_member(m) for m in members}
    decoded = {m: decode_assignment(a.encode()) for m, a in group_assignment.items()}
    for member_id, assignment in group_assignment.items():
        adapters[member_id].on_assignment(ConsumerProtocolAssignment.decode(assignment.encode()), generation)
    return decoded, expected_subs


@pytest.mark.parametrize("name", NAMES)
def test_leader_path_matches_direct_assignment(name):
    pytest.importorskip(f"kgroup.assignors.{name.replace('-', '_')}")
    rng = random.Random(7)
    cluster = cluster_with(TOPICS)
    topics_by_member = {f"member-{i}": sorted(rng.sample(sorted(TOPICS) + ["deleted"], rng.randint(1, 3)))
                        for i in range(5)}
    instance_ids = {"member-3": "static-a", "member-1": "static-b"}
    adapters = {m: to_kafka_python(name) for m in topics_by_member}
    counts = {t: n for t, n in TOPICS.items()}
    previous: dict = {}  # the first round's assignment, read in the second
    for generation in (1, 2):
        decoded, subs = run_round(name, cluster, topics_by_member, adapters, instance_ids, generation)
        direct = get_assignor(name).assign(counts, subs)
        assert {m: sorted(a.partitions) for m, a in decoded.items()} == \
            {m: sorted(a.partitions) for m, a in direct.items()}
        check_validity(counts, subs, decoded)
        assert {s.group_instance_id for s in subs.values()} == {None, "static-a", "static-b"}
        if generation == 2:
            # the second round's metadata carried each member's generation,
            # and (cooperative only) what it owned after the first round
            cooperative = "cooperative" in name
            for member_id, sub in subs.items():
                assert sub.generation_id == 1
                owned = sorted(previous[member_id].partitions) if cooperative else []
                assert sorted(sub.owned_partitions) == owned
        previous = decoded
        # a member drops out before the second round
        topics_by_member.pop("member-4", None)
        adapters.pop("member-4", None)


def test_cooperative_metadata_carries_owned_partitions_and_generation():
    adapter = to_kafka_python("cooperative-sticky")
    assert adapter.supported_protocols()[0] == KafkaRebalanceProtocol.COOPERATIVE
    adapter.on_assignment(ConsumerProtocolAssignment(
        version=3,
        assigned_partitions=[ConsumerProtocolAssignment.TopicPartition(topic="t", partitions=[2, 0])],
        user_data=None), 5)
    metadata = adapter.metadata({"t"})
    sub = subscription_from_member(JoinGroupResponse.JoinGroupResponseMember(
        member_id="m", group_instance_id=None, metadata=metadata.encode()))
    assert sub == Subscription(["t"], owned_partitions=[TopicPartition("t", 0), TopicPartition("t", 2)],
                               generation_id=5)


def test_eager_metadata_sends_generation_but_no_owned_partitions():
    adapter = to_kafka_python("range")
    assert adapter.supported_protocols() == [KafkaRebalanceProtocol.EAGER]
    adapter.on_assignment(ConsumerProtocolAssignment(
        version=3, assigned_partitions=[ConsumerProtocolAssignment.TopicPartition(topic="t", partitions=[1])],
        user_data=None), 3)
    metadata = adapter.metadata({"t"})
    assert metadata.owned_partitions == [] and metadata.generation_id == 3


def test_sticky_user_data_reaches_the_subscription():
    pytest.importorskip("kgroup.assignors.sticky")
    adapter = to_kafka_python("sticky")
    adapter.on_assignment(ConsumerProtocolAssignment(
        version=3, assigned_partitions=[ConsumerProtocolAssignment.TopicPartition(topic="t", partitions=[1])],
        user_data=None), 4)
    expected = get_assignor("sticky").subscription_user_data(["t"], [TopicPartition("t", 1)], 4)
    assert expected and adapter.metadata({"t"}).user_data == expected


def test_to_kafka_python_accepts_names_classes_and_instances():
    from kgroup.assignors.range import RangeAssignor

    for value in ("range", RangeAssignor, RangeAssignor()):
        adapter = to_kafka_python(value)
        assert isinstance(adapter, (KafkaPythonAssignor, AbstractPartitionAssignor))
        assert adapter.name == "range"
    with pytest.raises(TypeError):
        KafkaPythonAssignor(object())


def rack_cluster():
    """Two brokers on racks a and b; partition p's only replica is on broker p % 2."""
    R = MetadataResponse
    response = R(
        version=1,
        brokers=[R.MetadataResponseBroker(node_id=n, host="localhost", port=9092 + n, rack=r)
                 for n, r in ((0, "a"), (1, "b"))],
        controller_id=0,
        topics=[R.MetadataResponseTopic(error_code=0, name="t", is_internal=False, partitions=[
            R.MetadataResponseTopic.MetadataResponsePartition(
                error_code=0, partition_index=p, leader_id=p % 2, replica_nodes=[p % 2], isr_nodes=[p % 2])
            for p in range(4)
        ])],
    )
    cluster = ClusterMetadata()
    cluster.update_metadata(R.decode(response.encode(version=1), version=1))
    return cluster


def test_rack_aware_range_through_kafka_python():
    cluster = rack_cluster()
    adapters = {"m1": to_kafka_python("range", client_rack="b"),
                "m2": to_kafka_python("range", client_rack="a")}
    topics_by_member = {"m1": ["t"], "m2": ["t"]}
    decoded, subs = run_round("range", cluster, topics_by_member, adapters, {}, 1)
    assert {s.rack_id for s in subs.values()} == {"a", "b"}
    # plain range would give m1 t-0,t-1; rack matching gives each member its rack's partitions
    assert sorted(decoded["m1"].partitions) == [TopicPartition("t", 1), TopicPartition("t", 3)]
    assert sorted(decoded["m2"].partitions) == [TopicPartition("t", 0), TopicPartition("t", 2)]


def test_undecoded_member_bytes_use_the_safe_decoder():
    from kgroup.errors import InvalidProtocolMetadata
    from kgroup.wire.consumer_protocol import encode_subscription

    Member = JoinGroupResponse.JoinGroupResponseMember
    sub = Subscription(["t"], generation_id=2, rack_id="r")
    ok = Member(member_id="m", group_instance_id="i", metadata=encode_subscription(sub))
    assert subscription_from_member(ok) == Subscription(["t"], generation_id=2, rack_id="r",
                                                        group_instance_id="i")
    with pytest.raises(InvalidProtocolMetadata):
        subscription_from_member(Member(member_id="m", group_instance_id=None, metadata=b"\x00\x03\xff"))


def test_stock_kafka_consumer_accepts_the_adapter():
    from kafka import KafkaConsumer

    # api_version given: no broker contact is needed to build the consumer
    consumer = KafkaConsumer(bootstrap_servers="127.0.0.1:1", group_id="g", api_version=(4, 0),
                             partition_assignment_strategy=[to_kafka_python("cooperative-sticky")])
    try:
        coordinator = consumer._coordinator
        assert isinstance(coordinator._assignors["cooperative-sticky"], KafkaPythonAssignor)
        assert coordinator._rebalance_protocol == KafkaRebalanceProtocol.COOPERATIVE
    finally:
        consumer.close()
