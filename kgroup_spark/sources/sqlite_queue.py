"""A SQLite file of partitioned queues whose records are acknowledged once consumed.

Each record keeps an acknowledgement count, so reading a record twice is
harmless but acknowledging it twice is visible (``acks > 1``): the source
where exclusive ownership matters.  ``acked`` keeps, per partition, the
offset up to which records were acknowledged, written in the same
transaction as the acknowledgements.
"""

from __future__ import annotations

import sqlite3
from typing import Iterable, Iterator, Mapping, Optional

from kgroup_spark.errors import SourceOptionError
from kgroup_spark.source import PartitionedSource

_SCHEMA = """
CREATE TABLE IF NOT EXISTS partitions (partition INTEGER PRIMARY KEY, acked_upto INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS records (
    partition INTEGER NOT NULL, offset INTEGER NOT NULL, value TEXT NOT NULL,
    acks INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (partition, offset));
"""


def _connect(path: str) -> sqlite3.Connection:
    connection = sqlite3.connect(path, timeout=30.0, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    return connection


class SqliteQueue:
    """Producer and inspector side of the queue file (tests and applications that feed it)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def create(self, partitions: int) -> "SqliteQueue":
        with _connect(self.path) as connection:
            connection.executescript(_SCHEMA)
            connection.executemany(
                "INSERT OR IGNORE INTO partitions (partition) VALUES (?)", [(p,) for p in range(partitions)]
            )
        return self

    def append(self, partition: int, values: Iterable[str]) -> list[int]:
        """Append values to a partition; returns their offsets."""
        return self.append_all({partition: values})[partition]

    def append_all(self, values_by_partition: Mapping[int, Iterable[str]]) -> dict[int, list[int]]:
        """Append to several partitions in one transaction (a reader sees all or none); their offsets."""
        connection = _connect(self.path)
        try:
            connection.execute("BEGIN IMMEDIATE")
            offsets: dict[int, list[int]] = {}
            for partition, values in values_by_partition.items():
                (next_offset,) = connection.execute(
                    "SELECT COALESCE(MAX(offset) + 1, 0) FROM records WHERE partition = ?", (partition,)
                ).fetchone()
                rows = [(partition, next_offset + i, value) for i, value in enumerate(values)]
                connection.executemany(
                    "INSERT INTO records (partition, offset, value) VALUES (?, ?, ?)", rows
                )
                offsets[partition] = [row[1] for row in rows]
            connection.execute("COMMIT")
            return offsets
        finally:
            connection.close()

    def ack_counts(self) -> dict[tuple[int, int], int]:
        """``{(partition, offset): acknowledgements}`` for every record."""
        connection = _connect(self.path)
        try:
            return {
                (p, o): acks
                for p, o, acks in connection.execute("SELECT partition, offset, acks FROM records")
            }
        finally:
            connection.close()


class SqliteQueueSource(PartitionedSource):
    """Options: ``sqlite.path`` (the file, made by :meth:`SqliteQueue.create`)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        super().__init__(options)
        path = self.options.get("sqlite.path")
        if not path:
            raise SourceOptionError("SqliteQueueSource needs option 'sqlite.path'")
        self.path = path
        self._connection: Optional[sqlite3.Connection] = None

    def __getstate__(self) -> dict:
        return {"options": self.options, "path": self.path, "_connection": None}

    @property
    def name(self) -> str:
        return "sqlite-queue"

    def schema(self) -> str:
        return "value string"

    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            self._connection = _connect(self.path)
        return self._connection

    def partition_count(self) -> int:
        try:
            (count,) = self._db().execute("SELECT COUNT(*) FROM partitions").fetchone()
        except sqlite3.DatabaseError as error:
            raise SourceOptionError(
                f"SqliteQueueSource: {self.path!r} is not a queue file: {error}"
            ) from None
        return int(count)

    def latest_offsets(self) -> dict[int, int]:
        rows = (
            self._db()
            .execute(
                "SELECT p.partition, COALESCE(MAX(r.offset) + 1, 0) FROM partitions p "
                "LEFT JOIN records r ON r.partition = p.partition GROUP BY p.partition"
            )
            .fetchall()
        )
        return {int(p): int(end) for p, end in rows}

    def read(self, partition: int, start_offset: int, end_offset: int) -> Iterator[tuple]:
        rows = (
            self._db()
            .execute(
                "SELECT offset, value FROM records "
                "WHERE partition = ? AND offset >= ? AND offset < ? ORDER BY offset",
                (partition, start_offset, end_offset),
            )
            .fetchall()
        )
        for offset, value in rows:
            yield offset, (value,)

    def acknowledge(self, partition: int, start_offset: int, end_offset: int) -> None:
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(
                "UPDATE records SET acks = acks + 1 WHERE partition = ? AND offset >= ? AND offset < ?",
                (partition, start_offset, end_offset),
            )
            db.execute(
                "UPDATE partitions SET acked_upto = MAX(acked_upto, ?) WHERE partition = ?",
                (end_offset, partition),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def acknowledged_offsets(self) -> dict[int, int]:
        return {
            int(p): int(upto)
            for p, upto in self._db().execute("SELECT partition, acked_upto FROM partitions")
        }

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
