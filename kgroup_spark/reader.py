"""The executor side: a slot task reads the partitions its group member owns, then commits them.

One member per (coordinator, group, slot) lives in each Python worker process
and is reused by the next task of that slot in the same process (Spark reuses
Python workers; a worker runs one task at a time, so the previous user of
the member is finished).  A task in another process creates its own member
with the same static instance id, which fences every earlier member of the
slot (KIP-345): their commits are refused from that moment.

A task:
1. makes its member Stable (joining if needed) and asks for the group's
   committed offsets of the batch's partitions;
2. replays the partitions this slot already committed for this batch (an
   earlier attempt that committed and then failed: Spark discarded its rows);
3. reads every owned partition not yet committed past the batch's end, then
   commits all of them in one OffsetCommit stamped with its generation, member
   id and a tag (batch, slot, attempt); a refused commit fails the task with
   OwnershipFencedError, and Spark discards the rows it produced;
4. repeats 3 until every partition of the batch is committed (rebalances may
   hand it partitions whose owner died), within ``batch.timeout.ms``.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Iterator, Optional

import attrs

from kgroup.core.member import MemberState
from kgroup.core.messages import OffsetAndMetadata
from kgroup.errors import KGroupError
from kgroup.values import TopicPartition
from kgroup_spark.errors import BatchNotCoveredError, CoordinatorUnreachableError, OwnershipFencedError
from kgroup_spark.options import ReaderOptions, parse_options
from kgroup_spark.plan import CommitTag, SlotPlan
from kgroup_spark.source import PartitionedSource, load_source

log = logging.getLogger(__name__)

POLL_STEP_MS = 200

_members: dict[tuple, Any] = {}
_sources: dict[tuple, PartitionedSource] = {}
_lock = threading.Lock()


@attrs.frozen
class ReadToken:
    """Who reads: what the coordinator checks on every commit of the task."""

    group_id: str
    slot: int
    member_id: str
    generation_id: int
    batch: str
    attempt: int

    def __str__(self) -> str:
        return (
            f"reader slot {self.slot} of group {self.group_id!r} (member {self.member_id}, generation "
            f"{self.generation_id}, batch {self.batch}, attempt {self.attempt})"
        )


def task_attempt() -> int:
    """Spark's attempt number of the running task (0 outside a task)."""
    try:
        from pyspark import TaskContext
    except ImportError:  # pragma: no cover - pyspark is there whenever Spark runs us
        return 0
    context = TaskContext.get()
    return context.attemptNumber() if context is not None else 0


def _source(options: ReaderOptions) -> PartitionedSource:
    key = (options.source_class, options.raw)
    source = _sources.get(key)
    if source is None:
        source = _sources[key] = load_source(options.source_class, options.source_options)
    return source


def _new_member(options: ReaderOptions, group_id: str, topic: str, partition_count: int, slot: int) -> Any:
    from kgroup.io.group_consumer import GroupConsumer
    from kgroup.io.kafka_python.transport import KafkaPythonTransport

    client_id = f"{group_id}-reader-{slot}"
    try:
        transport = KafkaPythonTransport(
            bootstrap_servers=options.bootstrap_servers,
            client_id=client_id,
            bootstrap_timeout_ms=options.connect_timeout_ms,
        )
    except Exception as error:
        raise CoordinatorUnreachableError(
            f"{client_id}: no coordinator at {options.bootstrap_servers!r}: {error}"
        ) from None
    return GroupConsumer(
        transport,
        group_id,
        topics=[topic],
        assignors=(options.assignor,),
        partitions_per_topic={topic: partition_count},
        group_instance_id=options.instance_id(group_id, slot),
        session_timeout_ms=options.session_timeout_ms,
        heartbeat_interval_ms=options.heartbeat_interval_ms,
        max_poll_interval_ms=options.max_poll_interval_ms,
        enable_auto_commit=False,
        fetch_committed_on_assignment=False,
        client_id=client_id,
    )


def slot_member(options: ReaderOptions, group_id: str, topic: str, partition_count: int, slot: int) -> Any:
    """This process's member for the slot: reused while healthy, replaced once fenced or failed."""
    key = (options.bootstrap_servers, group_id, slot)
    with _lock:
        member = _members.get(key)
        if member is not None and (member.member.closed or member.member.state is MemberState.FATAL):
            _discard(member)
            member = None
        if member is None:
            member = _members[key] = _new_member(options, group_id, topic, partition_count, slot)
        else:
            member.update_metadata({topic: partition_count})
        return member


