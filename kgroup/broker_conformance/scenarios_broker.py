"""Broker edge cases: CreateTopics validation, Produce to internal topics and malformed batches,
ListOffsets specials, Metadata, DeleteTopics, CreatePartitions, FindCoordinator, InitProducerId, Fetch.

Kafka sources: ``KafkaApis`` handlers, ``ControllerApis.createTopics`` / ``ReplicationControlManager``
(``ReplicationControlManagerTest.testCreateTopics...``), ``Topic.validate``, ``LogValidator``
(``LogValidatorTest``), ``UnifiedLog.fetchOffsetByTimestamp``.
"""
from __future__ import annotations

import struct
from typing import Any

from kgroup.broker_conformance import builders
from kgroup.broker_conformance.scenario import ScenarioContext, scenario


def _create(scenario_id: str, description: str, version: int = 5, **options: Any) -> None:
    @scenario(scenario_id, "broker", description)
    def run(ctx: ScenarioContext) -> None:
        name = options.get("name", ctx.name("t"))
        spec = (name, options.get("partitions", 1), options.get("replicas", 1))
        if name.startswith("__"):
            # A group lookup first makes the broker create its offsets topic with its own settings, so
            # this request can never be the one that creates __consumer_offsets.
            ctx.coordinator(ctx.name("g"))
        connection = ctx.connect()
        answer = ctx.call(connection, builders.create_topics(
            version, [spec], validate_only=options.get("validate_only", False),
            configs=options.get("configs", {}), assignments=options.get("assignments")),
            view=_without_configs)
        if answer is not None and answer.topics[0].error_code == 0 and not options.get("validate_only"):
            # Kafka's answer comes before its metadata cache has the topic: wait (not recorded).
            ctx.wait_until(lambda: _topic_code(connection, name) == 0, f"{name} in Metadata")
        if not name.startswith("__"):
            ctx.call(connection, builders.metadata(12, [name]), "Metadata after", view=_topic_errors)


def _topic_code(connection: Any, topic: str) -> int:
    """The error code Metadata gives for ``topic`` now (not recorded: a wait's probe)."""
    return int(connection.request(builders.metadata(12, [topic])).topics[0].error_code)


def _partition_count(connection: Any, topic: str) -> int:
    """How many partitions Metadata lists for ``topic`` now (not recorded: a wait's probe)."""
    return len(connection.request(builders.metadata(12, [topic])).topics[0].partitions)


def _without_configs(value: Any) -> Any:
    """CreateTopics v5+ lists every config of a created topic with its source: defaults are the
    broker's own (kgroup keeps none), so only the figures and the errors are compared."""
    return {"topics": [{k: v for k, v in t.items() if k not in ("configs", "topic_config_error_code")}
                       for t in value["topics"]]}


def _topic_errors(value: Any) -> Any:
    return [[t["name"], t["error_code"], len(t["partitions"])] for t in value["topics"]]


_create("broker.create-topics.ok", "CreateTopics of a new topic with 3 partitions: NONE, then Metadata lists "
        "its 3 partitions (ReplicationControlManagerTest.testCreateTopics)", partitions=3)
for _v in (2, 4, 7):
    _create(f"broker.create-topics.ok.v{_v}", f"CreateTopics v{_v} of a new topic with 2 partitions "
            "(ReplicationControlManagerTest.testCreateTopics)", version=_v, partitions=2)
_create("broker.create-topics.default-partitions", "CreateTopics with -1 partitions and -1 replicas takes "
        "num.partitions and default.replication.factor (KIP-464)", partitions=-1, replicas=-1)
_create("broker.create-topics.zero-partitions", "CreateTopics with 0 partitions: INVALID_PARTITIONS "
        "(ReplicationControlManager.validateNumPartitions)", partitions=0)
_create("broker.create-topics.negative-partitions", "CreateTopics with -5 partitions: INVALID_PARTITIONS",
        partitions=-5)
_create("broker.create-topics.zero-replicas", "CreateTopics with replication factor 0: "
        "INVALID_REPLICATION_FACTOR", replicas=0)
_create("broker.create-topics.too-many-replicas", "CreateTopics with replication factor 3 on one broker: "
        "INVALID_REPLICATION_FACTOR (testCreateTopicsWithInsufficientBrokers...)", replicas=3)
