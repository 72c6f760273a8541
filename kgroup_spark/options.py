"""The ``kgroup`` data source's options, parsed and checked once.

Spark hands options as strings; every one is validated here so a bad query
fails when it is defined (``.load()``), naming the option.
"""

from __future__ import annotations

from typing import Mapping, Optional

import attrs

from kgroup_spark.errors import SourceOptionError

#: Short names for the shipped sources.
SOURCE_ALIASES = {
    "kafka": "kgroup_spark.sources.kafka_topic:KafkaTopicSource",
    "sqlite": "kgroup_spark.sources.sqlite_queue:SqliteQueueSource",
}
STARTING_OFFSETS = ("committed", "earliest", "latest")

_INT_OPTIONS = {
    "readers": ("readers", 1),
    "session.timeout.ms": ("session_timeout_ms", 1),
    "heartbeat.interval.ms": ("heartbeat_interval_ms", 1),
    "max.poll.interval.ms": ("max_poll_interval_ms", 1),
    "batch.timeout.ms": ("batch_timeout_ms", 1),
    "connect.timeout.ms": ("connect_timeout_ms", 1),
}
_OWN_OPTIONS = set(_INT_OPTIONS) | {
    "source",
    "bootstrap.servers",
    "group.id",
    "assignor",
    "static",
    "startingOffsets",
}
#: Options for the source itself are passed through by prefix.
SOURCE_OPTION_PREFIXES = ("kafka.", "sqlite.", "source.")


@attrs.frozen
class ReaderOptions:
    source_class: str
    bootstrap_servers: str
    group_id: Optional[str]
    readers: int = 2
    assignor: str = "cooperative-sticky"
    static: bool = True
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 1_000
    max_poll_interval_ms: int = 300_000
    batch_timeout_ms: int = 120_000
    connect_timeout_ms: int = 10_000
    starting_offsets: str = "committed"
    #: Every option as given; the source reads its own from here.
    raw: tuple[tuple[str, str], ...] = ()

    @property
    def source_options(self) -> dict[str, str]:
        return dict(self.raw)

    def group_for(self, source_name: str) -> str:
        return self.group_id or f"kgroup-spark-{source_name}"

    def instance_id(self, group_id: str, slot: int) -> Optional[str]:
        return f"{group_id}-reader-{slot}" if self.static else None


#: Spark hands a Python data source its options with lower-cased keys (its CaseInsensitiveMap), so
#: keys are matched case-insensitively, as Spark's own sources do: ``startingOffsets`` arrives as
#: ``startingoffsets``.  The lower-case spelling is the canonical one here.
_CANONICAL_KEYS = {key.lower(): key for key in _OWN_OPTIONS}


def parse_options(options: Mapping[str, str]) -> ReaderOptions:
    given: dict[str, str] = {}
    for raw_key, value in dict(options).items():
        key = str(raw_key)
        if key.lower() == "path":
            continue
        canonical = _CANONICAL_KEYS.get(key.lower(), key.lower())
        if canonical in given:
            raise SourceOptionError(f"option {key!r} is given twice (option keys are case-insensitive)")
        given[canonical] = str(value)
    unknown = sorted(k for k in given if k not in _OWN_OPTIONS and not k.startswith(SOURCE_OPTION_PREFIXES))
    if unknown:
        raise SourceOptionError(
            f"unknown kgroup option(s) {unknown}; known: {sorted(_OWN_OPTIONS)} and "
            f"source options starting with {SOURCE_OPTION_PREFIXES}"
        )
    source = given.get("source")
    if not source:
        raise SourceOptionError(
            "option 'source' is required: 'kafka', 'sqlite' or 'module:Class' of a "
            "kgroup_spark.PartitionedSource"
        )
    bootstrap = given.get("bootstrap.servers")
    if not bootstrap:
        raise SourceOptionError(
            "option 'bootstrap.servers' is required: the coordinator's cluster (an external "
            "Kafka, or kgroup_spark.GroupHost().start().bootstrap_servers on the driver)"
        )
    values: dict = {}
    for key, (field, minimum) in _INT_OPTIONS.items():
        if key in given:
            try:
                values[field] = int(given[key])
            except ValueError:
                raise SourceOptionError(f"option {key!r} must be an integer, got {given[key]!r}") from None
            if values[field] < minimum:
                raise SourceOptionError(f"option {key!r} must be >= {minimum}, got {values[field]}")
    if "static" in given:
        if given["static"].lower() not in ("true", "false"):
            raise SourceOptionError(f"option 'static' must be true or false, got {given['static']!r}")
        values["static"] = given["static"].lower() == "true"
    if "startingOffsets" in given:
        if given["startingOffsets"] not in STARTING_OFFSETS:
            raise SourceOptionError(
                f"option 'startingOffsets' must be one of {STARTING_OFFSETS}, "
                f"got {given['startingOffsets']!r}"
            )
        values["starting_offsets"] = given["startingOffsets"]
    if "assignor" in given:
        from kgroup.assignors import known_assignors

        if given["assignor"] not in known_assignors():
            raise SourceOptionError(
                f"option 'assignor': unknown assignor {given['assignor']!r}; "
                f"known: {sorted(known_assignors())}"
            )
        values["assignor"] = given["assignor"]
    return ReaderOptions(
        source_class=SOURCE_ALIASES.get(source, source),
        bootstrap_servers=bootstrap,
        group_id=given.get("group.id") or None,
        raw=tuple(sorted(given.items())),
        **values,
    )
