"""Run the scenarios against a broker, compare with a recording, report, and record Kafka's answers.

A recording is JSON: the Kafka version and settings it was made with, and for each scenario its
area, description and ``steps`` (``[label, normalised answer]``, in order; a scenario that could not
go on ends with ``["stopped", why]``).
"""
from __future__ import annotations

import fnmatch
import json
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

import attrs

from kgroup.broker_conformance.normalise import canonical
from kgroup.broker_conformance.scenario import AREAS, SCENARIOS, ConformanceScenario, run_scenario
from kgroup.errors import KGroupError

__all__ = ["RECORDED_DIR", "ScenarioResult", "SuiteResult", "compare_steps", "default_recording",
           "load_recording", "record_kafka", "run_suite", "select", "write_recording"]

RECORDED_DIR = Path(__file__).parent / "recorded"
#: The broker settings every recording and every check assume (Apache Kafka's test configuration in
#: kgroup.testing.apache_kafka.node_properties; kgroup's server is started with the same).
SETTINGS = {
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 100,
    "group.max.session.timeout.ms": 1_800_000,
    "group.consumer.session.timeout.ms": 10_000,
    "group.consumer.heartbeat.interval.ms": 500,
    "offsets.topic.num.partitions": 5,
    "auto.create.topics.enable": True,
    "num.partitions": 1,
    "nodes": 1,
}


class RecordingError(KGroupError):
    """A recording file is missing or not a recording."""


@attrs.frozen
class ScenarioResult:
    scenario: ConformanceScenario
    steps: List[List[Any]]
    expected: Optional[List[List[Any]]]
    diffs: List[str]
    elapsed_s: float

    @property
    def ok(self) -> bool:
        return not self.diffs


@attrs.frozen
class SuiteResult:
    results: List[ScenarioResult]

    @property
    def divergent(self) -> List[ScenarioResult]:
        return [r for r in self.results if not r.ok]

    def by_area(self) -> Dict[str, Dict[str, int]]:
        table = {area: {"scenarios": 0, "divergences": 0} for area in AREAS}
        for result in self.results:
            table[result.scenario.area]["scenarios"] += 1
            table[result.scenario.area]["divergences"] += 0 if result.ok else 1
        return table

    def report(self, verbose: bool = False) -> str:
        lines = []
        for result in self.results:
            mark = "ok  " if result.ok else "DIFF"
            lines.append(f"{mark} {result.scenario.scenario_id} ({result.elapsed_s:.2f} s)")
            if not result.ok or verbose:
                lines.extend(f"       {line}" for line in result.diffs)
        lines.append("")
        lines.append(f"{'area':<14} {'scenarios':>9} {'divergences':>11}")
        for area, row in self.by_area().items():
            if row["scenarios"]:
                lines.append(f"{area:<14} {row['scenarios']:>9} {row['divergences']:>11}")
        lines.append(f"{'total':<14} {len(self.results):>9} {len(self.divergent):>11}")
        return "\n".join(lines)


def select(patterns: Optional[Sequence[str]] = None) -> List[ConformanceScenario]:
    """Scenarios whose id matches any of the shell-style ``patterns`` (all when none); a pattern
    without wildcards matches ids that contain it."""
    load_all()
    if not patterns:
        return list(SCENARIOS.values())
    globs = [p if any(c in p for c in "*?[") else f"*{p}*" for p in patterns]
    chosen = [s for s in SCENARIOS.values() if any(fnmatch.fnmatchcase(s.scenario_id, g) for g in globs)]
    if not chosen:
        raise KGroupError(f"no scenario matches {', '.join(patterns)}")
    return chosen


def load_all() -> None:
    from kgroup.broker_conformance import (  # noqa: F401  (registration by import)
        scenarios_broker, scenarios_classic, scenarios_consumer, scenarios_groups, scenarios_offsets,
        scenarios_static, scenarios_transactions,
    )


def compare_steps(expected: Optional[List[List[Any]]], actual: List[List[Any]]) -> List[str]:
    """One line per difference: missing or extra steps, labels, and each differing field's path."""
    if expected is None:
        return ["not in the recording"]
    diffs: List[str] = []
    for index in range(max(len(expected), len(actual))):
        if index >= len(actual):
            diffs.append(f"step {index + 1} {expected[index][0]}: missing (expected "
                         f"{_short(expected[index][1])})")
            continue
        if index >= len(expected):
            diffs.append(f"step {index + 1} {actual[index][0]}: extra step ({_short(actual[index][1])})")
            continue
        (want_label, want), (got_label, got) = expected[index], actual[index]
        if want_label != got_label:
            if got_label == "stopped":
                diffs.append(f"step {index + 1} {want_label}: the scenario stopped: {got}")
            else:
                diffs.append(f"step {index + 1}: expected {want_label!r}, got {got_label!r}")
            continue
        diffs.extend(f"step {index + 1} {want_label}: {line}" for line in _diff_value(want, got, ""))
    return diffs


