"""The executor side: a slot task reads the partitions its group member owns, then commits them.

Membership (issue 24): the group's members are *reader identities*, static
instance ids ``<group>-reader-<n>`` for ``n`` in ``0..readers-1``.  A Python
worker process keeps the members it used between tasks, and a keeper thread
polls the idle ones, so a member whose task has ended still answers a
rebalance at once (it rejoins within a heartbeat interval) instead of holding
the group in PreparingRebalance for the whole rebalance timeout; a member
whose worker died leaves the group after its session timeout.

A task claims an identity for its duration with an exclusive file lock (one
per identity on the host): first the identity its own process already holds a
member for (so a partition stays with the same member and executor from
batch to batch: stickiness), then one whose holding process died, then the
one of its Spark partition index, then any free one.  A task of another
process that claims an identity joins with its instance id, which fences the
idle member elsewhere (KIP-345): that member
is dropped, never rejoined.  A task that finds every identity claimed reads
nothing and waits for the batch to be covered; after a session timeout (a
holder may be frozen) it takes its slot's identity anyway.

A task:
1. replays the partitions its Spark partition committed for this batch in an
   earlier attempt (Spark discarded those rows); if the whole batch is then
   committed, it is done without joining;
2. claims an identity and makes its member Stable;
3. reads every owned partition not yet committed past the batch's end, then
   commits them in one OffsetCommit stamped with the generation and member id
   the rows were *read* under (a rebalance since then refuses it) and a tag
   (batch, slot, attempt, generation, acknowledgement floor, identity, executor); a
   refused commit fails the task with OwnershipFencedError, and Spark discards
   the rows it produced;
4. repeats 3 until every partition of the batch is committed (rebalances may
   hand it partitions whose owner died), within ``batch.timeout.ms``.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import tempfile
import threading
import time
from typing import Any, Callable, Iterator, Optional

import attrs

from kgroup.core.member import ClassicMemberState
from kgroup.core.messages import OffsetAndMetadata
from kgroup.errors import KGroupError
from kgroup.values import TopicPartition
from kgroup_spark.errors import BatchNotCoveredError, CoordinatorUnreachableError, OwnershipFencedError
from kgroup_spark.options import ReaderOptions, parse_options
from kgroup_spark.plan import CommitTag, SlotPlan
from kgroup_spark.source import PartitionedSource, load_source

log = logging.getLogger(__name__)

POLL_STEP_MS = 200
#: How long the keeper polls one idle member per round, holding its identity's lock meanwhile.
KEEPER_POLL_MS = 50
#: Pause between the keeper's rounds (well under any heartbeat interval).
KEEPER_ROUND_S = 0.1
#: How long a task waits for its own member's identity (another process's keeper may hold the
#: lock for one poll) before trying others.
OWN_IDENTITY_WAIT_S = 0.3
CLAIM_DIRECTORY = os.path.join(tempfile.gettempdir(), "kgroup-spark-claims")

_members: dict[tuple, "HeldMember"] = {}
_fetchers: dict[tuple, Any] = {}
_sources: dict[tuple, PartitionedSource] = {}
_lock = threading.Lock()
_keeper: Optional[threading.Thread] = None


@attrs.frozen
class ReadToken:
    """Who read: the fencing token every commit of the rows carries (issue 24 item 2)."""

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


def executor_label() -> str:
    """The Spark executor this Python worker serves: its id where Spark tells it, else ``driver``.

    Spark gives a Python worker no executor id; standalone and local-cluster executors pass their
    log URL (``...&executorId=1&...``), and local mode runs tasks in the driver.
    """
    for name in ("SPARK_LOG_URL_STDERR", "SPARK_LOG_URL_STDOUT"):
        found = re.search(r"executorId=([^&]+)", os.environ.get(name, ""))
        if found:
            return found.group(1)
    return os.environ.get("SPARK_EXECUTOR_ID") or "driver"


def _source(options: ReaderOptions) -> PartitionedSource:
    key = (options.source_class, options.raw)
    source = _sources.get(key)
    if source is None:
        source = _sources[key] = load_source(options.source_class, options.source_options)
    return source


def _transport(options: ReaderOptions, client_id: str) -> Any:
    from kgroup.io.kafka_python.transport import KafkaPythonTransport

    try:
        return KafkaPythonTransport(
            bootstrap_servers=options.bootstrap_servers,
            client_id=client_id,
            bootstrap_timeout_ms=options.connect_timeout_ms,
        )
    except Exception as error:
        raise CoordinatorUnreachableError(
            f"{client_id}: no coordinator at {options.bootstrap_servers!r}: {error}"
        ) from None


def _new_member(options: ReaderOptions, group_id: str, identity: int) -> Any:
    from kgroup.io.group_consumer import GroupConsumer

    client_id = f"{group_id}-reader-{identity}"
    # Not subscribed yet: a member made for a task that finds its batch covered never joins.
    return GroupConsumer(
        _transport(options, client_id),
        group_id,
        assignors=(options.assignor,),
        group_instance_id=options.instance_id(group_id, identity),
        session_timeout_ms=options.session_timeout_ms,
        heartbeat_interval_ms=options.heartbeat_interval_ms,
        max_poll_interval_ms=options.max_poll_interval_ms,
        enable_auto_commit=False,
        fetch_committed_on_assignment=False,
        client_id=client_id,
    )


def _fetcher(options: ReaderOptions, group_id: str) -> Any:
    """A client that only reads the group's committed offsets (it never joins)."""
    from kgroup.io.group_consumer import GroupConsumer

    key = (options.bootstrap_servers, group_id)
    with _lock:
        fetcher = _fetchers.get(key)
        if fetcher is None:
            client_id = f"{group_id}-reader-offsets"
            fetcher = _fetchers[key] = GroupConsumer(
                _transport(options, client_id), group_id, enable_auto_commit=False, client_id=client_id
            )
        return fetcher


