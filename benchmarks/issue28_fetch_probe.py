"""Consume throughput and server CPU per consumed record of two kgroup checkouts, in alternating
rounds (issue 28, the Fetch path).

Each round starts ``python -m kgroup.server --brokers 3`` from one checkout, fills a fresh
3-partition topic with 1 KB records (confluent-kafka, acks=all), then reads it all with
confluent-kafka and again with kafka-python (benchmarks/_wire.py's consumers: assign(), from the
beginning); for each it reports the consume rate and the server process's CPU time (user +
system) during the read, per record (to 0.01 us: the CPU clock ticks every 10 ms, so read at least
200,000 records for a figure good to a few per cent).  On a loaded, shared machine the CPU per
record moves far less than the rate.

    python -m benchmarks.issue28_fetch_probe --base /tmp/fetchbase --rounds 3
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Dict, List, Tuple

from benchmarks import _wire

REPO = Path(__file__).resolve().parent.parent


def _round(server_path: str, records_confluent: int,
           records_kafka_python: int) -> Dict[str, Tuple[float, float]]:
    """{client: (records/s, server CPU us per record)} for one server run."""
    out: Dict[str, Tuple[float, float]] = {}
    with _wire.kgroup_server(server_path=server_path) as server:
        for client, count, consume in (("confluent", records_confluent, _wire.consume_confluent),
                                       ("kafka-python", records_kafka_python, _wire.consume_kafka_python)):
            topic = _wire.new_topic(server, f"fetch-{client}")
            _wire.produce_confluent(server.bootstrap, topic, count)
            time.sleep(0.5)  # replication and the producer's last acks settle before the CPU is read
            cpu_before = _wire.cpu_s(server.pid)
            stored = count + _wire.PARTITIONS  # produce_confluent's warm-up wrote one per partition
            rate = consume(server.bootstrap, topic, stored)
            cpu = _wire.cpu_s(server.pid) - cpu_before
            out[client] = (rate, cpu / stored * 1e6)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the 'before' checkout (holding kgroup/)")
    parser.add_argument("--after", default=str(REPO), help="the 'after' checkout (default: this one)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--records-confluent", type=int, default=100_000)
    parser.add_argument("--records-kafka-python", type=int, default=30_000)
    args = parser.parse_args()
    results: Dict[str, Dict[str, List[Tuple[float, float]]]] = {"before": {}, "after": {}}
    for index in range(args.rounds):
        order = [("before", args.base), ("after", args.after)]
        if index % 2:
            order.reverse()
        for label, path in order:
            for client, figures in _round(path, args.records_confluent, args.records_kafka_python).items():
                results[label].setdefault(client, []).append(figures)
                print(f"round {index + 1} {label:6} {client:12} {figures[0]:9.0f} rec/s "
                      f"{figures[1]:6.2f} us CPU/record", flush=True)
    print()
    for client in ("confluent", "kafka-python"):
        for label in ("before", "after"):
            runs = results[label][client]
            print(f"{client:12} {label:6} rate median {statistics.median(r for r, _ in runs):9.0f} rec/s "
                  f"(best {max(r for r, _ in runs):.0f}); server CPU/record median "
                  f"{statistics.median(c for _, c in runs):.2f} us (min {min(c for _, c in runs):.2f})")


if __name__ == "__main__":
    main()
