"""Topic configs a CreateTopics request may set, checked as Kafka checks them.

Kafka's controller validates a new topic's configs before it creates anything
(``ReplicationControlManager.createTopics`` -> ``ControllerConfigurationValidator`` ->
``LogConfig.validate``): a null value, a name ``LogConfig`` does not define, a value that does
not parse as the config's type (``ConfigDef.parseType``) or that its validator refuses answers
INVALID_CONFIG (40) for that topic, and the topic is not created.  The names, types and
validators below are ``LogConfig``'s topic configs (``TopicConfig`` names).

kgroup refuses what Kafka refuses, so a client sees the same answer.  Of the configs it accepts,
only ``max.message.bytes`` changes what kgroup does (``TopicAdmin.max_message_bytes``: the largest
batch Produce appends); retention, compaction and the rest do not apply to its logs.
"""
from __future__ import annotations

import math
import re
from typing import Callable, Dict, Iterable, List, Optional, Tuple

__all__ = ["TOPIC_CONFIGS", "topic_config_error"]

_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_INT_RANGE = (-2**31, 2**31 - 1)
_LONG_RANGE = (-2**63, 2**63 - 1)
_THROTTLED_REPLICA = re.compile(r"([0-9]+:[0-9]+)?", re.ASCII)
_METADATA_VERSION = re.compile(r"[0-9]+\.[0-9]+(\.[0-9]+)?(-IV[0-9]+)?", re.ASCII)


class _Invalid(ValueError):
    """A value the config refuses; the message is Kafka's ConfigException message."""


def _integer(kind: str, bounds: Tuple[int, int]) -> Callable[[str], int]:
    def parse(text: str) -> int:
        # Java's Integer.parseInt / Long.parseLong: an optional sign and digits, in range.
        if not _INTEGER.fullmatch(text) or not bounds[0] <= int(text) <= bounds[1]:
            raise _Invalid(f"Not a number of type {kind}")
        return int(text)
    return parse


