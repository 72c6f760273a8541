"""What a user implements to read a partitioned source through kgroup_spark.

A source is a fixed number of partitions, each an append-only sequence of
records addressed by a dense offset (0, 1, 2...; Kafka-like).  kgroup_spark
plans offset ranges on the driver, reads them on executors while the reading
task owns the partition through the consumer group, and acknowledges ranges
back to the source only once the group has accepted the owner's commit.

Sources are built from the query's options (strings) with
``SourceClass(options)``: keep ``__init__`` cheap and free of I/O, since Spark
builds readers several times on the driver and pickles them to executors.
"""

from __future__ import annotations

import abc
import importlib
from typing import Iterable, Iterator, Mapping, Optional

from kgroup_spark.errors import SourceOptionError


class PartitionedSource(abc.ABC):
    """A partitioned, offset-addressed source of rows."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.options = dict(options)

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """A stable name; it is the topic the consumer group subscribes to."""

    @abc.abstractmethod
    def schema(self) -> str:
        """The rows' columns as a Spark DDL string (``"value string, n int"``)."""

    @abc.abstractmethod
    def partition_count(self) -> int:
        """How many partitions (numbered 0..n-1) the source has now."""

    @abc.abstractmethod
    def latest_offsets(self) -> dict[int, int]:
        """Per partition, the offset the next appended record will get."""

    def earliest_offsets(self) -> dict[int, int]:
        """Per partition, the first offset still readable (default 0)."""
        return {partition: 0 for partition in range(self.partition_count())}

    @abc.abstractmethod
    def read(self, partition: int, start_offset: int, end_offset: int) -> Iterator[tuple]:
        """Yield ``(offset, row)`` for every record in ``[start_offset, end_offset)``, in order.

        ``row`` is a tuple matching :meth:`schema`.  Reading must not change the
        source: acknowledging is :meth:`acknowledge`'s job.
        """

    def acknowledge(self, partition: int, start_offset: int, end_offset: int) -> None:
        """Acknowledge ``[start_offset, end_offset)`` of ``partition`` (default: nothing to do).

        kgroup_spark calls this once per record range, in order, after the
        group accepted a commit covering it, and never for a refused commit.
        """

    def acknowledged_offsets(self) -> Optional[dict[int, int]]:
        """Per partition, the offset up to which records were acknowledged (None: not tracked).

        A source that acknowledges should persist this with the acknowledgement
        itself, so a restarted query neither repeats nor skips acknowledgements.
        """
        return None

    def close(self) -> None:
        """Release clients; the source may be used again afterwards (it reconnects lazily)."""


def load_source(class_path: str, options: Mapping[str, str]) -> PartitionedSource:
    """Build ``module:Class`` (or ``module.Class``) with ``options``; clear errors for every bad case."""
    module_name, sep, class_name = class_path.partition(":")
    if not sep:
        module_name, _, class_name = class_path.rpartition(".")
    if not module_name or not class_name:
        raise SourceOptionError(f"option 'source': {class_path!r} is not 'module:Class'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise SourceOptionError(f"option 'source': cannot import module {module_name!r}: {error}") from None
    source_class = getattr(module, class_name, None)
    if not (isinstance(source_class, type) and issubclass(source_class, PartitionedSource)):
        raise SourceOptionError(
            f"option 'source': {class_path!r} is not a kgroup_spark.PartitionedSource "
            f"subclass (found {source_class!r})"
        )
    return source_class(options)


def ranges_of(start: Mapping[int, int], end: Mapping[int, int]) -> Iterable[tuple[int, int, int]]:
    """``(partition, start, end)`` for every partition with records between two offset maps."""
    for partition in sorted(end):
        begin = start.get(partition, 0)
        if end[partition] > begin:
            yield partition, begin, end[partition]
