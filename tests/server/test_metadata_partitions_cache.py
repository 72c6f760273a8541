"""Metadata reuses a topic's partition entries while nothing they say has changed (issue 23: a Metadata
answer for a 10,000-partition topic cost ~100 ms of struct building), and never answers stale ones: a
leader moved by a broker's death, an ISR change (assigned or changed in place), new partitions, a deleted
and recreated topic and another request version each rebuild them."""
from kafka.protocol.metadata import MetadataRequest

import pytest

from kgroup.server import metadata_answer
from kgroup.server.data_plane import DataPlane


@pytest.fixture
def plane(make_engine) -> DataPlane:
    return make_engine(brokers=3).engine.data


def _partitions(plane: DataPlane, topic: str = "t", version: int = 9) -> list:
    asked = [MetadataRequest.MetadataRequestTopic(version=version, name=topic)]
    request = MetadataRequest(version=version, topics=asked,
                              allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    [answer] = plane.metadata(1, request, version).topics
    return answer.partitions


def _view(entries: list) -> list:
    return [(e.partition_index, e.leader_id, e.leader_epoch, list(e.replica_nodes), list(e.isr_nodes),
             list(e.offline_replicas), e.error_code) for e in entries]


def test_unchanged_partitions_answer_the_same_entries(plane):
    plane.cluster.create_topic("t", 6, 3)
    first = _partitions(plane)
    assert _partitions(plane) is first


def test_a_dead_leader_rebuilds_the_entries_with_the_new_leader_and_offline_replica(plane):
    plane.cluster.create_topic("t", 6, 3)
    before = _view(_partitions(plane))
    leader = before[0][1]
    plane.cluster.kill_broker(leader)
    after = _view(_partitions(plane))
    assert after != before
    assert after[0][1] != leader and leader in after[0][5]
    assert after == _view([plane._partition_metadata(p, 9, set(plane.cluster.live_brokers()))
                           for p in plane.cluster.topics["t"]])


def test_an_isr_change_alone_rebuilds_the_entries(plane):
    plane.cluster.create_topic("t", 2, 3)
    _partitions(plane)
    p = plane.cluster.topics["t"][1]
    p.isr = [p.leader]
    assert _view(_partitions(plane))[1][4] == [p.leader]


def test_new_partitions_another_version_and_a_recreated_topic_rebuild_the_entries(plane):
    plane.cluster.create_topic("t", 2, 3)
    assert len(_partitions(plane)) == 2
    plane.cluster.add_partitions("t", 3)
    assert len(_partitions(plane)) == 5
    v1 = _partitions(plane, version=1)
    assert all(e.version == 1 for e in v1) and _partitions(plane, version=9)[0].version == 9
    plane.cluster.delete_topic("t")
    plane.cluster.create_topic("t", 1, 1)
    assert len(_partitions(plane)) == 1


def _count_packed(monkeypatch) -> list:
    """The partition indexes whose entries get packed from now on."""
    packed: list = []
    pack = metadata_answer.encode_partition_entries

    def counting(layout, indexes, *rest):
        packed.extend(indexes)
        return pack(layout, indexes, *rest)

    monkeypatch.setattr(metadata_answer, "encode_partition_entries", counting)
    return packed


def test_one_isr_change_rebuilds_only_that_partitions_entry(plane, monkeypatch):
    plane.cluster.create_topic("t", 6, 3)
    _partitions(plane)
    packed = _count_packed(monkeypatch)
    moved = plane.cluster.topics["t"][4]
    moved.isr = [b for b in moved.isr if b != moved.leader][:1] + [moved.leader]
    second = _partitions(plane)
    assert packed == [4]
    assert list(second[4].isr_nodes) == moved.isr


def test_an_isr_changed_in_place_rebuilds_that_entry(plane, monkeypatch):
    """Partition.isr is a list the core changes in place (isr.remove, isr.append): the cache keeps
    its own copy of what it packed, never a reference to the partition's list."""
    plane.cluster.create_topic("t", 3, 3)
    _partitions(plane)
    packed = _count_packed(monkeypatch)
    shrunk = plane.cluster.topics["t"][1]
    shrunk.isr.remove(next(b for b in shrunk.isr if b != shrunk.leader))
    assert _view(_partitions(plane))[1][4] == shrunk.isr and packed == [1]
    shrunk.assigned.reverse()
    assert _view(_partitions(plane))[1][3] == shrunk.assigned and packed == [1, 1]


def test_unchanged_partitions_pack_nothing_and_another_version_of_a_layout_reuses_them(plane, monkeypatch):
    plane.cluster.create_topic("t", 4, 3)
    first = _partitions(plane, version=9)
    packed = _count_packed(monkeypatch)
    assert _partitions(plane, version=9) is first
    v12 = _partitions(plane, version=12)
    assert packed == [] and v12.encoded == first.encoded and all(e.version == 12 for e in v12)


@pytest.mark.parametrize("version", range(0, 13))
def test_entries_encode_as_kafka_pythons_own_constructor_builds_them(plane, version):
    """partition_metadata skips kafka-python's generic constructor: the bytes must not differ."""
    from kafka.protocol.metadata import MetadataResponse

    plane.cluster.create_topic("t", 4, 3)
    plane.cluster.kill_broker(2)
    fast = _partitions(plane, version=version)
    live = set(plane.cluster.live_brokers())
    entry = MetadataResponse.MetadataResponseTopic.MetadataResponsePartition
    slow = [entry(version=version, error_code=0 if p.leader is not None else 5, partition_index=p.index,
                  leader_id=p.leader if p.leader is not None else -1, leader_epoch=p.leader_epoch,
                  replica_nodes=list(p.assigned), isr_nodes=list(p.isr),
                  offline_replicas=[b for b in p.assigned if b not in live])
            for p in plane.cluster.topics["t"]]

    def encoded(partitions: list) -> bytes:
        topic = MetadataResponse.MetadataResponseTopic(version=version, error_code=0, name="t",
                                                       partitions=partitions)
        return MetadataResponse(version=version, throttle_time_ms=0, brokers=[], controller_id=1,
                                topics=[topic]).encode(version=version)

    assert encoded(fast) == encoded(slow)


def test_a_created_topic_is_packed_at_creation_for_the_versions_clients_ask(plane, monkeypatch):
    """The first Metadata after a creation answers from entries the creation packed (for the
    layouts clients had been asking for: v1 here, and v9-v12 share one), so it costs what a
    later answer does; a topic deleted and created again is packed anew, never answered stale."""
    _partitions(plane, topic="other", version=1)
    _partitions(plane, topic="other", version=12)
    assert plane.topics.create_topic("t", 50, 3) == 0
    packed = _count_packed(monkeypatch)
    assert len(_partitions(plane, version=1)) == 50 and len(_partitions(plane, version=9)) == 50
    assert packed == []
    plane.cluster.delete_topic("t")
    plane.metadata_answer.forget("t")  # what TopicAdmin's delete tells the cache
    assert plane.topics.create_topic("t", 3, 3) == 0
    assert packed == [0, 1, 2, 0, 1, 2]  # at creation, for v1 and v12
    assert [e.partition_index for e in _partitions(plane, version=1)] == [0, 1, 2]
    live = set(plane.cluster.live_brokers())
    assert _view(_partitions(plane, version=12)) == _view(
        [plane._partition_metadata(p, 12, live) for p in plane.cluster.topics["t"]])
    assert packed == [0, 1, 2, 0, 1, 2]
