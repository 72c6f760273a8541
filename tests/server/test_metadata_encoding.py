"""The Metadata response encoded by hand (kgroup.server.metadata_encoding, issue 23) is byte for byte
what kafka-python's encoder writes, at every version kgroup serves (v0-v12: Kafka's
MetadataResponse.json, flexible from v9), for random brokers, topics, errors, leaderless partitions,
offline replicas, null and long (multi-byte compact length) arrays; and the Metadata answer a client
gets right after a topic's creation never falls back to kafka-python's encoder."""
from __future__ import annotations

import random
import uuid
from typing import Any, List, Optional

import pytest
from kafka.protocol.admin import CreateTopicsRequest
from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from kgroup.server import metadata_encoding
from kgroup.server.faults import error_codes_of
from kgroup.server.frames import encode_response
from kgroup.server.metadata_encoding import (
    EncodedPartitions, encode_metadata_frame, encode_partition_entries, partition_layout)

VERSIONS = range(0, 13)
_TOPIC = MetadataResponse.MetadataResponseTopic
_PARTITION = _TOPIC.MetadataResponsePartition
_BROKER = MetadataResponse.MetadataResponseBroker


def kafka_python_frame(response: Any, version: int, correlation_id: int) -> bytes:
    response.API_VERSION = version
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))


def _ids(rng: random.Random, longest: int) -> Optional[List[int]]:
    roll = rng.random()
    if roll < 0.05:
        return None
    if roll < 0.1:
        return [rng.randrange(-5, 2**31) for _ in range(rng.randrange(126, 300))]  # > 1-byte compact length
    return [rng.randrange(0, 10) for _ in range(rng.randrange(0, longest + 1))]


def _name(rng: random.Random) -> str:
    return "".join(rng.choice("abcdéΩ_-.0") for _ in range(rng.randrange(0, 20)))


def _bits(rng: random.Random) -> Any:
    return rng.choice([None, set(), {3, 4, 31}, set(rng.sample(range(32), 5))])


def random_response(rng: random.Random, version: int) -> Any:
    brokers = [_BROKER(version=version, node_id=rng.randrange(-1, 100), host=_name(rng),
                       port=rng.randrange(65536),
                       rack=rng.choice([None, _name(rng)])) for _ in range(rng.randrange(0, 5))]
    topics = []
    for _ in range(rng.randrange(0, 6)):
        partitions = [_PARTITION(version=version, error_code=rng.choice([0, 0, 5, 9]),
                                 partition_index=rng.randrange(2**31), leader_id=rng.randrange(-1, 10),
                                 leader_epoch=rng.randrange(-1, 2**31), replica_nodes=_ids(rng, 5),
                                 isr_nodes=_ids(rng, 5), offline_replicas=_ids(rng, 2))
                      for _ in range(rng.randrange(0, 8))]
        name = None if version >= 10 and rng.random() < 0.2 else _name(rng)
        topic = _TOPIC(version=version, error_code=rng.choice([0, 3, 100]), name=name,
                       topic_id=rng.choice([None, uuid.UUID(int=rng.getrandbits(128))]),
                       is_internal=rng.random() < 0.3, partitions=None if rng.random() < 0.05 else partitions)
        topic.authorized_operations = _bits(rng)
        topics.append(topic)
    response = MetadataResponse(version=version, throttle_time_ms=rng.randrange(0, 1000), brokers=brokers,
                                cluster_id=rng.choice([None, _name(rng)]),
                                controller_id=rng.randrange(-1, 10),
                                topics=topics, error_code=0)
    response.authorized_operations = _bits(rng)
    return response


@pytest.mark.parametrize("version", VERSIONS)
def test_hand_encoding_is_kafka_pythons_byte_for_byte(version):
    rng = random.Random(version)
    for case in range(150):
        response = random_response(rng, version)
        correlation_id = rng.randrange(-2**31, 2**31)
        assert encode_metadata_frame(response, version, correlation_id) \
            == kafka_python_frame(response, version, correlation_id), (version, case)


def _random_states(rng: random.Random, count: int) -> tuple:
    indexes = rng.sample(range(10 * count), count)
    replicas = [rng.sample(range(1, 8), rng.randrange(0, 5)) for _ in range(count)]
    isrs = [r[:rng.randrange(0, len(r) + 1)] for r in replicas]
    leaders = [rng.choice(r) if r and rng.random() < 0.8 else None for r in replicas]
    epochs = [rng.randrange(0, 1000) for _ in range(count)]
    replicas[0] = list(range(1, 200))  # one entry needs a multi-byte compact array length
    return indexes, leaders, epochs, replicas, isrs


@pytest.mark.parametrize("version", VERSIONS)
def test_packed_partition_entries_encode_as_kafka_pythons_structs(version):
    """encode_partition_entries (the bytes a topic's cache keeps) against the structs Kafka's rules
    give (MetadataCache: LEADER_NOT_AVAILABLE and leader -1 without a leader, offline = assigned
    but not live), encoded by kafka-python; the bytes also read back as those structs."""
    rng = random.Random(100 + version)
    live = {1, 2, 3, 5}
    indexes, leaders, epochs, replicas, isrs = _random_states(rng, 60)
    layout = partition_layout(version)
    packed = encode_partition_entries(layout, indexes, leaders, epochs, replicas, isrs, live)
    structs = [_PARTITION(version=version, error_code=0 if leader is not None else 5, partition_index=index,
                          leader_id=leader if leader is not None else -1, leader_epoch=epoch,
                          replica_nodes=assigned, isr_nodes=isr,
                          offline_replicas=[b for b in assigned if b not in live])
               for index, leader, epoch, assigned, isr in zip(indexes, leaders, epochs, replicas, isrs)]
    encoded = EncodedPartitions(version, packed, (5,))

    def frame(partitions: Any) -> bytes:
        topic = _TOPIC(version=version, error_code=0, name="t", partitions=partitions)
        response = MetadataResponse(version=version, throttle_time_ms=0, brokers=[], controller_id=1,
                                    topics=[topic])
        return encode_metadata_frame(response, version, 7) or b""

    assert frame(encoded) == frame(structs)
    assert frame(structs) == kafka_python_frame(MetadataResponse(
        version=version, throttle_time_ms=0, brokers=[], controller_id=1,
        topics=[_TOPIC(version=version, error_code=0, name="t", partitions=structs)]), version, 7)
    assert len(encoded) == len(structs) and [e.to_dict() for e in encoded] == [e.to_dict() for e in structs]


