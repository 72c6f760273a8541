"""Who read each partition in each batch, from the readers' accepted commits, and how sticky that is.

Fed with the coordinator's OffsetCommit answers (``KafkaServer.observe_groups``): every
partition a reader committed without error was read, in the batch its tag names, by that
member (its member id), reader identity and Spark executor (both in the tag).  Stickiness
compares consecutive batches: of the partitions read in both, the share read by the same
member, and by the same executor.  Pure: no clock, no I/O.
"""

from __future__ import annotations

from typing import Any, Optional

import attrs

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup_spark.plan import CommitTag


@attrs.frozen
class BatchRead:
    """One partition of one batch, as its accepted commit tells."""

    batch: str
    partition: int
    member_id: str
    identity: str
    executor: str


@attrs.frozen
class Stickiness:
    #: Pairs (partition read in two consecutive batches) compared.
    compared: int
    same_member: int
    same_identity: int
    same_executor: int

    @property
    def per_member(self) -> float:
        return self.same_member / self.compared if self.compared else 1.0

    @property
    def per_identity(self) -> float:
        return self.same_identity / self.compared if self.compared else 1.0

    @property
    def per_executor(self) -> float:
        return self.same_executor / self.compared if self.compared else 1.0

    def __str__(self) -> str:
        return (
            f"stickiness over {self.compared} partition-batches: per member {self.per_member:.0%}, "
            f"per reader identity {self.per_identity:.0%}, per executor {self.per_executor:.0%}"
        )


class ReadRecorder:
    def __init__(self) -> None:
        #: group -> batches in the order their first commit was accepted.
        self._order: dict[str, list[str]] = {}
        #: (group, batch) -> partition -> read.
        self._reads: dict[tuple[str, str], dict[int, BatchRead]] = {}

    def observe(self, request: Any, response: Any, now_ms: int) -> None:
        if not (isinstance(request, m.OffsetCommitRequest) and isinstance(response, m.OffsetCommitResponse)):
            return
        accepted = {p.topic_partition for p in response.partitions if p.error_code is ErrorCode.NONE}
        for commit in request.offsets:
            tag = CommitTag.decode(commit.committed.metadata)
            if tag is None or commit.topic_partition not in accepted:
                continue
            order = self._order.setdefault(request.group_id, [])
            if tag.batch not in order:
                order.append(tag.batch)
            partition = commit.topic_partition.partition
            self._reads.setdefault((request.group_id, tag.batch), {})[partition] = BatchRead(
                tag.batch, partition, request.member_id, tag.member, tag.executor
            )

    def batches(self, group_id: str) -> list[dict[int, BatchRead]]:
        """Per batch (in commit order), who read each partition."""
        return [dict(self._reads[(group_id, batch)]) for batch in self._order.get(group_id, [])]

    def stickiness(self, group_id: str, skip_batches: int = 0) -> Stickiness:
        """Stickiness between consecutive batches, leaving out the first ``skip_batches``."""
        return stickiness_of(self.batches(group_id)[skip_batches:])


def stickiness_of(batches: list[dict[int, BatchRead]]) -> Stickiness:
    """Of the partitions read in two consecutive batches, how many by the same member, identity, executor."""
    compared = same_member = same_identity = same_executor = 0
    for before, after in zip(batches, batches[1:]):
        for partition in sorted(set(before) & set(after)):
            first, second = before[partition], after[partition]
            compared += 1
            same_member += first.member_id == second.member_id
            same_identity += first.identity == second.identity
            same_executor += first.executor == second.executor
    return Stickiness(compared, same_member, same_identity, same_executor)


def describe_batch(reads: dict[int, BatchRead], executor: Optional[bool] = True) -> str:
    """``reader-0@driver: 0 2 4 | reader-1@driver: 1 3 5`` for one batch."""
    owners: dict[str, list[int]] = {}
    for partition, read in sorted(reads.items()):
        name = f"{read.identity}@{read.executor}" if executor else read.identity
        owners.setdefault(name, []).append(partition)
    return " | ".join(f"{name}: {' '.join(str(p) for p in parts)}" for name, parts in sorted(owners.items()))
