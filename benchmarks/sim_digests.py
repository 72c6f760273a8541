"""Digests of whole simulator runs, to show a speed-up of kgroup.sim changes nothing it simulates.

    python -m benchmarks.sim_digests record /tmp/before.json   # before a change
    python -m benchmarks.sim_digests check /tmp/before.json    # after it: exit 1 on any difference

A digest is ``Verdict.digest()``: the history's text, the violations, the coverage, the overlaps, the
simulated time, the assignor and the schedule.  The set mixes the test configuration, static
members, static bounces, the issue's throughput shape, KIP-848 members and issue 9's fault campaign.
``tests/sim/test_history_digest.py`` pins four of these in the test run.
"""
from __future__ import annotations

import json
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Dict, List, Tuple

from kgroup.sim import SimConfig, run
from kgroup.sim.fault_campaign import run_seed as run_campaign_seed

SMALL = SimConfig(members=3, partitions=6, duration_ms=10_000, max_faults=5)
CASES: List[Tuple[str, int]] = (
    [("small", seed) for seed in range(40)]
    + [("static", seed) for seed in range(40, 50)]
    + [("static-bounce", seed) for seed in range(50, 55)]
    + [("issue-shape", seed) for seed in range(5)]
    + [("kip848", seed) for seed in range(60, 70)]
    + [("fault-campaign", seed) for seed in range(20)]
)


def _config(kind: str) -> SimConfig:
    if kind == "small":
        return SMALL
    if kind == "static":
        return SimConfig(members=3, partitions=6, duration_ms=10_000, max_faults=5, static=True)
    if kind == "static-bounce":
        return SimConfig(members=3, partitions=6, duration_ms=10_000, max_faults=5, static=True,
                         faults="static-bounce")
    if kind == "issue-shape":
        return SimConfig()
    if kind == "kip848":
        return SimConfig(members=3, partitions=6, duration_ms=10_000, max_faults=5, group_protocol="consumer")
    raise ValueError(kind)


def _one(case: Tuple[str, int]) -> str:
    kind, seed = case
    verdict = run_campaign_seed(seed) if kind == "fault-campaign" else run(seed, _config(kind))
    return verdict.digest()


def digests() -> Dict[str, str]:
    with ProcessPoolExecutor(2) as pool:
        values = list(pool.map(_one, CASES))
    return {f"{kind}:{seed}": value for (kind, seed), value in zip(CASES, values)}


def main(argv: List[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("record", "check"):
        print(__doc__)
        return 2
    action, path = argv
    now = digests()
    if action == "record":
        with open(path, "w") as out:
            json.dump(now, out, indent=1, sort_keys=True)
        print(f"recorded {len(now)} digests in {path}")
        return 0
    with open(path) as recorded_file:
        recorded = json.load(recorded_file)
    changed = sorted(key for key in recorded if recorded[key] != now.get(key))
    print(f"{len(recorded) - len(changed)} of {len(recorded)} runs identical")
    for key in changed:
        print(f"  changed: {key}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