# -- identities: claimed per task with a file lock, members kept per process -----------------------


class IdentityClaim:
    """An exclusive claim on a reader identity on this host (released at task end or process death)."""

    def __init__(self, bootstrap_servers: str, group_id: str, identity: int) -> None:
        os.makedirs(CLAIM_DIRECTORY, exist_ok=True)
        digest = hashlib.sha1(f"{bootstrap_servers}|{group_id}".encode()).hexdigest()[:16]
        self.path = os.path.join(CLAIM_DIRECTORY, f"{digest}-{identity}.lock")
        self.identity = identity
        self._fd: Optional[int] = None

    def try_acquire(self) -> bool:
        fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        try:  # who holds the identity's member now (its keeper keeps it between tasks)
            with open(self.holder_path + ".tmp", "w") as out:
                out.write(str(os.getpid()))
            os.replace(self.holder_path + ".tmp", self.holder_path)
        except OSError as error:
            log.debug("kgroup: cannot record the holder of identity %d: %s", self.identity, error)
        return True

    @property
    def holder_path(self) -> str:
        return self.path[: -len(".lock")] + ".holder"

    def holder_gone(self) -> bool:
        """True when no live process on this host holds the identity's member (or none ever did)."""
        try:
            with open(self.holder_path) as handle:
                pid = int(handle.read())
        except (OSError, ValueError):
            return True
        if pid == os.getpid():
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False
        return False

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = None


@attrs.define
class HeldMember:
    """A member this process keeps; ``busy`` while a task (or the keeper) uses it."""

    options: ReaderOptions
    group_id: str
    identity: int
    consumer: Any
    busy: threading.Lock = attrs.field(factory=threading.Lock)
    subscribed: bool = False
    #: The member id the member had when its task handed it back: if it changes while idle, the
    #: member was removed from the group and is dropped rather than rejoined as a new member.
    member_id: str = ""

    @property
    def key(self) -> tuple:
        return (self.options.bootstrap_servers, self.group_id, self.identity)

    def healthy(self) -> bool:
        view = self.consumer.member
        return not (view.closed or view.state is ClassicMemberState.FATAL)


def _held(bootstrap_servers: str, group_id: str) -> list[HeldMember]:
    with _lock:
        return [h for h in _members.values() if h.key[:2] == (bootstrap_servers, group_id)]


def _drop(held: HeldMember) -> None:
    with _lock:
        if _members.get(held.key) is held:
            del _members[held.key]
    try:
        # Kafka's default on close: a static member stays (the identity's next member replaces it),
        # a dynamic one (static=false) leaves so the group rebalances without waiting for its session.
        held.consumer.close(timeout_ms=1_000)
    except KGroupError as error:
        log.debug("closing reader member %s: %s", held.identity, error)


def claim_identity(options: ReaderOptions, group_id: str, slot: int) -> Optional[IdentityClaim]:
    """Claim a reader identity for this task; None when every identity is claimed by other tasks."""
    own = [h.identity for h in _held(options.bootstrap_servers, group_id) if h.healthy()]
    # Then identities whose holder died (a lost worker or executor): taking one over keeps the other
    # processes' members where they are; then the Spark partition's own index; then any.
    orphaned = [
        identity for identity in range(options.readers)
        if identity not in own and IdentityClaim(options.bootstrap_servers, group_id, identity).holder_gone()
    ]
    order = own + orphaned + [slot] + list(range(options.readers))
    tried: set[int] = set()
    for identity in order:
        if identity in tried or identity >= options.readers:
            continue
        tried.add(identity)
        claim = IdentityClaim(options.bootstrap_servers, group_id, identity)
        patience = time.monotonic() + (OWN_IDENTITY_WAIT_S if identity in own else 0)
        while True:
            if claim.try_acquire():
                return claim
            if time.monotonic() >= patience:
                break
            time.sleep(0.02)
    return None