def _double(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise _Invalid("Not a number of type DOUBLE") from None


def _boolean(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise _Invalid("Expected value to be either true or false")
    return text.lower() == "true"


def _string(text: str) -> str:
    return text


def _list(text: str) -> List[str]:
    return [] if not text else re.split(r"\s*,\s*", text)


def _at_least(low: float) -> Callable[[object], None]:
    def check(value: object) -> None:
        if isinstance(value, (int, float)) and value < low:
            raise _Invalid(f"Value must be at least {low}")
    return check


def _between(low: float, high: float) -> Callable[[object], None]:
    def check(value: object) -> None:
        # Java's Range: NaN compares false both ways, so it passes.
        if isinstance(value, (int, float)) and not math.isnan(value) and not low <= value <= high:
            raise _Invalid(f"Value must be no less than {low} and no greater than {high}")
    return check


def _one_of(*allowed: str) -> Callable[[object], None]:
    def check(value: object) -> None:
        if value not in allowed:
            raise _Invalid(f"String must be one of: {', '.join(allowed)}")
    return check


def _each_of(*allowed: str) -> Callable[[object], None]:
    def check(value: object) -> None:
        assert isinstance(value, list)
        for item in value:
            if item not in allowed:
                raise _Invalid(f"Invalid value {item} for configuration: String must be one of: "
                               f"{', '.join(allowed)}")
    return check


def _gzip_level(value: object) -> None:
    # GzipCompression's validator: Deflater's 1..9, or -1 (its default).
    if isinstance(value, int) and (value > 9 or (value < 1 and value != -1)):
        raise _Invalid("Value must be between 1 and 9 or equal to -1")


def _throttled_replicas(value: object) -> None:
    # ThrottledReplicaListValidator: "*" or "partition:broker" pairs.
    assert isinstance(value, list)
    if ",".join(value).strip() == "*" or all(_THROTTLED_REPLICA.fullmatch(v.strip()) for v in value):
        return
    raise _Invalid("must be the literal '*' or a list of replicas in the following format: "
                   "[partitionId]:[brokerId],[partitionId]:[brokerId],...")


def _metadata_version(value: object) -> None:
    # MetadataVersionValidator (3.x): a release such as "2.8" or "3.0-IV1"; kgroup checks the shape only.
    if not isinstance(value, str) or not _METADATA_VERSION.fullmatch(value):
        raise _Invalid(f"Version `{value}` is not a valid version")


def _no_tiered_storage(value: object) -> None:
    # LogConfig.validateRemoteStorageOnlyIfSystemEnabled: kgroup's brokers have no remote storage.
    if value is True:
        raise _Invalid("Tiered Storage functionality is disabled in the broker. "
                       "Topic cannot be configured with remote log storage.")


_INT = _integer("INT", _INT_RANGE)
_LONG = _integer("LONG", _LONG_RANGE)
_Config = Tuple[Callable[[str], object], Optional[Callable[[object], None]]]

#: LogConfig's topic configs: name -> (parser, validator).  Kafka 4 no longer acts on the three
#: message-format configs of 3.x (message.format.version, message.downconversion.enable,
#: message.timestamp.difference.max.ms); they are accepted here so an older client's request
#: is not refused for them.
TOPIC_CONFIGS: Dict[str, _Config] = {
    "cleanup.policy": (_list, _each_of("compact", "delete")),
    "compression.gzip.level": (_INT, _gzip_level),
    "compression.lz4.level": (_INT, _between(1, 17)),
    "compression.type": (_string, _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    "compression.zstd.level": (_INT, _between(-131072, 22)),
    "delete.retention.ms": (_LONG, _at_least(0)),
    "file.delete.delay.ms": (_LONG, _at_least(0)),
    "flush.messages": (_LONG, _at_least(1)),
    "flush.ms": (_LONG, _at_least(0)),
    "follower.replication.throttled.replicas": (_list, _throttled_replicas),
    "index.interval.bytes": (_INT, _at_least(0)),
    "leader.replication.throttled.replicas": (_list, _throttled_replicas),
    "local.retention.bytes": (_LONG, _at_least(-2)),
    "local.retention.ms": (_LONG, _at_least(-2)),
    "max.compaction.lag.ms": (_LONG, _at_least(1)),
    "max.message.bytes": (_INT, _at_least(0)),
    "message.downconversion.enable": (_boolean, None),
    "message.format.version": (_string, _metadata_version),
    "message.timestamp.after.max.ms": (_LONG, _at_least(0)),
    "message.timestamp.before.max.ms": (_LONG, _at_least(0)),
    "message.timestamp.difference.max.ms": (_LONG, _at_least(0)),
    "message.timestamp.type": (_string, _one_of("CreateTime", "LogAppendTime")),
    "min.cleanable.dirty.ratio": (_double, _between(0, 1)),
    "min.compaction.lag.ms": (_LONG, _at_least(0)),
    "min.insync.replicas": (_INT, _at_least(1)),
    "preallocate": (_boolean, None),
    "remote.log.copy.disable": (_boolean, None),
    "remote.log.delete.on.disable": (_boolean, None),
    "remote.storage.enable": (_boolean, _no_tiered_storage),
    "retention.bytes": (_LONG, None),
    "retention.ms": (_LONG, _at_least(-1)),
    # LegacyRecord.RECORD_OVERHEAD_V0 = 14
    "segment.bytes": (_INT, _at_least(14)),
    "segment.index.bytes": (_INT, _at_least(4)),
    "segment.jitter.ms": (_LONG, _at_least(0)),
    "segment.ms": (_LONG, _at_least(1)),
    "unclean.leader.election.enable": (_boolean, None),
}


def topic_config_error(configs: Iterable[Tuple[str, Optional[str]]]) -> Optional[str]:
    """Why Kafka would refuse these (name, value) configs with INVALID_CONFIG, or None if it would not."""
    configs = list(configs)
    null_names = [name for name, value in configs if value is None]
    if null_names:
        return "Null value not supported for topic configs: " + ",".join(null_names)
    parsed: Dict[str, object] = {}
    for name, value in configs:
        assert value is not None
        known = TOPIC_CONFIGS.get(name)
        if known is None:
            return f"Unknown topic config name: {name}"
        parse, validate = known
        try:
            # ConfigDef.parseType trims a string value before parsing it.
            parsed[name] = parse(value.strip())
            if validate is not None:
                validate(parsed[name])
        except _Invalid as invalid:
            return f"Invalid value {value} for configuration {name}: {invalid}"
    low, high = parsed.get("min.compaction.lag.ms", 0), parsed.get("max.compaction.lag.ms", 2**63 - 1)
    if isinstance(low, int) and isinstance(high, int) and low > high:
        # LogConfig.validateValues.
        return (f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                f"max.compaction.lag.ms ({high})")
    return None
