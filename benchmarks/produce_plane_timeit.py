"""CPU of ``DataPlane.produce`` for one non-transactional request (acks=1, one partition, one batch
of 10 records of 100 bytes), in-process: what the KIP-890 verification check costs producers that
are not transactional.  Each run times 2,000 produces on a freshly created topic; the figure to
compare between two checkouts is the lowest run (the machine is shared).

    PYTHONPATH=$PWD python -m benchmarks.produce_plane_timeit --runs 15
    (cd /tmp/base && PYTHONPATH=$PWD python -m benchmarks.produce_plane_timeit --runs 15)
"""
from __future__ import annotations

import argparse
import statistics
import timeit

from kafka.protocol.producer import ProduceRequest
from kafka.record.memory_records import MemoryRecordsBuilder

from kgroup.core.cluster.config import ClusterConfig
from kgroup.core.cluster.group_hosting import GroupHosting, GroupHostingConfig
from kgroup.core.cluster.state_machine import ClusterStateMachine
from kgroup.server import ServerConfig
from kgroup.server.data_plane import DataPlane
from kgroup.server.engine import ServerEngine

PRODUCES_PER_RUN = 2_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    cluster = ClusterStateMachine(ClusterConfig(broker_ids=(1,), default_replication_factor=1,
                                                listeners={1: ("127.0.0.1", 19_001)}), now_ms=0)
    hosting = GroupHosting(cluster, GroupHostingConfig(offsets_topic_partitions=50,
                                                       offsets_topic_replication_factor=1), 0)
    data = DataPlane(cluster, ServerConfig(brokers=1))
    ServerEngine(hosting, data, 0)   # as the server wires it (the transaction hosting included)
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    for i in range(10):
        builder.append(timestamp=1_000 + i, key=None, value=b"x" * 100, headers=[])
    builder.close()
    topic = ProduceRequest.TopicProduceData
    request = ProduceRequest(version=9, transactional_id=None, acks=1, timeout_ms=1_000, topic_data=[
        topic(version=9, name="t", partition_data=[
            topic.PartitionProduceData(version=9, index=0, records=bytes(builder.buffer()))])])
    runs_us = []
    for _ in range(args.runs):
        if "t" in cluster.topics:
            cluster.delete_topic("t")
            data.producer_states.forget("t")
        cluster.create_topic("t", 1, 1)
        assert data.produce(1, request, 9)[0].responses[0].partition_responses[0].error_code == 0
        seconds = timeit.timeit(lambda: data.produce(1, request, 9), number=PRODUCES_PER_RUN)
        runs_us.append(seconds / PRODUCES_PER_RUN * 1e6)
    print(f"DataPlane.produce, non-transactional, acks=1: lowest {min(runs_us):.2f} us, median "
          f"{statistics.median(runs_us):.2f} us per request over {args.runs} runs of {PRODUCES_PER_RUN}")


if __name__ == "__main__":
    main()