def take_member(options: ReaderOptions, group_id: str, identity: int) -> HeldMember:
    """This process's member for a claimed identity, marked busy: reused while healthy."""
    key = (options.bootstrap_servers, group_id, identity)
    with _lock:
        held = _members.get(key)
    if held is not None:
        held.busy.acquire()  # waits for the keeper's current poll of it
        if held.healthy():
            return held
        held.busy.release()
        _drop(held)
    held = HeldMember(options, group_id, identity, _new_member(options, group_id, identity))
    held.busy.acquire()
    with _lock:
        _members[key] = held
    _start_keeper()
    return held


def give_back(held: HeldMember) -> None:
    held.member_id = held.consumer.member.generation.member_id
    held.busy.release()


def forget_slot_member(options: ReaderOptions, group_id: str, identity: int) -> None:
    """Close this process's member of an identity (tests; a member known to be fenced)."""
    with _lock:
        held = _members.get((options.bootstrap_servers, group_id, identity))
    if held is not None:
        _drop(held)


def close_all() -> None:
    """Close every member and offsets client this process keeps (tests, and a worker shutting down)."""
    with _lock:
        held, fetchers = list(_members.values()), list(_fetchers.values())
        _fetchers.clear()
    for member in held:
        _drop(member)
    for fetcher in fetchers:
        try:
            fetcher.close(timeout_ms=1_000)
        except KGroupError as error:
            log.debug("closing the offsets client: %s", error)


def _start_keeper() -> None:
    global _keeper
    with _lock:
        if _keeper is None or not _keeper.is_alive():
            _keeper = threading.Thread(target=_keep_idle_members, name="kgroup-spark-keeper", daemon=True)
            _keeper.start()


def _keep_idle_members() -> None:
    """Poll every idle member so it rejoins a rebalance at once; drop those fenced or removed."""
    while True:
        time.sleep(KEEPER_ROUND_S)
        with _lock:
            idle = list(_members.values())
        for held in idle:
            if not held.busy.acquire(blocking=False):
                continue
            try:
                _keep_one(held)
            except Exception as error:  # a member that cannot be kept is dropped, never retried
                log.debug("kgroup: dropping idle reader member %s: %s", held.identity, error)
                _drop(held)
            finally:
                held.busy.release()


def _keep_one(held: HeldMember) -> None:
    if not held.subscribed:
        return
    view = held.consumer.member
    if not held.healthy() or not held.member_id or view.generation.member_id != held.member_id:
        _drop(held)  # fenced, or removed: a new join would fence whoever claimed the identity
        return
    claim = IdentityClaim(held.options.bootstrap_servers, held.group_id, held.identity)
    if not claim.try_acquire():
        _drop(held)  # a task of another process claimed the identity: its member replaces this one
        return
    try:
        held.consumer.poll(KEEPER_POLL_MS)
    finally:
        claim.release()
    if not held.healthy() or held.consumer.member.generation.member_id != held.member_id:
        _drop(held)


# -- reading ------------------------------------------------------------------------------------------


def _settle(member: Any, deadline: float, token_text: str) -> None:
    """Poll until the member is Stable with its assignment (joining first if needed)."""
    while True:
        member.poll(POLL_STEP_MS)
        view = member.member
        if view.state is ClassicMemberState.STABLE and not view.rejoin_needed:
            return
        if time.monotonic() > deadline:
            raise BatchNotCoveredError(
                f"{token_text}: the group did not become Stable in time (member state {view.state.name})"
            )


def _join(held: HeldMember, plan: SlotPlan, deadline: float, label: str) -> None:
    consumer = held.consumer
    consumer.update_metadata({plan.topic: plan.partition_count})
    if not held.subscribed:
        consumer.subscribe([plan.topic])
        held.subscribed = True
    _settle(consumer, deadline, label)