def test_a_version_beyond_the_hand_encoders_is_left_to_kafka_python():
    response = MetadataResponse(version=12, throttle_time_ms=0, brokers=[], topics=[])
    assert encode_metadata_frame(response, 13, 1) is None
    with pytest.raises(ValueError):
        metadata_encoding._packer(3, 126, 0, 0)  # a caller packs such an entry by hand


# -- through the engine: the first Metadata after CreateTopics ------------------------------------------

def test_the_first_metadata_after_creation_never_uses_kafka_pythons_encoder(make_engine, monkeypatch):
    """Structural, not a timing: kafka-python's encoder (MetadataResponse.encode) is never called and
    the packed entries are never decoded into structs on the way to the wire; the frame is still
    what kafka-python decodes into the topic's partitions."""
    harness = make_engine(brokers=3)
    connection = harness.connect(1)
    creatable = CreateTopicsRequest.CreatableTopic
    harness.send(connection, CreateTopicsRequest(version=4, timeout_ms=10_000, validate_only=False, topics=[
        creatable(version=4, name="wide", num_partitions=2_000, replication_factor=3, assignments=[],
                  configs=[])]))
    calls: List[str] = []
    encode, decode = MetadataResponse.encode, metadata_encoding._decode_entries

    def counting_encode(self, *args, **kwargs):
        calls.append("MetadataResponse.encode")
        return encode(self, *args, **kwargs)

    def counting_decode(*args):
        calls.append("_decode_entries")
        return decode(*args)

    monkeypatch.setattr(MetadataResponse, "encode", counting_encode)
    monkeypatch.setattr(metadata_encoding, "_decode_entries", counting_decode)
    for version in (1, 12):
        request = MetadataRequest(version=version, topics=[MetadataRequest.MetadataRequestTopic(
            version=version, name="wide")], allow_auto_topic_creation=False,
            include_topic_authorized_operations=False)
        [reply] = harness.send(connection, request, correlation_id=40 + version)
        frame = reply.frame()
        assert frame is not None and calls == []
        answer = MetadataResponse.decode(frame[4:], version=version, header=True)
        [topic] = answer.topics
        assert answer.header.correlation_id == 40 + version and topic.name == "wide"
        assert [p.partition_index for p in topic.partitions] == list(range(2_000))
        assert all(p.leader_id in p.isr_nodes and len(p.replica_nodes) == 3 for p in topic.partitions)


def test_a_leaderless_partitions_code_reaches_the_trace_without_decoding_entries(make_engine, monkeypatch):
    plane = make_engine(brokers=3).engine.data
    plane.cluster.create_topic("t", 3, 1)
    plane.cluster.kill_broker(plane.cluster.topics["t"][0].assigned[0])  # its only replica
    assert plane.cluster.topics["t"][0].leader is None
    monkeypatch.setattr(metadata_encoding, "_decode_entries", None)  # any decoding would fail
    request = MetadataRequest(version=9, topics=[MetadataRequest.MetadataRequestTopic(version=9, name="t")],
                              allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    response = plane.metadata(1, request, 9)
    assert error_codes_of(response) == (5,)
    assert isinstance(response.topics[0].partitions, EncodedPartitions)
    assert encode_response(response, 9, 3) == encode_metadata_frame(response, 9, 3)


def test_through_the_engine_a_created_topics_first_metadata_packs_nothing(make_engine, monkeypatch):
    """CreateTopics elects every leader before it answers, so what the creation packed (for the
    version the client had used) is what the first Metadata answers: nothing is packed then."""
    from kgroup.server import metadata_answer

    harness = make_engine(brokers=3)
    connection = harness.connect(1)

    def metadata_v1(topic: str) -> Any:
        asked = [MetadataRequest.MetadataRequestTopic(version=1, name=topic)]
        [reply] = harness.send(connection, MetadataRequest(version=1, topics=asked))
        return MetadataResponse.decode(reply.frame()[4:], version=1, header=True)

    metadata_v1("unknown")  # a client's bootstrap request
    creatable = CreateTopicsRequest.CreatableTopic
    harness.send(connection, CreateTopicsRequest(version=4, timeout_ms=10_000, validate_only=False, topics=[
        creatable(version=4, name="wide", num_partitions=500, replication_factor=3, assignments=[],
                  configs=[])]))
    packed: List[int] = []
    pack = metadata_answer.encode_partition_entries
    monkeypatch.setattr(metadata_answer, "encode_partition_entries",
                        lambda layout, indexes, *rest: packed.extend(indexes) or pack(layout, indexes, *rest))
    [topic] = metadata_v1("wide").topics
    assert len(topic.partitions) == 500 and all(p.error_code == 0 for p in topic.partitions)
    assert packed == []