def _diff_value(want: Any, got: Any, path: str) -> List[str]:
    if isinstance(want, dict) and isinstance(got, dict):
        out: List[str] = []
        for key in sorted(set(want) | set(got)):
            sub = f"{path}.{key}"
            if key not in got:
                out.append(f"{sub}: missing")
            elif key not in want:
                out.append(f"{sub}: unexpected {_short(got[key])}")
            else:
                out.extend(_diff_value(want[key], got[key], sub))
        return out
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        out = []
        for index, (w, g) in enumerate(zip(want, got)):
            out.extend(_diff_value(w, g, f"{path}[{index}]"))
        return out
    if canonical(want) == canonical(got):
        return []
    return [f"{path or 'answer'}: expected {_short(want)}, got {_short(got)}"]


def _short(value: Any, limit: int = 160) -> str:
    text = canonical(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def run_suite(bootstrap: str, expected: Optional[Dict[str, Any]] = None,
              scenarios: Optional[Iterable[ConformanceScenario]] = None,
              progress: Optional[Callable[[ScenarioResult], None]] = None) -> SuiteResult:
    """Run ``scenarios`` (default: all) one after the other against ``bootstrap``; compare each with
    ``expected`` (a recording's ``scenarios`` map) when given."""
    chosen = list(scenarios) if scenarios is not None else select()
    _warm_up(bootstrap)
    results = []
    for item in chosen:
        began = time.monotonic()
        steps, problem = run_scenario(bootstrap, item)
        if problem is not None:
            steps.append(["stopped", problem])
        want = None if expected is None else (expected.get(item.scenario_id) or {}).get("steps")
        diffs = compare_steps(want, steps) if expected is not None else []
        result = ScenarioResult(item, steps, want, diffs, time.monotonic() - began)
        results.append(result)
        if progress is not None:
            progress(result)
    return SuiteResult(results)


def _warm_up(bootstrap: str) -> None:
    """Find a coordinator once before any scenario: a fresh broker creates ``__consumer_offsets``
    then, with its configured partition count, whatever the first scenario does."""
    from kgroup.broker_conformance.scenario import ScenarioContext, ScenarioError

    context = ScenarioContext(bootstrap, "warm-up")
    try:
        context.coordinator(context.name("g"))
    except (ScenarioError, OSError):
        pass  # the scenarios will report what is wrong
    finally:
        context.close()


def default_recording() -> Path:
    from kgroup.testing.apache_kafka import KAFKA_VERSION

    return RECORDED_DIR / f"kafka-{KAFKA_VERSION}.json"


def load_recording(path: Optional[Path] = None) -> Dict[str, Any]:
    path = Path(path) if path is not None else default_recording()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise RecordingError(f"no recording at {path}") from None
    except (OSError, ValueError) as error:
        raise RecordingError(f"{path}: not a readable recording ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("scenarios"), dict):
        raise RecordingError(f"{path}: not a conformance recording (no 'scenarios' map)")
    return data


def write_recording(result: SuiteResult, path: Path, kafka_version: str) -> None:
    data = {
        "kafka_version": kafka_version,
        "recorded_by": "kgroup.broker_conformance.record_kafka",
        "settings": SETTINGS,
        "scenarios": {r.scenario.scenario_id: {"area": r.scenario.area, "description": r.scenario.description,
                                               "steps": r.steps} for r in result.results},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def record_kafka(path: Optional[Path] = None, patterns: Optional[Sequence[str]] = None,
                 progress: Optional[Callable[[ScenarioResult], None]] = None) -> SuiteResult:
    """Start the pinned Apache Kafka (1 node), run the suite, write its answers to ``path``
    (default ``recorded/kafka-<version>.json``).  With ``patterns`` only those scenarios are
    re-recorded and the others are kept from the existing file."""
    from kgroup.testing.apache_kafka import KAFKA_VERSION, ApacheKafkaCluster

    target = Path(path) if path is not None else default_recording()
    with ApacheKafkaCluster(nodes=1) as kafka:
        result = run_suite(kafka.bootstrap_servers, scenarios=select(patterns), progress=progress)
    stopped = [r.scenario.scenario_id for r in result.results if r.steps and r.steps[-1][0] == "stopped"]
    if stopped:
        raise RecordingError(f"not recorded: scenarios stopped on Kafka itself: {', '.join(stopped)}")
    if patterns and target.exists():
        old = load_recording(target)["scenarios"]
        kept = [ScenarioResult(SCENARIOS[i], v["steps"], None, [], 0.0) for i, v in old.items()
                if i in SCENARIOS and i not in {r.scenario.scenario_id for r in result.results}]
        result = SuiteResult(kept + result.results)
    ordered = SuiteResult(sorted(result.results, key=lambda r: list(SCENARIOS).index(r.scenario.scenario_id)))
    write_recording(ordered, target, KAFKA_VERSION)
    return ordered
