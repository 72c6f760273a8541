"""TxnOffsetCommit (API 28) and OffsetFetch ``require_stable`` over the wire (issue 26): kafka-python's
request classes against a real KafkaServer on loopback.  The transaction's marker is written the way
the transaction coordinator writes it, through the server's GroupHosting.write_txn_marker."""
from __future__ import annotations

import pytest
from kafka.protocol.consumer import OffsetFetchRequest
from kafka.protocol.producer import TxnOffsetCommitRequest

from kgroup.core.cluster.offsets_topic import GROUP_METADATA_TOPIC
from kgroup.core.transaction_markers import MarkerAppend, TxnMarker

NONE, ILLEGAL_GENERATION = 0, 22
UNKNOWN_TOPIC_OR_PARTITION, INVALID_PRODUCER_EPOCH, UNSTABLE_OFFSET_COMMIT = 3, 47, 88
PID, EPOCH = 4_000, 1


def _txn_commit(version: int, group: str, offset: int, *, epoch: int = EPOCH, generation_id: int = -1,
                partitions=(0,)) -> TxnOffsetCommitRequest:
    topic = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
    fields = dict(generation_id=generation_id, member_id="", group_instance_id=None) if version >= 3 else {}
    return TxnOffsetCommitRequest(
        version=version, transactional_id="tx", group_id=group, producer_id=PID, producer_epoch=epoch,
        topics=[topic(version=version, name="t", partitions=[
            topic.TxnOffsetCommitRequestPartition(version=version, partition_index=i, committed_offset=offset,
                                                  committed_leader_epoch=-1, committed_metadata="m")
            for i in partitions])], **fields)


def _codes(answer) -> dict:
    return {(t.name, p.partition_index): p.error_code for t in answer.topics for p in t.partitions}


def _fetch(version: int, group: str) -> OffsetFetchRequest:
    if version >= 8:
        group_cls = OffsetFetchRequest.OffsetFetchRequestGroup
        return OffsetFetchRequest(version=version, require_stable=True, groups=[
            group_cls(version=version, group_id=group, topics=[
                group_cls.OffsetFetchRequestTopics(version=version, name="t", partition_indexes=[0])])])
    return OffsetFetchRequest(version=version, group_id=group, require_stable=True, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(version=version, name="t", partition_indexes=[0])])


def _fetched(answer, version: int) -> tuple[int, int, int]:
    """(group-level error, partition error, committed offset) of t-0."""
    if version >= 8:
        (group,) = answer.groups
        (part,) = group.topics[0].partitions
        return group.error_code, part.error_code, part.committed_offset
    (part,) = answer.topics[0].partitions
    return answer.error_code, part.error_code, part.committed_offset


@pytest.mark.parametrize("txn_version,fetch_version", [(0, 7), (3, 7), (4, 8)])
def test_pending_offsets_are_unstable_until_the_marker_then_committed(server1, raw_client, txn_version,
                                                                      fetch_version):
    group = f"eos-{txn_version}-{fetch_version}"
    server1.create_topic("t", partitions=1)
    server1.wait_coordinators_loaded()
    client = raw_client(server1.listener(1))
    assert _codes(client.request(_txn_commit(txn_version, group, 42))) == {("t", 0): NONE}

    assert _fetched(client.request(_fetch(fetch_version, group)), fetch_version) == (
        NONE, UNSTABLE_OFFSET_COMMIT, -1)

    def write_marker():
        hosting = server1.hosting
        marker = TxnMarker(GROUP_METADATA_TOPIC, hosting.partition_for(group), PID, EPOCH, True, 0)
        return hosting.write_txn_marker(marker, server1._clock())
    appended = server1._call(write_marker)  # on the server's loop thread, as the txn coordinator runs
    assert isinstance(appended, MarkerAppend)

    assert _fetched(client.request(_fetch(fetch_version, group)), fetch_version) == (NONE, NONE, 42)


def test_kip447_and_broker_checks_over_the_wire(server1, raw_client):
    server1.create_topic("t", partitions=1)
    server1.wait_coordinators_loaded()
    client = raw_client(server1.listener(1))
    # v3+: a generation for a group that does not exist (Kafka: ILLEGAL_GENERATION).
    assert _codes(client.request(_txn_commit(3, "nobody", 1, generation_id=5))) == {
        ("t", 0): ILLEGAL_GENERATION}
    # The broker answers a partition the topic does not have; the others reach the coordinator.
    assert _codes(client.request(_txn_commit(3, "g", 1, partitions=(0, 7)))) == {
        ("t", 0): NONE, ("t", 7): UNKNOWN_TOPIC_OR_PARTITION}
    # An older epoch of a producer that already wrote to the offsets partition: a zombie.
    assert _codes(client.request(_txn_commit(3, "g", 2, epoch=EPOCH - 1))) == {
        ("t", 0): INVALID_PRODUCER_EPOCH}


@pytest.mark.parametrize("version,expected", [(1, 15), (2, 14)])
def test_v0_v1_answer_load_in_progress_as_coordinator_not_available(version, expected):
    # KafkaApis.handleTxnOffsetCommitRequest: producers before KAFKA-7296 crash on LOAD_IN_PROGRESS.
    from kgroup.core.error_codes import ErrorCode
    from kgroup.server.apis.txn_offset_commit import API
    request = _txn_commit(version, "g", 1)
    answer = API.error_answer(request, version, int(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
    assert _codes(answer) == {("t", 0): expected}
