"""Real time for ten stock confluent-kafka consumers to absorb an eleventh: classic vs KIP-848.

    python -m benchmarks.group_protocols_confluent [--repeats N] [--interval-ms MS]

The real-client counterpart of ``bench_group_protocols.py`` (which uses kgroup's own members on a
mock clock).  On kgroup's wire server (``KafkaServer``, one broker, in this process), ten
confluent-kafka consumers form a group over a 66-partition topic; once the group is settled an
eleventh subscribes, and the clock runs from its ``subscribe()`` until every one of the eleven
holds exactly six partitions, together all 66 (from its assign/revoke callbacks), and the coordinator
says Stable.  Each consumer polls on its own thread.

* classic: ``partition.assignment.strategy=cooperative-sticky`` (JoinGroup/SyncGroup, KIP-429's
  two rounds), ``heartbeat.interval.ms`` = the interval;
* KIP-848: ``group.protocol=consumer`` (server assignor ``uniform``), the coordinator's
  ``group.consumer.heartbeat.interval.ms`` = the interval.

Fairness: both protocols run at one heartbeat cadence (``--interval-ms``, 3000 by default:
classic's client default; Kafka's KIP-848 default is 5000, also measured with
``--kip848-default``), since either protocol's handover waits for heartbeats.
``group.initial.rebalance.delay.ms`` is 0 for both: Kafka's coordinator applies it only to the
first rebalance of an *empty* classic group (InitialDelayedJoin), never to a member joining a
formed group, so it would only slow the setup, and only the classic side's.  Nothing is
produced: the time is the protocol's alone.  Each protocol is measured ``--repeats`` times on a
fresh server and group (the join lands at a different moment of the heartbeat cycle each time).
"""
from __future__ import annotations

import argparse
import statistics
import threading
import time
from typing import List

import confluent_kafka

from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.server import KafkaServer

MEMBERS = 10
PARTITIONS_PER_MEMBER = 6
PARTITIONS = PARTITIONS_PER_MEMBER * (MEMBERS + 1)
TOPIC = "absorb"
GROUP = "absorb-group"
#: Bound on the group forming and on one join; far above what either protocol needs.
WAIT_S = 120.0


class Member:
    """One confluent-kafka consumer polling on its own thread."""

    def __init__(self, bootstrap: str, protocol: str, interval_ms: int, name: str) -> None:
        settings = {"bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": name,
                    "enable.auto.commit": False}
        if protocol == "classic":
            settings.update({"partition.assignment.strategy": "cooperative-sticky",
                             "heartbeat.interval.ms": interval_ms, "session.timeout.ms": 45_000})
        else:
            settings["group.protocol"] = "consumer"
        self.consumer = confluent_kafka.Consumer(settings)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name=name, daemon=True)

        self._lock = threading.Lock()
        self._owned: set = set()

    def start(self) -> None:
        # Both protocols hand partitions out incrementally here (cooperative-sticky, KIP-848):
        # the callbacks carry the change only.  They run on the polling thread.
        self.consumer.subscribe([TOPIC], on_assign=lambda c, ps: self._change(ps, True),
                                on_revoke=lambda c, ps: self._change(ps, False),
                                on_lost=lambda c, ps: self._change(ps, False))
        self._thread.start()

    def _change(self, partitions, assigned: bool) -> None:
        with self._lock:
            for tp in partitions:
                (self._owned.add if assigned else self._owned.discard)(tp.partition)

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.consumer.poll(0.05)

    def partitions(self) -> set:
        """What the callbacks gave (Consumer.assignment() would wait for the polling thread's poll)."""
        with self._lock:
            return set(self._owned)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.consumer.close()


def _settled(server: KafkaServer, members: List[Member]) -> bool:
    owned = [m.partitions() for m in members]
    share = PARTITIONS // len(members)
    balanced = all(share <= len(o) <= share + 1 for o in owned)
    return (balanced and sum(len(o) for o in owned) == PARTITIONS
            and len(set().union(*owned)) == PARTITIONS and server.group_state(GROUP) == "Stable")


def _wait(server: KafkaServer, members: List[Member], what: str) -> float:
    start = time.monotonic()
    while not _settled(server, members):
        if time.monotonic() - start > WAIT_S:
            raise TimeoutError(f"{what}: not settled after {WAIT_S} s")
        time.sleep(0.005)
    return time.monotonic() - start


def absorb_s(protocol: str, interval_ms: int) -> float:
    """Seconds from the eleventh member's subscribe() until the group settled with it."""
    config = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0,
                                    consumer_group_heartbeat_interval_ms=interval_ms)
    with KafkaServer(brokers=1, coordinator=config) as server:
        server.create_topic(TOPIC, PARTITIONS)
        members = [Member(server.bootstrap_servers, protocol, interval_ms, f"m{i}") for i in range(MEMBERS)]
        try:
            for member in members:
                member.start()
            _wait(server, members, f"{protocol}: ten members forming the group")
            time.sleep(1.0)  # past any follow-up round of the formation
            _wait(server, members, f"{protocol}: ten members still settled")
            newcomer = Member(server.bootstrap_servers, protocol, interval_ms, f"m{MEMBERS}")
            members.append(newcomer)
            started = time.monotonic()
            newcomer.start()
            while not _settled(server, members):
                if time.monotonic() - started > WAIT_S:
                    raise TimeoutError(f"{protocol}: the eleventh member not absorbed after {WAIT_S} s")
                time.sleep(0.005)
            return time.monotonic() - started
        finally:
            for member in members:
                member.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--interval-ms", type=int, default=3_000,
                        help="heartbeat interval of both protocols (classic client, KIP-848 coordinator)")
    parser.add_argument("--kip848-default", action="store_true",
                        help="also measure KIP-848 at Kafka's default 5000 ms coordinator interval")
    args = parser.parse_args()
    runs = [("classic cooperative-sticky", "classic", args.interval_ms),
            ("KIP-848 (group.protocol=consumer)", "consumer", args.interval_ms)]
    if args.kip848_default:
        runs.append(("KIP-848 (group.protocol=consumer)", "consumer", 5_000))
    print(f"confluent-kafka {confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]}), "
          f"{MEMBERS} members + 1 joining, {PARTITIONS} partitions")
    print("| protocol | heartbeat interval ms | seconds per run | median s |")
    print("|---|---|---|---|")
    for label, protocol, interval_ms in runs:
        times = [absorb_s(protocol, interval_ms) for _ in range(args.repeats)]
        print(f"| {label} | {interval_ms} | {', '.join(f'{t:.2f}' for t in times)} | "
              f"{statistics.median(times):.2f} |", flush=True)


if __name__ == "__main__":
    main()