def read_slot(plan: SlotPlan) -> Iterator[tuple]:
    """Rows ``(partition, offset, *row)`` of the slot's share of a batch; commits what it read."""
    options = parse_options(dict(plan.options))
    source = _source(options)
    group_id = options.group_for(source.name)
    attempt = task_attempt()
    deadline = time.monotonic() + options.batch_timeout_ms / 1000
    ranges = {partition: (start, end) for partition, start, end in plan.ranges}
    label = f"reader slot {plan.slot} of group {group_id!r} (batch {plan.batch}, attempt {attempt})"
    topic_partitions = {p: TopicPartition(plan.topic, p) for p in ranges}
    fetcher = _fetcher(options, group_id)

    def committed() -> dict[int, tuple[int, Optional[CommitTag]]]:
        answer = fetcher.committed(list(topic_partitions.values()), timeout_ms=options.connect_timeout_ms)
        out = {}
        for partition, tp in topic_partitions.items():
            meta = answer.get(tp)
            out[partition] = (
                (meta.offset, CommitTag.decode(meta.metadata)) if meta is not None else (-1, None)
            )
        return out

    def missing(state: dict) -> list[int]:
        return [p for p in sorted(ranges) if state[p][0] < ranges[p][1]]

    state = committed()
    # 1. What this slot committed for this batch before (then failed): Spark dropped those rows.
    for partition, (offset, tag) in sorted(state.items()):
        start, end = ranges[partition]
        if (
            tag is not None
            and tag.batch == plan.batch
            and tag.slot % plan.readers == plan.slot
            and offset >= end
        ):
            yield from _rows(source, partition, start, end)
    if not missing(state):
        return  # covered by the other readers (a retry after a failure): nothing to join for
    claim: Optional[IdentityClaim] = None
    held: Optional[HeldMember] = None
    # Every identity claimed by other tasks on this host for a whole session timeout: one of them may
    # be frozen (its lock outlives its membership), so this task takes its slot's identity anyway;
    # its join fences whoever held it (KIP-345).
    force_at = time.monotonic() + options.session_timeout_ms / 1000
    try:
        while True:
            if held is None:
                claim = claim_identity(options, group_id, plan.slot)
                identity = claim.identity if claim is not None else None
                if identity is None and time.monotonic() >= force_at:
                    identity = plan.slot % options.readers
                    log.info("kgroup: %s takes identity %d held by a silent task", label, identity)
                if identity is not None:
                    held = take_member(options, group_id, identity)
                    try:
                        _join(held, plan, deadline, label)
                    except KGroupError:
                        # Fenced between tasks (another process took the identity): start afresh once.
                        _drop(held)
                        held = take_member(options, group_id, identity)
                        _join(held, plan, deadline, label)
            if held is not None:
                yield from _read_owned(held, plan, options, group_id, attempt, ranges, committed)
            state = committed()
            uncovered = missing(state)
            if not uncovered:
                return
            if time.monotonic() > deadline:
                raise BatchNotCoveredError(
                    f"{label}: partitions {uncovered} of the batch were not committed by any reader within "
                    f"{options.batch_timeout_ms} ms; are all {plan.readers} readers able to run at once?"
                )
            if held is not None:
                held.consumer.poll(POLL_STEP_MS)
            else:
                time.sleep(POLL_STEP_MS / 1000)
    finally:
        if held is not None:
            give_back(held)
        if claim is not None:
            claim.release()


def _read_owned(
    held: HeldMember,
    plan: SlotPlan,
    options: ReaderOptions,
    group_id: str,
    attempt: int,
    ranges: dict[int, tuple[int, int]],
    committed: Callable[[], dict],
) -> Iterator[tuple]:
    """Read what the member owns and nobody committed yet; commit it under the token it was read with."""
    member = held.consumer
    generation = member.member.generation
    token = ReadToken(
        group_id, plan.slot, generation.member_id, generation.generation_id, plan.batch, attempt
    )
    owned = {tp.partition for tp in member.assignment() if tp.topic == plan.topic}
    # The committed offsets are read *after* the ownership: a partition's previous owner commits before
    # it gives the partition up (cooperative and eager alike), so a commit it made is seen here and the
    # partition is not read twice in one batch.  (Read before, a reader could take over a partition
    # with a stale view and deliver its rows a second time.)
    state = committed()
    todo = [p for p in sorted(ranges) if p in owned and state[p][0] < ranges[p][1]]
    for partition in todo:
        start, end = ranges[partition]
        yield from _rows(_source(options), partition, start, end)
    if not todo:
        return
    executor = executor_label()
    floors = dict(plan.ack_floors)
    offsets = {
        TopicPartition(plan.topic, p): OffsetAndMetadata(
            ranges[p][1],
            CommitTag(plan.batch, plan.slot, attempt, generation.generation_id,
                      floors.get(p, ranges[p][0]), f"reader-{held.identity}", executor).encode(),
        )
        for p in todo
    }
    try:
        # Stamped with the generation the rows were read in: a rejoin since (a zombie that woke up
        # and rejoined before committing) makes it fail, whatever the member's generation is now.
        member.commit(offsets, timeout_ms=options.connect_timeout_ms, generation=generation)
    except KGroupError as error:
        raise OwnershipFencedError(
            token,
            f"the coordinator refused its commit of partitions {todo}: {type(error).__name__}: {error}",
        ) from None


def _rows(source: PartitionedSource, partition: int, start: int, end: int) -> Iterator[tuple]:
    for offset, row in source.read(partition, start, end):
        yield (partition, offset) + tuple(row)