_create("broker.create-topics.validate-only", "CreateTopics with validate_only: NONE and no topic created "
        "(KIP-108)", partitions=2, validate_only=True)
_create("broker.create-topics.unknown-config", "CreateTopics with an unknown topic config: INVALID_CONFIG "
        "(ControllerConfigurationValidator)", configs={"no.such.config": "1"})
_create("broker.create-topics.bad-config-value", "CreateTopics with cleanup.policy=bogus: INVALID_CONFIG",
        configs={"cleanup.policy": "bogus"})
_create("broker.create-topics.good-config", "CreateTopics with a valid retention.ms config: NONE",
        configs={"retention.ms": "60000"})
_create("broker.create-topics.name-empty", "CreateTopics of the empty name: INVALID_TOPIC_EXCEPTION "
        "(Topic.validate)", name="")
_create("broker.create-topics.name-dot", "CreateTopics of the name '.': INVALID_TOPIC_EXCEPTION", name=".")
_create("broker.create-topics.name-dotdot", "CreateTopics of the name '..': INVALID_TOPIC_EXCEPTION",
        name="..")
_create("broker.create-topics.name-slash", "CreateTopics of a name with '/': INVALID_TOPIC_EXCEPTION",
        name="bad/name")
_create("broker.create-topics.name-space", "CreateTopics of a name with a space: INVALID_TOPIC_EXCEPTION",
        name="bad name")
_create("broker.create-topics.name-too-long", "CreateTopics of a 250-character name: INVALID_TOPIC_EXCEPTION "
        "(Topic.MAX_NAME_LENGTH 249)", name="x" * 250)
_create("broker.create-topics.internal-name", "CreateTopics of __consumer_offsets (it exists): "
        "TOPIC_ALREADY_EXISTS", name="__consumer_offsets")
_create("broker.create-topics.manual-assignment", "CreateTopics with a replica assignment on broker 1... "
        "naming a broker that does not exist: INVALID_REPLICA_ASSIGNMENT", partitions=-1, replicas=-1,
        assignments={0: [999]})


@scenario("broker.create-topics.exists", "broker",
          "CreateTopics of a topic that exists: TOPIC_ALREADY_EXISTS (testCreateTopicsAlreadyExists)")
