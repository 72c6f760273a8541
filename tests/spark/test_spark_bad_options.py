"""Bad options fail when the query is defined, with the reason, not after a hang (issue 12)."""

from __future__ import annotations

import time

import pytest

from kgroup_spark.sources import SqliteQueue


def _load(spark, **options: str):
    reader = spark.readStream.format("kgroup")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


@pytest.mark.parametrize(
    "options, message",
    [
        ({"source": "no_such_module:Source"}, "cannot import module 'no_such_module'"),
        ({"source": "kgroup_spark.options:ReaderOptions"}, "is not a kgroup_spark.PartitionedSource"),
        ({"source": "sqlite", "readers": "zero"}, "option 'readers' must be an integer"),
        ({"source": "sqlite", "assignor": "nope"}, "unknown assignor 'nope'"),
        ({"source": "sqlite", "sqlite.path": "x", "typo.option": "1"}, "unknown kgroup option"),
        ({"bootstrap.servers": "127.0.0.1:9"}, "option 'source' is required"),
    ],
)
def test_bad_option_is_named_at_load(spark, group_host, options, message):
    options.setdefault("bootstrap.servers", group_host.bootstrap_servers)
    with pytest.raises(Exception, match=message):
        _load(spark, **options)


def test_source_without_partitions_fails_at_load(spark, group_host, tmp_path):
    empty = SqliteQueue(str(tmp_path / "empty.db")).create(0)
    with pytest.raises(Exception, match="has no partitions"):
        _load(
            spark,
            source="sqlite",
            **{"sqlite.path": empty.path, "bootstrap.servers": group_host.bootstrap_servers},
        )


def test_unreachable_coordinator_fails_at_load_within_the_connect_timeout(spark, queue):
    started = time.monotonic()
    with pytest.raises(Exception, match="no coordinator answered at bootstrap.servers='127.0.0.1:9'"):
        _load(
            spark,
            source="sqlite",
            **{"sqlite.path": queue.path, "bootstrap.servers": "127.0.0.1:9", "connect.timeout.ms": "2000"},
        )
    assert time.monotonic() - started < 30
