"""The client matrix harness: a 3-broker wire server and group members in child processes.

Every member runs ``client_worker.py`` in its own process (any client: kafka-python,
kgroup's ``KafkaConsumer``, confluent-kafka, aiokafka), so a crash is a real SIGKILL: the
kernel closes its sockets and no LeaveGroup is ever sent.  The worker prints what its
rebalance listener saw, every record it handed out and every commit that succeeded, with
CLOCK_MONOTONIC timestamps (comparable across processes); :class:`Ledger` collects them and
checks the delivery and ownership properties the tests assert.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Tuple

import pytest

import kgroup
from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.server import KafkaServer

WORKER = Path(__file__).with_name("client_worker.py")
REPO = Path(kgroup.__file__).resolve().parents[1]

#: Kafka's group.min.session.timeout.ms (the coordinator enforces it): the crash tests wait this long.
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 500
PARTITIONS = 6
#: Generous bound for anything that should take a second or two on an idle machine.
WAIT_S = 45.0

INF = float("inf")


def wait_until(predicate: Callable[[], bool], what: str, timeout_s: float = WAIT_S,
               explain: Optional[Callable[[], str]] = None) -> float:
    """Poll ``predicate`` until it holds; the seconds it took.  Fails the test after ``timeout_s``."""
    start = time.monotonic()
    while True:
        if predicate():
            return time.monotonic() - start
        if time.monotonic() - start > timeout_s:
            detail = f"\n{explain()}" if explain is not None else ""
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}{detail}")
        time.sleep(0.02)


# -- records ------------------------------------------------------------------------------------


def record(i: int, source: str) -> Tuple[str, str, List[List[str]]]:
    """The i-th test record: (key, value, headers).  Keys repeat, so several share a partition."""
    return f"key-{i % 40}", f"v{i:04d}", [["seq", str(i)], ["source", source]]


def produce(kind: str, bootstrap: str, topic: str, first: int, count: int) -> None:
    """Produce records ``first .. first+count-1`` with ``kind``'s own producer, acks=all, and wait for them.

    kgroup has no producer of its own: its cells produce with kafka-python's.
    """
    records = [record(i, kind) for i in range(first, first + count)]
    if kind in ("kafka-python", "kgroup"):
        import kafka
        producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
        try:
            futures = [producer.send(topic, key=k.encode(), value=v.encode(),
                                     headers=[(n, x.encode()) for n, x in h]) for k, v, h in records]
            producer.flush(30)
            for future in futures:
                future.get(timeout=30)
        finally:
            producer.close(timeout=10)
    elif kind == "confluent":
        import confluent_kafka
        errors: list = []
        # murmur2: the partitioner of Java, kafka-python and aiokafka (librdkafka's default is CRC32).
        producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                                             "partitioner": "murmur2_random"})
        for k, v, h in records:
            producer.produce(topic, key=k, value=v, headers=[(n, x.encode()) for n, x in h],
                             on_delivery=lambda err, msg: errors.append(err) if err is not None else None)
            producer.poll(0)
        assert producer.flush(30) == 0, "confluent producer could not deliver every record"
        assert not errors, errors
    elif kind == "aiokafka":
        import aiokafka

        async def run() -> None:
            producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
            await producer.start()
            try:
                futures = [await producer.send(topic, key=k.encode(), value=v.encode(),
                                               headers=[(n, x.encode()) for n, x in h])
                           for k, v, h in records]
                await asyncio.wait_for(asyncio.gather(*futures), 30)
            finally:
                await producer.stop()
        asyncio.run(run())
    else:
        raise ValueError(kind)


def create_topic(kind: str, bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    """CreateTopics through ``kind``'s own admin client (kafka-python's for kgroup), replication 3."""
    if kind in ("kafka-python", "kgroup"):
        import kafka
        from kafka.admin import NewTopic
        admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.create_topics([NewTopic(topic, partitions, 3)])
        finally:
            admin.close()
    elif kind == "confluent":
        from confluent_kafka.admin import AdminClient, NewTopic as ConfluentNewTopic
        admin = AdminClient({"bootstrap.servers": bootstrap})  # must outlive the future
        futures = admin.create_topics(
            [ConfluentNewTopic(topic, num_partitions=partitions, replication_factor=3)])
        futures[topic].result(30)
    elif kind == "aiokafka":
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic as AioNewTopic

        async def run() -> None:
            admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
            await admin.start()
            try:
                await admin.create_topics([AioNewTopic(topic, partitions, 3)])
            finally:
                await admin.close()
        asyncio.run(run())
    else:
        raise ValueError(kind)


# -- what the members saw -------------------------------------------------------------------------


class Ledger:
    """Every event of every member of one test, in arrival order (each carries its own timestamp)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: List[Tuple[str, dict]] = []

    def add(self, member: str, event: dict) -> None:
        with self._lock:
            self._events.append((member, event))

    def events(self, member: Optional[str] = None, kind: Optional[str] = None) -> List[dict]:
        with self._lock:
            return [e for m, e in self._events
                    if (member is None or m == member) and (kind is None or e["e"] == kind)]

    def all_events(self) -> List[Tuple[str, dict]]:
        with self._lock:
            return list(self._events)

    def deliveries(self) -> List[Tuple[float, str, int, int, str, str, list]]:
        """(time, member, partition, offset, key, value, headers) of every record handed out."""
        return [(e["t"], m, p, o, k, v, h) for m, e in self.all_events() if e["e"] == "records"
                for p, o, k, v, h in e["r"]]

    def commits(self) -> List[Tuple[float, str, int, int]]:
        """(time the commit returned, member, partition, committed offset) of every successful commit."""
        return [(e["t"], m, int(p), o) for m, e in self.all_events() if e["e"] == "committed"
                for p, o in e["o"].items()]

    def values(self) -> set:
        return {d[5] for d in self.deliveries()}

    def ownership_intervals(self) -> List[Tuple[str, int, float, float]]:
        """(member, partition, from, to) from the listeners; a crash or close ends what was still owned."""
        opened: Dict[Tuple[str, int], float] = {}
        intervals = []
        for member, e in self.all_events():
            kind = e["e"]
            if kind == "assigned":
                for p in e["p"]:
                    opened.setdefault((member, p), e["t"])
            elif kind in ("revoked", "lost"):
                for p in e["p"]:
                    began = opened.pop((member, p), None)
                    if began is not None:
                        intervals.append((member, p, began, e["t"]))
            elif kind in ("closing", "closed", "killed"):
                for key in [k for k in opened if k[0] == member]:
                    intervals.append((member, key[1], opened.pop(key), e["t"]))
        intervals.extend((m, p, began, INF) for (m, p), began in opened.items())
        return intervals

    # -- the properties every test checks ------------------------------------------------------

    def assert_no_partition_owned_twice(self) -> None:
        """No instant at which two members both held a partition (listener intervals never overlap)."""
        by_partition: Dict[int, list] = {}
        for member, p, began, ended in self.ownership_intervals():
            by_partition.setdefault(p, []).append((began, ended, member))
        for p, spans in by_partition.items():
            spans.sort()
            for (b1, e1, m1), (b2, e2, m2) in zip(spans, spans[1:]):
                assert m1 == m2 or e1 <= b2, (
                    f"partition {p} owned by {m1} ({b1:.3f}..{e1:.3f}) and {m2} ({b2:.3f}..{e2:.3f}) at once")

    def assert_every_record_consumed(self, count: int, topic_sources: Dict[int, str]) -> None:
        """Every value 0..count-1 handed out, each with its own key and headers; one key, one partition."""
        expected = {record(i, topic_sources[i])[1]: record(i, topic_sources[i]) for i in range(count)}
        seen = self.values()
        missing = sorted(set(expected) - seen)
        assert not missing, f"{len(missing)} records never consumed, e.g. {missing[:10]}"
        assert seen <= set(expected), f"unexpected values: {sorted(seen - set(expected))[:10]}"
        partition_of_key: Dict[str, int] = {}
        for _, member, p, o, key, value, headers in self.deliveries():
            want_key, _, want_headers = expected[value]
            assert (key, headers) == (want_key, want_headers), (member, p, o, key, value, headers)
            assert partition_of_key.setdefault(key, p) == p, (
                f"key {key} in partitions {partition_of_key[key]} and {p}")

    def assert_duplicates_only_uncommitted(self) -> int:
        """A record is handed out again only if no commit past it had succeeded before; the duplicates.

        A successful synchronous commit of offset c for partition p means the group will never
        hand out a record of p below c again (the new owner starts from c): a redelivery of an
        offset below a commit acknowledged earlier is lost committed progress.
        """
        acked: Dict[int, List[Tuple[float, int]]] = {}
        for t, _, p, o in self.commits():
            acked.setdefault(p, []).append((t, o))
        first_seen: Dict[Tuple[int, int], Tuple[float, str]] = {}
        duplicates = 0
        for t, member, p, o, *_ in sorted(self.deliveries()):
            if (p, o) not in first_seen:
                first_seen[p, o] = (t, member)
                continue
            duplicates += 1
            committed_before = max((c for tc, c in acked.get(p, []) if tc < t), default=0)
            assert o >= committed_before, (
                f"partition {p} offset {o} handed out again to {member} at {t:.3f} (first to "
                f"{first_seen[p, o][1]} at {first_seen[p, o][0]:.3f}) although offset {committed_before} "
                f"had been committed before")
        return duplicates