def _exists(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    ctx.call(ctx.connect(), builders.create_topics(5, [(ctx.name("t"), 1, 1)]), view=_without_configs)


@scenario("broker.create-topics.duplicate-in-request", "broker",
          "CreateTopics naming one topic twice in a request: INVALID_REQUEST for it (KafkaApis duplicate "
          "check)")
def _duplicate(ctx: ScenarioContext) -> None:
    ctx.call(ctx.connect(), builders.create_topics(5, [(ctx.name("t"), 1, 1), (ctx.name("t"), 2, 1)]),
             view=_without_configs)


@scenario("broker.create-topics.collision", "broker",
          "CreateTopics of a name that differs from an existing one only by '.' versus '_': "
          "INVALID_TOPIC_EXCEPTION (Topic.hasCollision)")
def _collision(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("a.b"))
    ctx.call(ctx.connect(), builders.create_topics(5, [(ctx.name("a_b"), 1, 1)]), view=_without_configs)


@scenario("broker.metadata.unknown-topic", "broker",
          "Metadata of an unknown topic without auto-creation: UNKNOWN_TOPIC_OR_PARTITION")
def _metadata_unknown(ctx: ScenarioContext) -> None:
    ctx.call(ctx.connect(), builders.metadata(12, [ctx.name("t")]), view=_topic_errors)


@scenario("broker.metadata.invalid-name", "broker",
          "Metadata of an invalid topic name with auto-creation: INVALID_TOPIC_EXCEPTION")
def _metadata_invalid(ctx: ScenarioContext) -> None:
    ctx.call(ctx.connect(), builders.metadata(9, ["bad name!"], auto_create=True), view=_topic_errors)


@scenario("broker.metadata.auto-create", "broker",
          "Metadata v9 of an unknown topic with auto-creation: the topic is created (LEADER_NOT_AVAILABLE or "
          "NONE), with num.partitions partitions once it has a leader")
def _metadata_auto(ctx: ScenarioContext) -> None:
    connection = ctx.connect()
    connection.request(builders.metadata(9, [ctx.name("t")], auto_create=True))
    ctx.wait_until(lambda: _topic_code(connection, ctx.name("t")) == 0, "the auto-created topic")
    ctx.call(connection, builders.metadata(9, [ctx.name("t")]), view=_topic_errors)


@scenario("broker.metadata.internal-topic", "broker",
          "Metadata of __consumer_offsets says is_internal and lists offsets.topic.num.partitions partitions")
def _metadata_internal(ctx: ScenarioContext) -> None:
    ctx.coordinator(ctx.name("g"))
    ctx.call(ctx.connect(), builders.metadata(12, ["__consumer_offsets"]),
             view=lambda v: [[t["name"], t["error_code"], t["is_internal"], len(t["partitions"])]
                             for t in v["topics"]])


def _metadata_version(version: int) -> None:
    @scenario(f"broker.metadata.topic.v{version}", "broker",
              f"Metadata v{version} of a 2-partition topic: partitions, leaders, epochs, replicas, ISR")
    def run(ctx: ScenarioContext) -> None:
        ctx.create_topic(ctx.name("t"), 2)
        ctx.call(ctx.connect(), builders.metadata(version, [ctx.name("t")]),
                 view=lambda v: {"topics": v["topics"]})


for _v in (1, 5, 9, 12):
    _metadata_version(_v)


@scenario("broker.delete-topics.unknown", "broker",
          "DeleteTopics of a topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION")
def _delete_unknown(ctx: ScenarioContext) -> None:
    ctx.call(ctx.connect(), builders.delete_topics(5, ctx.name("t")))


@scenario("broker.delete-topics.then-metadata", "broker",
          "DeleteTopics of a topic: NONE, then Metadata says UNKNOWN_TOPIC_OR_PARTITION (bounded wait)")
def _delete_then(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    connection = ctx.connect()
    ctx.call(connection, builders.delete_topics(5, ctx.name("t")))
    ctx.wait_until(lambda: _topic_code(connection, ctx.name("t")) != 0, "the deleted topic gone")
    ctx.call(connection, builders.metadata(12, [ctx.name("t")]), view=_topic_errors)


def _create_partitions(scenario_id: str, description: str, count: int, validate_only: bool = False,
                       exists: bool = True) -> None:
    @scenario(scenario_id, "broker", description)
    def run(ctx: ScenarioContext) -> None:
        if exists:
            ctx.create_topic(ctx.name("t"), 2)
        connection = ctx.connect()
        ctx.call(connection, builders.create_partitions(3, ctx.name("t"), count, validate_only))
        if exists and count > 2 and not validate_only:
            # Kafka answers once its controller committed the partitions; the broker serving Metadata
            # learns them from the metadata log a moment later (a run saw 2 of 4): a bounded wait.
            ctx.wait_until(lambda: _partition_count(connection, ctx.name("t")) >= count,
                           "the new partitions in Metadata")
        if exists:
            ctx.call(connection, builders.metadata(12, [ctx.name("t")]), "Metadata after", view=_topic_errors)


_create_partitions("broker.create-partitions.grow", "CreatePartitions 2 -> 4: NONE and 4 partitions", 4)
_create_partitions("broker.create-partitions.same", "CreatePartitions 2 -> 2: INVALID_PARTITIONS", 2)
_create_partitions("broker.create-partitions.shrink", "CreatePartitions 2 -> 1: INVALID_PARTITIONS", 1)
_create_partitions("broker.create-partitions.validate-only", "CreatePartitions 2 -> 3 validate_only: NONE "
                                                             "and "
                   "still 2 partitions", 3, validate_only=True)
_create_partitions("broker.create-partitions.unknown-topic", "CreatePartitions of an unknown topic: "
                   "UNKNOWN_TOPIC_OR_PARTITION", 3, exists=False)


def _produce_ok(version: int) -> None:
    @scenario(f"broker.produce.v{version}", "broker",
              f"Produce v{version} of 3 records then 2: base offsets 0 and 3, log start 0 "
              "(KafkaApis.handleProduceRequest)")
    def run(ctx: ScenarioContext) -> None:
        ctx.create_topic(ctx.name("t"))
        connection = ctx.connect()
        ctx.call(connection, builders.produce(version, ctx.name("t"), {0: builders.record_batch(3)}))
        ctx.call(connection, builders.produce(version, ctx.name("t"), {0: builders.record_batch(2, 5_000)}))


for _v in (3, 7, 9, 11):
    _produce_ok(_v)


@scenario("broker.produce.internal-topic", "broker",
          "Produce to __consumer_offsets from a client: INVALID_TOPIC_EXCEPTION (KafkaApis: internal topics)")
def _produce_internal(ctx: ScenarioContext) -> None:
    ctx.coordinator(ctx.name("g"))
    ctx.call(ctx.connect(), builders.produce(9, "__consumer_offsets", {0: builders.record_batch(1)}))


@scenario("broker.produce.unknown-topic", "broker",
          "Produce to a topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION (Produce does not auto-create)")
def _produce_unknown(ctx: ScenarioContext) -> None:
    ctx.call(ctx.connect(), builders.produce(9, ctx.name("t"), {0: builders.record_batch(1)}))


@scenario("broker.produce.unknown-partition", "broker",
          "Produce to partition 5 of a 1-partition topic: UNKNOWN_TOPIC_OR_PARTITION")
def _produce_partition(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    ctx.call(ctx.connect(), builders.produce(9, ctx.name("t"), {5: builders.record_batch(1)}))


@scenario("broker.produce.invalid-acks", "broker",
          "Produce with acks=2: INVALID_REQUIRED_ACKS (KafkaApis.handleProduceRequest)")
def _produce_acks(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    ctx.call(ctx.connect(), builders.produce(9, ctx.name("t"), {0: builders.record_batch(1)}, acks=2))


def _topic_max_message_bytes(scenario_id: str, description: str, limit: int, *value_sizes: int) -> None:
    @scenario(f"broker.produce.topic-max-message-bytes.{scenario_id}", "broker", description)
    def run(ctx: ScenarioContext) -> None:
        ctx.create_topic(ctx.name("t"), configs={"max.message.bytes": str(limit)})
        connection = ctx.connect()
        for size in value_sizes:
            ctx.call(connection, builders.produce(9, ctx.name("t"), {0: builders.one_record_batch(size)}),
                     f"Produce v9 of a {size}-byte value")
        ctx.call(connection, builders.list_offsets(7, ctx.name("t"), {0: -1}), "ListOffsets latest")


_topic_max_message_bytes("below", "A topic created with max.message.bytes=1000: a batch over it is "
                         "MESSAGE_TOO_LARGE, one under it appended (LogValidator via LogConfig."
                         "maxMessageSize; franz-go's TestClient_ProduceLargeMessages)", 1_000, 2_000, 500)
_topic_max_message_bytes("above-broker", "A topic created with max.message.bytes=3000000: a 1.5 MB batch, "
                         "over the broker's message.max.bytes (1048588), is appended (the topic's config "
                         "overrides the broker's; franz-go's TestIssueFetchLargerThanBrokerMaxReadBytes)",
                         3_000_000, 1_500_000)


def _corrupt(batch: bytes, where: str) -> bytes:
    """A kafka-python batch with one thing broken (offsets per Kafka's DefaultRecordBatch layout)."""
    data = bytearray(batch)
    if where == "crc":
        data[-1] ^= 0xFF  # the last record's value: the CRC no longer matches
    elif where == "magic":
        data[16] = 1  # magic 1 in a v2 header
    elif where == "truncated":
        return bytes(data[:-4])
    elif where == "length":
        struct.pack_into(">i", data, 8, len(batch) + 100)  # batch length beyond the data
    elif where == "count":
        struct.pack_into(">i", data, 57, 5)  # record count 5 for 3 records (CRC recomputed below)
        _fix_crc(data)
    return bytes(data)


def _fix_crc(data: bytearray) -> None:
    from kgroup.server.crc32c import crc32c

    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))


def _malformed(where: str, description: str) -> None:
    @scenario(f"broker.produce.malformed-{where}", "broker", description)
    def run(ctx: ScenarioContext) -> None:
        ctx.create_topic(ctx.name("t"))
        connection = ctx.connect()
        broken = _corrupt(builders.record_batch(3), where)
        ctx.call(connection, builders.produce(9, ctx.name("t"), {0: broken}))
        if connection is not None:
            ctx.call(ctx.connect(), builders.list_offsets(7, ctx.name("t"), {0: -1}), "ListOffsets latest")


_malformed("crc", "Produce of a batch whose CRC does not match: CORRUPT_MESSAGE and nothing appended "
           "(LogValidator / DefaultRecordBatch.ensureValid)")
_malformed("magic", "Produce v9 of a batch with magic 1: refused, nothing appended (KafkaApis: produce v3+ "
           "needs magic 2; LogValidatorTest)")
_malformed("truncated", "Produce of a batch cut short by 4 bytes: refused, nothing appended")
_malformed("length", "Produce of a batch whose length field runs past the data: refused, nothing appended")
_malformed("count", "Produce of a batch whose record count (5) exceeds its records (3), CRC valid: "
           "INVALID_RECORD / CORRUPT_MESSAGE, nothing appended (DefaultRecordBatch iteration)")


def _broken(batch: bytes, *faults: str) -> bytes:
    """``batch`` (a kafka-python v2 batch) broken several ways at once, applied in the order given;
    the CRC is left as the first batch had it unless ``fix-crc`` comes last (offsets per
    DefaultRecordBatch's layout)."""
    data = bytearray(batch)
    for fault in faults:
        if fault == "crc":
            data[-1] ^= 0xFF  # the last record's value: the stored CRC no longer matches
        elif fault == "length-past":
            struct.pack_into(">i", data, 8, len(batch) + 100)
        elif fault == "length-short":
            struct.pack_into(">i", data, 8, len(batch) - 12 - 10)  # 10 bytes of records left outside
        elif fault == "length-tiny":
            struct.pack_into(">i", data, 8, 5)  # below ByteBufferLogInputStream's minimum overhead
        elif fault == "count":
            struct.pack_into(">i", data, 57, 5)
        elif fault == "magic-3":
            data[16] = 3  # a magic no Kafka knows (not covered by the CRC)
        elif fault == "base-offset":
            struct.pack_into(">q", data, 0, 5)  # not covered by the CRC
        elif fault.startswith("codec-"):
            (attributes,) = struct.unpack_from(">h", data, 21)
            struct.pack_into(">h", data, 21, (attributes & ~0x07) | int(fault[len("codec-"):]))
        elif fault == "fix-crc":
            _fix_crc(data)
        else:
            raise ValueError(fault)
    return bytes(data)


def _produce_then_look(ctx: ScenarioContext, records: bytes, version: int = 9, fetch: bool = False) -> None:
    """Produce ``records`` to partition 0 of a new topic; then what the log holds (ListOffsets latest,
    and with ``fetch`` a Fetch from 0)."""
    ctx.create_topic(ctx.name("t"))
    connection = ctx.connect()
    ctx.call(connection, builders.produce(version, ctx.name("t"), {0: records}), f"Produce v{version}")
    reader = ctx.connect()
    ctx.call(reader, builders.list_offsets(7, ctx.name("t"), {0: -1}), "ListOffsets latest")
    if fetch:
        ctx.call(reader, builders.fetch(12, ctx.name("t"), {0: 0}), "Fetch from 0", view=_fetch_view)


def _several(scenario_id: str, description: str, *batches: Any) -> None:
    @scenario(f"broker.produce.batches.{scenario_id}", "broker", description)
    def run(ctx: ScenarioContext) -> None:
        _produce_then_look(ctx, b"".join(make() for make in batches), fetch=True)


_several("three-valid", "Produce v9 of three valid batches for one partition: INVALID_RECORD and nothing "
         "appended (ProduceRequest.validateRecords: exactly one batch per partition from v3)",
         lambda: builders.record_batch(1, 1_000), lambda: builders.record_batch(1, 2_000),
         lambda: builders.record_batch(1, 3_000))
_several("second-crc", "Produce v9 of three batches, the second with a bad CRC: which error Kafka answers "
         "and that nothing of the partition is appended (validateRecords before ensureValid)",
         lambda: builders.record_batch(1, 1_000), lambda: _broken(builders.record_batch(1, 2_000), "crc"),
         lambda: builders.record_batch(1, 3_000))
_several("first-crc", "Produce v9 of two batches, the first with a bad CRC: validateRecords refuses the "
         "second batch before any CRC is read", lambda: _broken(builders.record_batch(1, 1_000), "crc"),
         lambda: builders.record_batch(1, 2_000))
_several("second-length-tiny", "Produce v9 of a valid batch followed by one whose length is 5: "
         "ByteBufferLogInputStream.nextBatchSize on the second (validateRecords' hasNext)",
         lambda: builders.record_batch(1, 1_000),
         lambda: _broken(builders.record_batch(1, 2_000), "length-tiny"))
_several("magic1-after-v2", "Produce v9 of a valid v2 batch then a magic 1 message set: which error Kafka "
         "answers, nothing appended (validateRecords reads only the first batch's magic)",
         lambda: builders.record_batch(1, 1_000), lambda: builders.legacy_batch(1, 2_000))


def _broken_produce(scenario_id: str, description: str, *faults: str, version: int = 9,
                    fetch: bool = False) -> None:
    @scenario(f"broker.produce.{scenario_id}", "broker", description)
    def run(ctx: ScenarioContext) -> None:
        _produce_then_look(ctx, _broken(builders.record_batch(3), *faults), version, fetch)


_broken_produce("base-offset-nonzero", "Produce v9 of a valid batch whose base offset is 5: refused "
                "INVALID_RECORD or rewritten? (UnifiedLog.analyzeAndValidateRecords: a client's v2 batch "
                "must start at 0)", "base-offset", fetch=True)
_broken_produce("malformed-crc-and-length-past", "A bad CRC and a length past the data: the order of "
                "checks (validateRecords finds no whole batch before any CRC is read)", "crc", "length-past")
_broken_produce("malformed-crc-and-length-short", "A bad CRC and a length 10 bytes short of the data "
                "(ByteBufferLogInputStream sizes, then DefaultRecordBatch.isValid)", "crc", "length-short")
_broken_produce("malformed-crc-and-length-tiny", "A bad CRC and a length of 5, below the minimum overhead "
                "(ByteBufferLogInputStream.nextBatchSize)", "crc", "length-tiny")
_broken_produce("malformed-crc-and-count", "A bad CRC and a record count (5) that disagrees with the last "
                "offset delta: the CRC (analyzeAndValidateRecords) or the count (LogValidator) first?",
                "count", "crc")
_broken_produce("malformed-crc-and-base-offset", "A bad CRC and base offset 5: the base offset check or "
                "the CRC first? (analyzeAndValidateRecords)", "base-offset", "crc")
_broken_produce("malformed-magic-3", "Produce v9 of a batch with magic 3: "
                "ByteBufferLogInputStream.nextBatchSize knows no magic above 2", "magic-3")
_broken_produce("malformed-magic-3-and-length-past", "Magic 3 and a length past the data: the magic is read "
                "before the length is compared with the data (nextBatchSize)", "magic-3", "length-past")
for _codec in (5, 6, 7):
    _broken_produce(f"unknown-codec-{_codec}", f"Produce v9 of a batch whose attributes name compression "
                    f"codec {_codec}, CRC valid: Kafka's answer (CompressionType.forId has no codec "
                    f"{_codec})", f"codec-{_codec}", "fix-crc")
_broken_produce("unknown-codec-5.v3", "Produce v3 of a batch naming compression codec 5, CRC valid "
                "(ProduceRequest.validateRecords reads the codec below v7 for its zstd check)", "codec-5",
                "fix-crc", version=3)
_broken_produce("unknown-codec-5-and-crc", "A batch naming compression codec 5 with a bad CRC: the CRC or "
                "the codec first?", "codec-5")


def _produced(ctx: ScenarioContext, partitions: int = 1) -> None:
    ctx.create_topic(ctx.name("t"), partitions)
    connection = ctx.connect()
    connection.request(builders.produce(9, ctx.name("t"), {0: builders.record_batch(3, 1_000)}))
    connection.request(builders.produce(9, ctx.name("t"), {0: builders.record_batch(2, 500)}))


def _list_offsets(version: int) -> None:
    @scenario(f"broker.list-offsets.v{version}", "broker",
              f"ListOffsets v{version}: latest (-1), earliest (-2) and by timestamp after producing 5 "
              "records "
              "with timestamps 1000-1002 then 500-501 (UnifiedLog.fetchOffsetByTimestamp)")
    def run(ctx: ScenarioContext) -> None:
        _produced(ctx)
        connection = ctx.connect()
        for label, timestamp in (("latest", -1), ("earliest", -2), ("ts 1001", 1001), ("ts 500", 500),
                                 ("ts 9999", 9999)):
            ctx.call(connection, builders.list_offsets(version, ctx.name("t"), {0: timestamp}),
                     f"ListOffsets v{version} {label}")


for _v in (1, 2, 4, 6, 7):
    _list_offsets(_v)


@scenario("broker.list-offsets.max-timestamp", "broker",
          "ListOffsets v7 with MAX_TIMESTAMP (-3): the offset of the record with the largest timestamp "
          "(KIP-734)")
def _max_timestamp(ctx: ScenarioContext) -> None:
    _produced(ctx)
    ctx.call(ctx.connect(), builders.list_offsets(7, ctx.name("t"), {0: -3}))


@scenario("broker.list-offsets.empty-log", "broker",
          "ListOffsets of an empty partition: latest 0, earliest 0, by timestamp -1, max timestamp -1")
def _empty_log(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    connection = ctx.connect()
    for label, timestamp in (("latest", -1), ("earliest", -2), ("ts 1", 1), ("max", -3)):
        ctx.call(connection, builders.list_offsets(7, ctx.name("t"), {0: timestamp}), f"ListOffsets {label}")


@scenario("broker.list-offsets.unknown-partition", "broker",
          "ListOffsets of a partition a topic lacks and of an unknown topic: UNKNOWN_TOPIC_OR_PARTITION")
def _lo_unknown(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    connection = ctx.connect()
    ctx.call(connection, builders.list_offsets(7, ctx.name("t"), {3: -1}))
    ctx.call(connection, builders.list_offsets(7, ctx.name("missing"), {0: -1}), "ListOffsets unknown topic")


@scenario("broker.list-offsets.read-committed", "broker",
          "ListOffsets v7 latest with isolation READ_COMMITTED equals the high watermark without "
          "transactions")
def _lo_committed(ctx: ScenarioContext) -> None:
    _produced(ctx)
    ctx.call(ctx.connect(), builders.list_offsets(7, ctx.name("t"), {0: -1}, isolation_level=1))


def _fetch(version: int) -> None:
    @scenario(f"broker.fetch.v{version}", "broker",
              f"Fetch v{version} from offset 0 after producing 5 records: the high watermark and every "
              "record")
    def run(ctx: ScenarioContext) -> None:
        _produced(ctx)
        ctx.call(ctx.connect(), builders.fetch(version, ctx.name("t"), {0: 0}), view=_fetch_view)


def _fetch_view(value: Any) -> Any:
    return [[t["topic"], [[p["partition_index"], p["error_code"], p["high_watermark"], p["records"]]
                          for p in t["partitions"]]] for t in value["responses"]] + [value.get("error_code")]


for _v in (4, 7, 11, 12):
    _fetch(_v)


@scenario("broker.fetch.out-of-range", "broker",
          "Fetch from offset 100 of a 5-record log: OFFSET_OUT_OF_RANGE")
def _fetch_range(ctx: ScenarioContext) -> None:
    _produced(ctx)
    ctx.call(ctx.connect(), builders.fetch(12, ctx.name("t"), {0: 100}), view=_fetch_view)


@scenario("broker.fetch.unknown-topic", "broker",
          "Fetch v12 from a topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION")
def _fetch_unknown(ctx: ScenarioContext) -> None:
    ctx.call(ctx.connect(), builders.fetch(12, ctx.name("t"), {0: 0}), view=_fetch_view)


@scenario("broker.fetch.at-end", "broker",
          "Fetch at the log end offset with max_wait 100 ms: no records, NONE")
def _fetch_end(ctx: ScenarioContext) -> None:
    _produced(ctx)
    ctx.call(ctx.connect(), builders.fetch(12, ctx.name("t"), {0: 5}, max_wait_ms=100), view=_fetch_view)


def _find_coordinator(version: int) -> None:
    @scenario(f"broker.find-coordinator.v{version}", "broker",
              f"FindCoordinator v{version} for a group: NONE and a node "
              "(KafkaApis.handleFindCoordinatorRequest)")
    def run(ctx: ScenarioContext) -> None:
        ctx.coordinator(ctx.name("g"))
        ctx.call(ctx.connect(), builders.find_coordinator(version, ctx.name("g")))


for _v in range(0, 5):
    _find_coordinator(_v)


@scenario("broker.find-coordinator.invalid-key-type", "broker",
          "FindCoordinator v3 with key type 7: INVALID_REQUEST")
def _find_bad_type(ctx: ScenarioContext) -> None:
    ctx.call(ctx.connect(), builders.find_coordinator(3, ctx.name("g"), key_type=7))


@scenario("broker.find-coordinator.empty-group", "broker",
          "FindCoordinator v3 for the empty group id: INVALID_REQUEST")
def _find_empty(ctx: ScenarioContext) -> None:
    ctx.call(ctx.connect(), builders.find_coordinator(3, ""))


def _wait_producer_ids(ctx: ScenarioContext, connection: Any) -> Any:
    """InitProducerId until the broker hands out ids (Kafka answers COORDINATOR_LOAD_IN_PROGRESS or
    NOT_COORDINATOR while its producer-id block is on the way); not recorded."""
    answers = []

    def ready() -> bool:
        answers.append(connection.request(builders.init_producer_id(4)))
        return answers[-1].error_code not in (14, 15, 16)
    ctx.wait_until(ready, "producer ids", every_s=0.1)
    return answers[-1]


def _init_producer(version: int) -> None:
    @scenario(f"broker.init-producer-id.v{version}", "broker",
              f"InitProducerId v{version} without a transactional id: NONE, a producer id, epoch 0 (KIP-98 "
              "idempotence)")
    def run(ctx: ScenarioContext) -> None:
        connection = ctx.connect()
        _wait_producer_ids(ctx, connection)
        ctx.call(connection, builders.init_producer_id(version))


for _v in (0, 2, 4):
    _init_producer(_v)


@scenario("broker.produce.idempotent-duplicate", "broker",
          "An idempotent batch sent twice: the second answer repeats the first's base offset, nothing is "
          "appended twice (ProducerStateManager duplicate detection)")
def _idempotent(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    connection = ctx.connect()
    pid = _wait_producer_ids(ctx, connection)
    batch = builders.record_batch(2, producer_id=pid.producer_id, producer_epoch=pid.producer_epoch,
                                  base_sequence=0)
    ctx.call(connection, builders.produce(9, ctx.name("t"), {0: batch}))
    ctx.call(connection, builders.produce(9, ctx.name("t"), {0: batch}), "Produce v9 again")
    ctx.call(connection, builders.list_offsets(7, ctx.name("t"), {0: -1}))


@scenario("broker.produce.out-of-order-sequence", "broker",
          "An idempotent batch with sequence 5 for a new producer: OUT_OF_ORDER_SEQUENCE_NUMBER")
def _sequence_gap(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"))
    connection = ctx.connect()
    pid = _wait_producer_ids(ctx, connection)
    producer = dict(producer_id=pid.producer_id, producer_epoch=pid.producer_epoch)
    ok = builders.record_batch(1, base_sequence=0, **producer)
    gap = builders.record_batch(1, base_sequence=5, **producer)
    ctx.call(connection, builders.produce(9, ctx.name("t"), {0: ok}))
    ctx.call(connection, builders.produce(9, ctx.name("t"), {0: gap}), "Produce v9 gap")


@scenario("broker.produce.unknown-codec-5.v3-two-partitions", "broker",
          "Produce v3 to two partitions, the second's batch naming compression codec 5: the codec is read by "
          "ProduceRequest.validateRecords (zstd check below v7), whose IllegalArgumentException fails the "
          "whole request (KafkaApis' handleError: UNKNOWN_SERVER_ERROR for every partition)")
def _codec_v3_two_partitions(ctx: ScenarioContext) -> None:
    ctx.create_topic(ctx.name("t"), 2)
    ctx.call(ctx.connect(), builders.produce(3, ctx.name("t"), {
        0: builders.record_batch(1), 1: _broken(builders.record_batch(1), "codec-5", "fix-crc")}),
        "Produce v3")
    ctx.call(ctx.connect(), builders.list_offsets(7, ctx.name("t"), {0: -1, 1: -1}), "ListOffsets latest")
