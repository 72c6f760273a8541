"""Transaction throughput (issue 26): kgroup's wire broker, Tansu and Apache Kafka in one run.

One confluent-kafka transactional producer commits transactions of 10 records (1 KB each, one
3-partition topic, replication factor 3 on kgroup's 3 brokers, 1 on Tansu and on Kafka's single
node); the figure is committed transactions per second over ``--transactions`` of them after a
warm-up of 20, and the p50 / p99 of one transaction's begin -> commit time.  Rounds alternate which
server goes first; the best round counts.  A server that refuses transactions is reported as such.

    python -m benchmarks.transactions [--rounds 3] [--transactions 300] [--no-kafka] [--no-tansu]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Callable, ContextManager, Dict, Iterator, List, Optional

if __package__ in (None, ""):  # python benchmarks/transactions.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._wire import Server, kgroup_server, new_topic, percentile, tansu_server  # noqa: E402

RECORDS_PER_TRANSACTION = 10
RECORD_BYTES = 1024
WARMUP_TRANSACTIONS = 20
STEP_S = 30.0


@contextlib.contextmanager
def apache_kafka_server() -> Iterator[Server]:
    """Apache Kafka (one KRaft node, kgroup.testing.apache_kafka's settings) as a benchmark Server."""
    from kgroup.testing.apache_kafka import ApacheKafkaCluster

    started = time.perf_counter()
    cluster = ApacheKafkaCluster(nodes=1).start()
    try:
        proc = cluster.node_process(cluster.node_ids[0])
        assert proc is not None
        yield Server(f"Apache Kafka {cluster.version}", proc, cluster.bootstrap_servers, 1, 1,
                     time.perf_counter() - started)
    finally:
        cluster.close()


def measure(server: Server, transactions: int) -> Dict[str, object]:
    """Transactions per second and begin -> commit latencies of one producer on ``server``."""
    from confluent_kafka import KafkaException, Producer

    topic = new_topic(server, "txn-bench")
    producer = Producer({"bootstrap.servers": server.bootstrap, "linger.ms": 0, "compression.type": "none",
                         "transactional.id": f"bench-{uuid.uuid4().hex}"})
    payload = os.urandom(RECORD_BYTES)
    try:
        producer.init_transactions(STEP_S)
    except KafkaException as refused:
        return {"refused": refused.args[0].name()}
    latencies_ms: List[float] = []

    def one() -> None:
        began = time.perf_counter()
        producer.begin_transaction()
        for _ in range(RECORDS_PER_TRANSACTION):
            producer.produce(topic, value=payload)
        producer.commit_transaction(STEP_S)
        latencies_ms.append((time.perf_counter() - began) * 1000)

    for _ in range(WARMUP_TRANSACTIONS):
        one()
    latencies_ms.clear()
    started = time.perf_counter()
    for _ in range(transactions):
        one()
    elapsed_s = time.perf_counter() - started
    return {"transactions_per_s": transactions / elapsed_s, "p50_ms": percentile(latencies_ms, 50),
            "p99_ms": percentile(latencies_ms, 99), "mean_ms": statistics.fmean(latencies_ms)}


def run(rounds: int, transactions: int, with_tansu: bool, with_kafka: bool) -> Dict[str, List[dict]]:
    servers: List[Callable[[], ContextManager[Server]]] = [lambda: kgroup_server(3)]
    if with_tansu:
        servers.append(tansu_server)
    if with_kafka:
        servers.append(apache_kafka_server)
    results: Dict[str, List[dict]] = {}
    for round_index in range(rounds):
        order = servers if round_index % 2 == 0 else list(reversed(servers))
        for start in order:
            with start() as server:
                label = server.name.split(" (")[0]
                result = measure(server, transactions)
                results.setdefault(label, []).append(result)
                print(f"round {round_index + 1}: {label}: {_cell(result)}", flush=True)
    return results


def _cell(result: dict) -> str:
    if "refused" in result:
        return f"refused ({result['refused']})"
    return (f"{result['transactions_per_s']:.0f} txn/s, p50 {result['p50_ms']:.1f} ms, "
            f"p99 {result['p99_ms']:.1f} ms")


def _best(rows: List[dict]) -> Optional[dict]:
    measured = [row for row in rows if "refused" not in row]
    return max(measured, key=lambda row: row["transactions_per_s"]) if measured else None


def report(results: Dict[str, List[dict]], transactions: int) -> str:
    kgroup = _best(results.get("kgroup", []))
    lines = [f"Transactions of {RECORDS_PER_TRANSACTION} x {RECORD_BYTES} B records, one confluent-kafka "
             f"producer, {transactions} per round, best of {len(results.get('kgroup', []))} rounds",
             "", "| server | txn/s | p50 ms | p99 ms | kgroup / server txn/s |", "|---|---|---|---|---|"]
    for label, rows in results.items():
        best = _best(rows)
        if best is None:
            lines.append(f"| {label} | {_cell(rows[0])} | | | |")
            continue
        ratio = "" if kgroup is None or label == "kgroup" else \
            f"{kgroup['transactions_per_s'] / best['transactions_per_s']:.2f}"
        lines.append(f"| {label} | {best['transactions_per_s']:.0f} | {best['p50_ms']:.1f} | "
                     f"{best['p99_ms']:.1f} | {ratio} |")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--transactions", type=int, default=300)
    parser.add_argument("--no-tansu", action="store_true", help="leave Tansu out")
    parser.add_argument("--no-kafka", action="store_true", help="leave Apache Kafka out")
    args = parser.parse_args(argv)
    results = run(args.rounds, args.transactions, not args.no_tansu, not args.no_kafka)
    print(report(results, args.transactions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
