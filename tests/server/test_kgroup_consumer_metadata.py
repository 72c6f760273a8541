"""kgroup's KafkaConsumer keeps asking for metadata while a subscribed topic is unknown.

Found on Apache Kafka 4.4.0 (3 nodes, the topic created just before three members started): a
leader whose kafka-python metadata did not know the topic assigned nothing, and nothing asked again
until ``metadata.max.age.ms`` (5 min) - kafka-python clears its update flag with any answer, even one
to a request sent before the topic was added.  Java's consumer keeps requesting metadata while a
subscribed topic is unknown; so does kgroup's adapter now.
"""
from __future__ import annotations

import time

import kgroup


def test_a_subscribed_topic_unknown_to_the_metadata_is_asked_for_again(server1):
    server1.create_topic("orders", 3)
    consumer = kgroup.KafkaConsumer(bootstrap_servers=server1.bootstrap_servers, group_id="stale-metadata",
                                    session_timeout_ms=6000, heartbeat_interval_ms=500,
                                    auto_offset_reset="earliest")
    try:
        cluster = consumer._client.cluster
        consumer.subscribe(["orders"])
        with cluster._lock:
            # The race's outcome: an answer that did not carry the topic, and the update flag cleared.
            cluster._partitions.pop("orders", None)
            cluster._need_update = False
        consumer._coordinator._handle_metadata_update(cluster)
        assert cluster.need_update or cluster.partitions_for_topic("orders"), (
            "an update that leaves a subscribed topic unknown asks again")
        deadline = time.monotonic() + 20  # metadata.max.age.ms is 300 s: only the re-request finds it
        while len(consumer.assignment()) < 3:
            assert time.monotonic() < deadline, "the consumer never learnt of the topic"
            consumer.poll(100)
    finally:
        consumer.close()
