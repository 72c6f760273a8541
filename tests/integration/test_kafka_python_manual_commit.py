"""Manual assignment with a group_id on a real broker (Tansu): commit and read back.

Stock kafka-python (and Java) commit with generation -1 and member id ""
when partitions are assigned by hand; the coordinator accepts that for a
group without members (Kafka's GroupCoordinator.handleCommitOffsets in 3.x, ClassicGroup
.validateOffsetCommit in 4.x: a generation -1 commit to an Empty group comes from a consumer
that does not use group management).
kgroup's drop-in must do the same.
"""
from __future__ import annotations

import pytest
from kafka.structs import OffsetAndMetadata, TopicPartition

pytestmark = pytest.mark.broker


@pytest.mark.parametrize("kind", ["stock", "kgroup"])
def test_manual_assignment_commits_and_reads_back(tansu_bootstrap, unique_name, kind):
    from integration_factories import consumer_class

    from kgroup.testing.tansu import create_topic

    topic, group = unique_name("manual"), unique_name("g")
    create_topic(tansu_bootstrap, topic, 1)
    tp = TopicPartition(topic, 0)
    consumer = consumer_class(kind)(bootstrap_servers=tansu_bootstrap, group_id=group,
                                    enable_auto_commit=False, request_timeout_ms=15_000)
    try:
        consumer.assign([tp])
        assert consumer.committed(tp) is None
        consumer.commit({tp: OffsetAndMetadata(3, "", -1)})
        assert consumer.committed(tp) == 3
    finally:
        consumer.close(autocommit=False)
