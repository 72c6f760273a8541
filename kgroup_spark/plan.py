"""What the driver plans for a batch and how commits name the batch they belong to.

A batch is one offset range per source partition.  It is read by ``readers``
slot tasks; each slot is one group member (static instance id
``<group>-reader-<slot>`` by default), and reads only the ranges of the
partitions it owns.  Commits carry a tag naming batch, slot, attempt and
generation in their metadata, so a retried slot can replay exactly what it
committed in this batch and nothing else.
"""

from __future__ import annotations

import hashlib
import json
from typing import Mapping, Optional

import attrs

COMMIT_TAG_PREFIX = "kgroup-spark"


def offsets_to_json(offsets: Mapping[int, int]) -> dict:
    """Spark's offset object for a map of partition -> offset (JSON keys are strings)."""
    return {"offsets": {str(p): int(o) for p, o in sorted(offsets.items())}}


def offsets_from_json(value: Mapping) -> dict[int, int]:
    return {int(p): int(o) for p, o in dict(value.get("offsets", {})).items()}


def batch_tag(start: Mapping[int, int], end: Mapping[int, int]) -> str:
    """A name for the batch, the same every time Spark plans or replays it."""
    text = json.dumps([sorted(start.items()), sorted(end.items())])
    return hashlib.sha1(text.encode()).hexdigest()[:16]


@attrs.frozen
class CommitTag:
    """What a reader's commit of one partition says about the rows behind it (its metadata).

    ``floor`` is the lowest offset of the partition the planning run of the query read from, so a
    driver can acknowledge a batch it did not plan itself (the previous run's last one, which Spark
    commits before the new run plans anything) without acknowledging records no run read;
    ``member`` is the reading member's instance (``reader-<n>``) and ``executor`` the Spark executor
    it ran in, for stickiness reports.
    """

    batch: str
    slot: int
    attempt: int
    generation: int
    floor: Optional[int] = None
    member: str = ""
    executor: str = ""

    def encode(self) -> str:
        fields = [COMMIT_TAG_PREFIX, self.batch, self.slot, self.attempt, self.generation,
                  "" if self.floor is None else self.floor, _clean(self.member), _clean(self.executor)]
        return ":".join(str(f) for f in fields)

    @classmethod
    def decode(cls, metadata: Optional[str]) -> Optional["CommitTag"]:
        parts = (metadata or "").split(":")
        if len(parts) not in (5, 8) or parts[0] != COMMIT_TAG_PREFIX:
            return None
        try:
            tag = cls(parts[1], int(parts[2]), int(parts[3]), int(parts[4]))
            if len(parts) == 8:
                tag = attrs.evolve(tag, floor=int(parts[5]) if parts[5] else None, member=parts[6],
                                   executor=parts[7])
            return tag
        except ValueError:
            return None


def _clean(text: str) -> str:
    return text.replace(":", "_")


@attrs.frozen
class SlotPlan:
    """One read task: a slot's share of a batch (the slot reads what its member owns)."""

    slot: int
    readers: int
    batch: str
    topic: str
    partition_count: int
    #: (partition, start, end) for every partition with records in the batch.
    ranges: tuple[tuple[int, int, int], ...]
    #: The query's options (strings), for the source and the member.
    options: tuple[tuple[str, str], ...]
    #: (partition, floor): the lowest offset this run of the query planned from, per partition.
    ack_floors: tuple[tuple[int, int], ...] = ()
