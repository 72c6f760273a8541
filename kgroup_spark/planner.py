"""The driver side: offsets, batch plans, fencing a previous run, acknowledgements.

Spark builds readers several times and pickles them: nothing here connects
before it is used, and pickling drops the clients.
"""

from __future__ import annotations

import logging
from typing import Mapping, Optional

from kgroup_spark.errors import SourceOptionError
from kgroup_spark.group_admin import GroupAdmin
from kgroup_spark.options import ReaderOptions, parse_options
from kgroup_spark.plan import CommitTag, SlotPlan, batch_tag
from kgroup_spark.source import PartitionedSource, load_source, ranges_of

log = logging.getLogger(__name__)

ROW_PREFIX_SCHEMA = "partition int, offset long"


class Planner:
    def __init__(self, options: Mapping[str, str]) -> None:
        self.raw_options = dict(options)
        self.options: ReaderOptions = parse_options(self.raw_options)
        self._source: Optional[PartitionedSource] = None
        self._admin: Optional[GroupAdmin] = None
        #: Per partition, the lowest offset this run planned from: never acknowledge below it.
        self._ack_floor: dict[int, int] = {}
        self._acked: dict[int, int] = {}

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_source"] = None
        state["_admin"] = None
        return state

    # -- clients ---------------------------------------------------------------------------

    @property
    def source(self) -> PartitionedSource:
        if self._source is None:
            self._source = load_source(self.options.source_class, self.options.source_options)
        return self._source

    @property
    def group_id(self) -> str:
        return self.options.group_for(self.source.name)

    @property
    def admin(self) -> GroupAdmin:
        if self._admin is None:
            self._admin = GroupAdmin(
                self.options.bootstrap_servers, self.group_id, self.options.connect_timeout_ms
            )
        return self._admin

    def validate(self) -> str:
        """Check the source and the coordinator now; the rows' schema."""
        source = self.source
        count = source.partition_count()
        if count < 1:
            raise SourceOptionError(f"source {self.options.source_class!r} ({source.name}) has no partitions")
        self.admin.check_reachable()
        self.admin.ensure_topic(source.name, count)
        return f"{ROW_PREFIX_SCHEMA}, {source.schema()}"

    def close(self) -> None:
        if self._source is not None:
            self._source.close()
            self._source = None
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    # -- offsets ---------------------------------------------------------------------------

    def latest(self) -> dict[int, int]:
        return self.source.latest_offsets()

    def starting(self) -> dict[int, int]:
        """Where a query with no checkpoint starts: the group's committed offsets, else startingOffsets."""
        earliest = self.source.earliest_offsets()
        fallback = self.latest() if self.options.starting_offsets == "latest" else earliest
        if self.options.starting_offsets != "committed":
            return fallback
        committed = self.admin.committed(self.source.name)
        return {
            p: max(committed[p][0], earliest.get(p, 0)) if p in committed else fallback.get(p, 0)
            for p in fallback
        }

    def plan(self, start: Mapping[int, int], end: Mapping[int, int]) -> list[SlotPlan]:
        ranges = tuple(ranges_of(start, end))
        for partition, begin, _ in ranges:
            self._ack_floor[partition] = min(self._ack_floor.get(partition, begin), begin)
        if not ranges:
            return []
        readers = self.options.readers
        tag = batch_tag(start, end)
        count = self.source.partition_count()
        floors = tuple((partition, self._ack_floor[partition]) for partition, _, _ in ranges)
        return [
            SlotPlan(slot, readers, tag, self.source.name, count, ranges, self.options.raw, floors)
            for slot in range(readers)
        ]

    def fence_previous_run(self) -> int:
        """Remove every member left in the group by an earlier run of the query (a new generation follows)."""
        options = self.options
        instance_ids = [options.instance_id(self.group_id, slot) for slot in range(options.readers)]
        return self.admin.remove_members([i for i in instance_ids if i is not None])

    # -- acknowledgements --------------------------------------------------------------------

    def acknowledge(self, end: Mapping[int, int]) -> dict[int, tuple[int, int]]:
        """Acknowledge to the source what the group committed up to ``end``; the ranges acknowledged.

        Only offsets the coordinator accepted in a commit are acknowledged, each
        range once: the watermark is the source's own (persisted with the
        acknowledgement) or, for sources that do not track it, this run's.
        Never below the offset the query's run started reading from: this run's
        plans, or, for the previous run's last batch (which Spark commits when a
        query restarts, before it plans anything), the floor its readers wrote in
        their commit's tag.
        """
        source = self.source
        committed = self.admin.committed(source.name)
        persisted: Optional[dict[int, int]] = source.acknowledged_offsets()
        done: dict[int, tuple[int, int]] = {}
        for partition, batch_end in sorted(end.items()):
            if partition not in committed:
                continue
            floor = self._ack_floor.get(partition)
            if floor is None:
                tag = CommitTag.decode(committed[partition][1])
                floor = tag.floor if tag is not None else None
            if floor is None:
                continue
            upto = min(committed[partition][0], batch_end)
            acked = persisted.get(partition, 0) if persisted is not None else self._acked.get(partition, 0)
            begin = max(acked, floor)
            if upto > begin:
                source.acknowledge(partition, begin, upto)
                self._acked[partition] = upto
                done[partition] = (begin, upto)
        return done
