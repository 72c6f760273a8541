"""The ``uniform-rack-aware`` server assignor with stock confluent-kafka consumers, over real sockets.

Three brokers on three racks (``broker_racks``), a 6-partition topic with 2 replicas a partition
(the cluster's round-robin placement puts each partition on two of the three racks), and
three confluent-kafka consumers with ``group.protocol=consumer``, ``group.remote.assignor=
uniform-rack-aware`` and ``client.rack`` set, one a rack.  KIP-848's coordinator computes the
assignment: it must be balanced (two partitions each) and every partition rack-local (KIP-881: a replica
on the member's rack), as ConsumerGroupDescribe reports it and as the consumers see it.  Before this
assignor existed the heartbeat asking for it failed with UNSUPPORTED_ASSIGNOR.
"""
from __future__ import annotations

import time

import pytest

from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode
from kgroup.server import KafkaServer

confluent_kafka = pytest.importorskip("confluent_kafka")
confluent_admin = pytest.importorskip("confluent_kafka.admin")

TOPIC = "rack-aware"
GROUP = "rack-aware-group"
RACKS = {1: "rack-a", 2: "rack-b", 3: "rack-c"}
CONFIG = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0, consumer_group_heartbeat_interval_ms=200,
                                consumer_group_session_timeout_ms=10_000,
                                consumer_group_assignors=("uniform", "range", "uniform-rack-aware"))
#: Longest wait for the group to settle (a couple of seconds on an idle machine).
SETTLE_S = 30.0


def replica_racks(server: KafkaServer, partition: int) -> set[str]:
    assert server.cluster is not None
    return {RACKS[broker] for broker in server.cluster.topics[TOPIC][partition].assigned}


def consumer(server: KafkaServer, rack: str):
    return confluent_kafka.Consumer({
        "bootstrap.servers": server.bootstrap_servers, "group.id": GROUP, "group.protocol": "consumer",
        "group.remote.assignor": "uniform-rack-aware", "client.rack": rack, "client.id": f"on-{rack}",
        "auto.offset.reset": "earliest", "enable.auto.commit": False})


def test_confluent_consumers_with_client_rack_get_balanced_rack_local_partitions():
    with KafkaServer(brokers=3, broker_racks=RACKS, coordinator=CONFIG) as server:
        server.create_topic(TOPIC, partitions=6, replication_factor=2)
        replica_racks_of = {p: replica_racks(server, p) for p in range(6)}
        assert len({frozenset(racks) for racks in replica_racks_of.values()}) == 3  # two racks each
        admin = confluent_admin.AdminClient({"bootstrap.servers": server.bootstrap_servers})
        # Metadata answers each broker's rack (fetch-from-follower clients read it there).
        nodes = admin.describe_cluster(request_timeout=10).result(timeout=15).nodes
        assert {node.id: node.rack for node in nodes} == RACKS
        consumers = {rack: consumer(server, rack) for rack in RACKS.values()}
        try:
            for member in consumers.values():
                member.subscribe([TOPIC])
            deadline = time.monotonic() + SETTLE_S
            described = None
            while time.monotonic() < deadline:
                for member in consumers.values():
                    member.poll(0.05)
                described = server.describe_consumer_group(GROUP)
                members = described.members
                settled = (len(members) == 3 and described.group_state == "Stable"
                           and all(m.assignment == m.target_assignment for m in members)
                           and all(len(m.assignment) == 2 for m in members))
                seen = {rack: {tp.partition for tp in member.assignment()}
                        for rack, member in consumers.items()}
                if settled and sorted(len(p) for p in seen.values()) == [2, 2, 2]:
                    break
            else:
                pytest.fail(f"the group did not settle within {SETTLE_S} s: {described}")
        finally:
            for member in consumers.values():
                member.close()
    assert described.error_code is ErrorCode.NONE and described.assignor_name == "uniform-rack-aware"
    by_rack = {m.rack_id: {tp.partition for tp in m.assignment} for m in described.members}
    assert set(by_rack) == set(RACKS.values()), "every member reported its client.rack in the heartbeat"
    for rack, partitions in by_rack.items():
        assert len(partitions) == 2
        for partition in partitions:
            assert rack in replica_racks_of[partition], f"partition {partition} is not on {rack}"
    assert seen == by_rack, "the consumers own what the coordinator assigned"