def forget_slot_member(options: ReaderOptions, group_id: str, slot: int) -> None:
    with _lock:
        member = _members.pop((options.bootstrap_servers, group_id, slot), None)
    if member is not None:
        _discard(member)


def _discard(member: Any) -> None:
    try:
        member.close(timeout_ms=1_000)
    except KGroupError as error:
        log.debug("closing a failed reader member: %s", error)


def _settle(member: Any, deadline: float, token_text: str) -> None:
    """Poll until the member is Stable with its assignment (joining first if needed)."""
    while True:
        member.poll(POLL_STEP_MS)
        view = member.member
        if view.state is MemberState.STABLE and not view.rejoin_needed:
            return
        if time.monotonic() > deadline:
            raise BatchNotCoveredError(
                f"{token_text}: the group did not become Stable in time (member state {view.state.name})"
            )


def read_slot(plan: SlotPlan) -> Iterator[tuple]:
    """Rows ``(partition, offset, *row)`` of the slot's share of a batch; commits what it read."""
    options = parse_options(dict(plan.options))
    source = _source(options)
    group_id = options.group_for(source.name)
    attempt = task_attempt()
    deadline = time.monotonic() + options.batch_timeout_ms / 1000
    ranges = {partition: (start, end) for partition, start, end in plan.ranges}
    label = f"reader slot {plan.slot} of group {group_id!r} (batch {plan.batch}, attempt {attempt})"
    try:
        member = slot_member(options, group_id, plan.topic, plan.partition_count, plan.slot)
        _settle(member, deadline, label)
    except KGroupError:
        # A member fenced between tasks (another process took the slot): start afresh once.
        forget_slot_member(options, group_id, plan.slot)
        member = slot_member(options, group_id, plan.topic, plan.partition_count, plan.slot)
        _settle(member, deadline, label)
    topic_partitions = {p: TopicPartition(plan.topic, p) for p in ranges}

    def committed() -> dict[int, tuple[int, Optional[CommitTag]]]:
        answer = member.committed(list(topic_partitions.values()), timeout_ms=options.connect_timeout_ms)
        out = {}
        for partition, tp in topic_partitions.items():
            meta = answer.get(tp)
            out[partition] = (
                (meta.offset, CommitTag.decode(meta.metadata)) if meta is not None else (-1, None)
            )
        return out

    state = committed()
    # 2. What this slot committed for this batch before (then failed): Spark dropped those rows.
    for partition, (offset, tag) in sorted(state.items()):
        start, end = ranges[partition]
        if (
            tag is not None
            and tag.batch == plan.batch
            and tag.slot % plan.readers == plan.slot
            and offset >= end
        ):
            yield from _rows(source, partition, start, end)
    # 3-4. Read what this slot owns and nobody committed yet; until the whole batch is committed.
    while True:
        generation = member.member.generation
        token = ReadToken(
            group_id, plan.slot, generation.member_id, generation.generation_id, plan.batch, attempt
        )
        owned = {tp.partition for tp in member.assignment() if tp.topic == plan.topic}
        todo = [p for p in sorted(ranges) if p in owned and state[p][0] < ranges[p][1]]
        for partition in todo:
            start, end = ranges[partition]
            yield from _rows(source, partition, start, end)
        if todo:
            stamp = CommitTag(plan.batch, plan.slot, attempt, generation.generation_id).encode()
            offsets = {topic_partitions[p]: OffsetAndMetadata(ranges[p][1], stamp) for p in todo}
            try:
                member.commit(offsets, timeout_ms=options.connect_timeout_ms)
            except KGroupError as error:
                raise OwnershipFencedError(
                    token,
                    f"the coordinator refused its commit of partitions {todo}: "
                    f"{type(error).__name__}: {error}",
                ) from None
        state = committed()
        missing = [p for p in sorted(ranges) if state[p][0] < ranges[p][1]]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise BatchNotCoveredError(
                f"{token}: partitions {missing} of the batch were not committed by any reader within "
                f"{options.batch_timeout_ms} ms; are all {plan.readers} readers able to run at once?"
            )
        member.poll(POLL_STEP_MS)


def _rows(source: PartitionedSource, partition: int, start: int, end: int) -> Iterator[tuple]:
    for offset, row in source.read(partition, start, end):
        yield (partition, offset) + tuple(row)