class Member:
    """One consumer process; its events go to the shared :class:`Ledger` under ``name``."""

    def __init__(self, ledger: Ledger, name: str, config: dict, log_dir: Path) -> None:
        self.ledger = ledger
        self.name = name
        self.kind = config["kind"]
        self.client_id = config["client_id"]
        self.stderr_path = log_dir / f"{name}.stderr"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
        with open(self.stderr_path, "wb") as stderr:
            self.proc = subprocess.Popen([sys.executable, str(WORKER), json.dumps(config)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                         env=env, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            self.ledger.add(self.name, event)

    @property
    def owned(self) -> frozenset:
        owned: set = set()
        for e in self.ledger.events(self.name):
            if e["e"] == "assigned":
                owned |= set(e["p"])
            elif e["e"] in ("revoked", "lost"):
                owned -= set(e["p"])
            elif e["e"] in ("closing", "closed", "killed"):
                owned = set()
        return frozenset(owned)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def listener_events(self) -> List[dict]:
        return [e for e in self.ledger.events(self.name) if e["e"] in ("assigned", "revoked", "lost")]

    def close(self, timeout_s: float = 30) -> None:
        """Ask the worker to commit and close its consumer the client's normal way; wait for it to exit."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("close\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=timeout_s)
        self._reader.join(timeout=5)
        assert self.ledger.events(self.name, "closed"), f"{self.name} did not close cleanly:\n{self.stderr()}"

    def crash(self) -> None:
        """SIGKILL: the kernel closes the sockets; no commit, no LeaveGroup."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)
        killed_at = time.monotonic()
        self._reader.join(timeout=10)  # what it printed before dying goes in first
        self.ledger.add(self.name, {"e": "killed", "t": killed_at})

    def kill_quietly(self) -> None:
        if self.alive:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def stderr(self, tail: int = 3000) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-tail:]
        except OSError:
            return ""


class ClientMatrix:
    """A 3-broker :class:`KafkaServer` plus the members a test starts; everything stopped at teardown."""

    def __init__(self, server: KafkaServer, log_dir: Path) -> None:
        self.server = server
        self.ledger = Ledger()
        self.members: List[Member] = []
        #: Which client produced record i (its headers name it).
        self.sources: Dict[int, str] = {}
        self._log_dir = log_dir

    @property
    def bootstrap(self) -> str:
        return self.server.bootstrap_servers

    def create_topic(self, kind: str, topic: str, partitions: int = PARTITIONS) -> None:
        create_topic(kind, self.bootstrap, topic, partitions)

    def produce(self, kind: str, topic: str, first: int, count: int) -> None:
        produce(kind, self.bootstrap, topic, first, count)
        for i in range(first, first + count):
            self.sources[i] = kind

    def assert_every_record_consumed(self) -> None:
        self.ledger.assert_every_record_consumed(len(self.sources), self.sources)

    def start(self, kind: str, topic: str, group: str, *, strategy: str = "range",
              instance_id: Optional[str] = None, session_timeout_ms: int = SESSION_TIMEOUT_MS,
              max_records: int = 5, batch_sleep_ms: int = 20, commit_every: int = 3,
              name: Optional[str] = None) -> Member:
        name = name or f"m{len(self.members)}-{kind}"
        config = dict(kind=kind, bootstrap=self.bootstrap, topic=topic, group=group, client_id=name,
                      strategy=strategy, instance_id=instance_id, session_timeout_ms=session_timeout_ms,
                      heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS, max_records=max_records,
                      batch_sleep_ms=batch_sleep_ms, commit_every=commit_every)
        member = Member(self.ledger, name, config, self._log_dir)
        self.members.append(member)
        return member

    def stop_all(self) -> None:
        for member in self.members:
            member.kill_quietly()

    # -- the group as the server sees it ---------------------------------------------------------

    def group(self, group_id: str) -> Optional[dict]:
        """generation, state, leader's instance id and members of the group on its coordinator now."""
        def read() -> Optional[dict]:
            assert self.server.hosting is not None
            coordinator = self.server.hosting.coordinator_for(group_id)
            persisted = None if coordinator is None else coordinator.persisted_view().groups.get(group_id)
            if persisted is None:
                return None
            members = {mid: (r.group_instance_id, r.client_id) for mid, r in persisted.members.items()}
            return {"generation": persisted.header.generation_id, "state": persisted.header.state,
                    "leader": members.get(persisted.header.leader_id or "", (None, None)), "members": members}
        # The coordinator lives on the server's loop thread: read it there (KafkaServer._call).
        return self.server._call(read)

    def generation(self, group_id: str) -> int:
        group = self.group(group_id)
        assert group is not None, f"group {group_id} is not loaded"
        return group["generation"]

    def committed(self, group_id: str, topic: str) -> Dict[int, int]:
        """The group's committed offsets as an OffsetFetch from a stock admin client answers them."""
        import kafka
        admin = kafka.KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            offsets = admin.list_group_offsets(group_id)[group_id]
        finally:
            admin.close()
        return {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == topic}

    def end_offsets(self, topic: str) -> Dict[int, int]:
        def read() -> Dict[int, int]:
            assert self.server.hosting is not None
            cluster = self.server.hosting.cluster
            out = {}
            for p in range(PARTITIONS):
                log = cluster.partition(topic, p).leader_log()
                assert log is not None
                out[p] = log.hw
            return out
        return self.server._call(read)

    # -- waiting ------------------------------------------------------------------------------------

    def settled(self, group_id: str, members: Iterable[Member], partitions: int = PARTITIONS,
                balanced: bool = True) -> bool:
        """Stable on the server, and the members' listeners own every partition exactly once (evenly)."""
        members = list(members)
        owned = [m.owned for m in members]
        union = frozenset().union(*owned)
        if union != frozenset(range(partitions)) or sum(len(o) for o in owned) != partitions:
            return False
        if balanced and max(len(o) for o in owned) - min(len(o) for o in owned) > 1:
            return False
        return self.server.group_state(group_id) == "Stable"

    def wait_settled(self, group_id: str, members: Iterable[Member], what: str = "the group to settle",
                     timeout_s: float = WAIT_S, balanced: bool = True) -> float:
        members = list(members)
        return wait_until(lambda: self.settled(group_id, members, balanced=balanced), what, timeout_s,
                          explain=lambda: self.explain(group_id))

    @staticmethod
    def now() -> float:
        """The clock of every timestamp in the ledger (CLOCK_MONOTONIC, shared with the workers)."""
        return time.monotonic()

    def wait_until(self, predicate: Callable[[], bool], what: str, timeout_s: float = WAIT_S,
                   group_id: Optional[str] = None) -> float:
        return wait_until(predicate, what, timeout_s, explain=lambda: self.explain(group_id))

    def wait_quiet(self, group_id: str, quiet_s: float = 1.0, timeout_s: float = WAIT_S) -> int:
        """Until the group has been Stable in one generation for ``quiet_s``; that generation.

        A member can still be finishing a rebalance of its own when the listeners already show a
        settled group (kafka-python's leader rejoins once its metadata snapshot catches up with the
        assignment it made): tests that count generations start from a quiet group.
        """
        seen: List[Tuple[Optional[int], float]] = [(None, time.monotonic())]

        def quiet() -> bool:
            group = self.group(group_id)
            generation = None if group is None or group["state"] != "Stable" else group["generation"]
            if generation is None or generation != seen[0][0]:
                seen[0] = (generation, time.monotonic())
                return False
            return time.monotonic() - seen[0][1] >= quiet_s
        wait_until(quiet, f"group {group_id} to stay Stable for {quiet_s} s", timeout_s,
                   explain=lambda: self.explain(group_id))
        assert seen[0][0] is not None
        return seen[0][0]

    def preempted_syncs(self, since: float) -> int:
        """SyncGroups answered REBALANCE_IN_PROGRESS since ``since``: a member that lost a generation.

        In the classic protocol (Kafka's coordinator as ours) the leader's SyncGroup makes the group
        Stable, so a cooperative leader that must revoke can rejoin before a follower has sent its
        SyncGroup; the new rebalance answers that SyncGroup with REBALANCE_IN_PROGRESS and the
        follower learns what it must revoke one generation late: one more round.
        """
        return sum(1 for e in self.server.trace("SyncGroup")
                   if e.received_ms >= since * 1000 and e.error_code == 27)

    def lost_joins(self, since: float) -> int:
        """Joins kafka-python members threw away after ``since`` (``client_worker._report_lost_joins``)."""
        return sum(1 for e in self.ledger.events(kind="lost_join") if e["t"] > since)

    def wait_consumed(self, values: int, what: str = "every record to be consumed",
                      timeout_s: float = WAIT_S, group_id: Optional[str] = None) -> float:
        expected = {f"v{i:04d}" for i in range(values)}
        return wait_until(lambda: expected <= self.ledger.values(), what, timeout_s,
                          explain=lambda: self.explain(group_id))

    def acked_commits(self) -> Dict[int, int]:
        """The highest offset each partition's commits reached, as the members saw them acknowledged."""
        acked: Dict[int, int] = {}
        for _, _, p, offset in self.ledger.commits():
            acked[p] = max(acked.get(p, 0), offset)
        return acked

    def wait_caught_up(self, topic: str, group_id: str, timeout_s: float = WAIT_S) -> float:
        """Until the members have consumed and committed every partition to its end."""
        end = {p: o for p, o in self.end_offsets(topic).items() if o > 0}
        return wait_until(lambda: all(self.acked_commits().get(p, 0) >= o for p, o in end.items()),
                          "the members to commit every partition to its end", timeout_s,
                          explain=lambda: f"end offsets {end}, acked commits {self.acked_commits()}\n"
                                          + self.explain(group_id))

    def explain(self, group_id: Optional[str] = None) -> str:
        lines = []
        if group_id is not None:
            try:
                lines.append(f"group: {self.group(group_id)}")
            except Exception as error:  # diagnostics only
                lines.append(f"group: unreadable ({error!r})")
        lines.append(f"consumed {len(self.ledger.values())} distinct records")
        reached: Dict[int, int] = {}
        for _, _, p, o, *_ in self.ledger.deliveries():
            reached[p] = max(reached.get(p, 0), o + 1)
        lines.append(f"handed out up to {dict(sorted(reached.items()))}, acked commits "
                     f"{dict(sorted(self.acked_commits().items()))}")
        for m in self.members:
            events = [(e["e"], e.get("p")) for e in m.listener_events()][-6:]
            lines.append(f"{m.name}: alive={m.alive} owned={sorted(m.owned)} last events={events}")
            failed = self.ledger.events(m.name, "commit_failed")[-2:]
            if failed:
                lines.append(f"  commit failures: {[e['err'] for e in failed]}")
            stderr = m.stderr(800)
            if stderr.strip():
                lines.append("  stderr: " + stderr.replace("\n", "\n    "))
        return "\n".join(lines)


@pytest.fixture
def client_matrix(tmp_path):
    """A :class:`ClientMatrix` over a fresh 3-broker server (no initial rebalance delay)."""
    no_delay = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0)
    with KafkaServer(brokers=3, coordinator=no_delay) as server:
        matrix = ClientMatrix(server, tmp_path)
        try:
            yield matrix
        finally:
            matrix.stop_all()
