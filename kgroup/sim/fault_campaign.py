"""Issue 9's seeded fault campaign, as families of :mod:`kgroup.sim` configurations.

A seed picks, from its own stream ``Random("campaign-<seed>")``, a *family*, a group size (2-4
members), a partition count (4, 6 or 8), the family's assignor and how the applications commit
(``mixed``, or ``retried``: retried until a deadline while the loop keeps polling, as issue 9's
applications did, see :mod:`kgroup.sim.app`); the faults come from the
simulator's fault stream (:func:`kgroup.sim.generate_schedule`, ``Random("faults-<seed>")``) and the
run, every application's behaviour and every check are the simulator's (:func:`kgroup.sim.run`,
:mod:`kgroup.sim.checker`): this module only chooses what to simulate.

Families: ``eager`` (range or sticky), ``cooperative`` (cooperative-sticky), ``upgrade`` (Kafka's
rolling upgrade, :data:`kgroup.sim.simulator.ASSIGNOR_MIXES`: members listing
``("cooperative-sticky", "range")``, which are eager, beside members on cooperative-sticky alone),
``static`` (static members under every fault, restarts included) and ``static-bounce`` (static
members, only restarts within half the session timeout; the group must not rebalance).
"""
from __future__ import annotations

import random
from typing import Optional, Sequence

import attrs

from kgroup.sim import Schedule, SimConfig, Verdict, generate_schedule, run
from kgroup.sim.app import RETRIED

__all__ = ["FAMILIES", "Scenario", "campaign_summary", "plan", "run_scenario", "run_seed"]

FAMILIES = ("eager", "cooperative", "upgrade", "static", "static-bounce")
#: Simulated time with producers and faults (faults fall in ``[2 s, DURATION_MS - 5 s]``).
DURATION_MS = 15_000
MAX_FAULTS = 6


@attrs.frozen
class Scenario:
    seed: int
    family: str
    config: SimConfig
    schedule: Schedule

    def describe(self) -> str:
        config = self.config
        lines = [f"seed {self.seed}: family {self.family}, {config.members} members, {config.partitions} "
                 f"partitions, {config.assignor}{' static' if config.static else ''}"]
        lines += [f"  {fault}" for fault in self.schedule.faults]
        return "\n".join(lines)


def plan(seed: int, family: Optional[str] = None) -> Scenario:
    """The scenario of ``seed`` (in ``family`` if given: the size and the faults stay the seed's)."""
    rng = random.Random(f"campaign-{seed}")
    drawn = rng.choice(FAMILIES)
    family = family or drawn
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}")
    members = rng.randint(2, 4)
    partitions = rng.choice((4, 6, 8))
    if family == "eager":
        assignor = rng.choice(("range", "sticky"))
    elif family == "cooperative":
        assignor = "cooperative-sticky"
    elif family == "upgrade":
        assignor = "upgrade"
    else:
        assignor = rng.choice(("range", "sticky", "cooperative-sticky"))
    # Half the seeds commit as issue 9's applications did: retried until a deadline, without waiting.
    commit_mode = rng.choice(("mixed", RETRIED))
    config = SimConfig(members=members, partitions=partitions, assignor=assignor, commit_mode=commit_mode,
                       static=family in ("static", "static-bounce"),
                       faults="static-bounce" if family == "static-bounce" else "mixed",
                       duration_ms=DURATION_MS, max_faults=MAX_FAULTS)
    return Scenario(seed, family, config, generate_schedule(seed, config.fault_plan()))


def run_scenario(scenario: Scenario) -> Verdict:
    return run(scenario.schedule, scenario.config)


def run_seed(seed: int, family: Optional[str] = None) -> Verdict:
    return run_scenario(plan(seed, family))


def campaign_summary(verdicts: Sequence[Verdict]) -> str:
    failed = [v for v in verdicts if not v.ok]
    lines = [f"{len(verdicts)} seeds, {len(failed)} with violations"]
    for verdict in failed[:10]:
        lines += [verdict.describe(), verdict.schedule.to_text().rstrip()]
    return "\n".join(lines)
