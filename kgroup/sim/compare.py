"""The comparison report behind ``kgroup compare``: group configurations on the same fault schedules.

The variants: each classic assignor (range, roundrobin, sticky: eager; cooperative-sticky: KIP-429) and
the consumer protocol of KIP-848 with the coordinator's ``uniform`` assignor, each with dynamic and
with static members.  The migration scenarios (issue 27) bring their own variants: a rolling restart of
every member (:mod:`kgroup.sim.rollout`) that keeps an eager, a cooperative or a KIP-848 group on its
protocol, against the same rolling restart upgrading the classic group online to the consumer protocol
(and downgrading a KIP-848 group back), on the same fault schedules and the same restart plan.

For every seed of a *scenario* one schedule is drawn, once, from the seed's fault stream with a plan
that does not depend on the variant (members, partitions, brokers and timeouts are the base config's;
``bounce`` is always drawable), and every *variant* (assignor x static or dynamic membership) replays
exactly that schedule with the seed's own application, producer and network streams
(:func:`kgroup.sim.run` with a :class:`~kgroup.sim.schedule.Schedule`).  A ``bounce`` restarts a
static member with its ``group.instance.id``; a dynamic member restarts as a new member, as a
redeployed dynamic consumer does.

The runs go through :func:`kgroup.sim.campaign.run_jobs` (the process pool) and come back with their
:class:`~kgroup.sim.metrics.RunMetrics`; :func:`summarise` aggregates them (pure), and
:func:`write_report` writes ``README.md`` with the tables and one PNG per scenario (matplotlib, Agg).
"""
from __future__ import annotations

import os
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import attrs

from kgroup.core.member.consumer import CLASSIC, CONSUMER
from kgroup.errors import ConfigError
from kgroup.sim.campaign import CampaignResult, Job, SeedOutcome, run_jobs
from kgroup.sim.metrics import percentile
from kgroup.sim.schedule import Schedule, generate_schedule
from kgroup.sim.simulator import ASSIGNORS, SimConfig

__all__ = ["ALL_SCENARIOS", "MIGRATION_SCENARIOS", "SCENARIOS", "Comparison", "ComparisonScenario", "Variant",
           "VariantSummary", "default_variants", "jobs", "migration_variants", "run_comparison",
           "scenario_schedule", "summarise", "variant_config", "write_report"]

#: The assignors of the eager protocol; cooperative-sticky is the cooperative one (KIP-429).
EAGER_ASSIGNORS = ("range", "roundrobin", "sticky")


@attrs.frozen
class Variant:
    assignor: str
    static: bool
    #: ``classic`` or ``consumer`` (KIP-848: ``assignor`` names the coordinator's assignor).
    group_protocol: str = CLASSIC
    #: A rolling restart of every member into this protocol (``""``: none; see :mod:`kgroup.sim.rollout`).
    rolling_restart_to: str = ""
    #: The restarted members' assignor when the rolling restart changes the protocol.
    restart_assignor: str = ""

    @property
    def migrates(self) -> bool:
        return bool(self.rolling_restart_to) and self.rolling_restart_to != self.group_protocol

    @property
    def name(self) -> str:
        kip848 = " (KIP-848)" if self.group_protocol == CONSUMER else ""
        if self.migrates:
            target = f"{self.restart_assignor}{' (KIP-848)' if self.rolling_restart_to == CONSUMER else ''}"
            return f"{self.assignor}{kip848} -> {target}: {self.protocol}"
        restart = ", rolling restart" if self.rolling_restart_to else ""
        return f"{self.assignor}{kip848} {'static' if self.static else 'dynamic'}{restart}"

    @property
    def protocol(self) -> str:
        """``eager``, ``cooperative`` (KIP-429), ``KIP-848``, or a migration: ``upgrade`` (classic to
        consumer) or ``downgrade``."""
        if self.migrates:
            return "upgrade" if self.rolling_restart_to == CONSUMER else "downgrade"
        if self.group_protocol == CONSUMER:
            return "KIP-848"
        return "eager" if self.assignor in EAGER_ASSIGNORS else "cooperative"


def migration_variants(classic_assignor: str) -> Tuple[Variant, ...]:
    """Dynamic members, every variant under the same rolling restart: range (eager), cooperative-sticky
    and KIP-848 (``uniform``) groups that stay on their protocol, the online upgrade of a
    ``classic_assignor`` group to KIP-848 and the downgrade of a KIP-848 group to ``classic_assignor``."""
    return (Variant("range", False, CLASSIC, CLASSIC), Variant("cooperative-sticky", False, CLASSIC, CLASSIC),
            Variant("uniform", False, CONSUMER, CONSUMER),
            Variant(classic_assignor, False, CLASSIC, CONSUMER, "uniform"),
            Variant("uniform", False, CONSUMER, CLASSIC, classic_assignor))


@attrs.frozen
class ComparisonScenario:
    name: str
    #: The fault plan's mode (:class:`~kgroup.sim.schedule.FaultPlan`): ``mixed`` or ``static-bounce``.
    faults: str
    description: str
    #: The scenario's own variants (the migration scenarios); empty: the comparison's.
    variants: Tuple[Variant, ...] = ()


_ROLLING = ("every member restarted once, one at a time (its consumer closed, back within half the session "
            "timeout, the next one 1-3 s later), during mixed faults")
SCENARIOS = (
    ComparisonScenario("mixed", "mixed",
                       "every fault kind (members, brokers, network, partitions), 1 to max-faults a seed"),
    ComparisonScenario(
        "bounces", "static-bounce",
        "rolling restarts only: 1 to 3 member restarts, each back within half the session timeout"),
)
#: Issue 27's "should we migrate?": run on request (``--scenarios migration-eager,migration-cooperative``).
MIGRATION_SCENARIOS = (
    ComparisonScenario(
        "migration-eager", "mixed",
        f"{_ROLLING}: range (eager) upgraded online to KIP-848, and KIP-848 downgraded to range, against "
        "the same rolling restart keeping each protocol", migration_variants("range")),
    ComparisonScenario(
        "migration-cooperative", "mixed",
        f"{_ROLLING}: cooperative-sticky upgraded online to KIP-848, and KIP-848 downgraded to "
        "cooperative-sticky, against the same rolling restart keeping each protocol",
        migration_variants("cooperative-sticky")),
)
#: Every scenario ``kgroup compare --scenarios`` knows; it runs :data:`SCENARIOS` unless told otherwise.
ALL_SCENARIOS = SCENARIOS + MIGRATION_SCENARIOS


def default_variants() -> Tuple[Variant, ...]:
    """Each classic assignor, then the consumer protocol (KIP-848) with the coordinator's ``uniform``
    assignor, each with dynamic and with static membership."""
    return tuple(Variant(assignor, static) for static in (False, True) for assignor in ASSIGNORS) + tuple(
        Variant("uniform", static, CONSUMER) for static in (False, True))


def scenario_schedule(seed: int, scenario: ComparisonScenario, base: SimConfig) -> Schedule:
    """The one schedule every variant of ``scenario`` replays for ``seed``: drawn with ``static`` set, so
    the plan (and with it the fault stream's draws) is the same whatever the variant's membership."""
    plan = attrs.evolve(base, static=True, faults=scenario.faults).fault_plan()
    return generate_schedule(seed, plan)


def variant_config(base: SimConfig, scenario: ComparisonScenario, variant: Variant) -> SimConfig:
    # ``static-bounce`` makes every member static and adds the no-rebalance check: only for static
    # variants; a dynamic variant replays the same bounces as plain restarts.
    faults = scenario.faults if variant.static or scenario.faults != "static-bounce" else "mixed"
    return attrs.evolve(base, assignor=variant.assignor, static=variant.static, faults=faults,
                        group_protocol=variant.group_protocol, rolling_restart_to=variant.rolling_restart_to,
                        rolling_restart_assignor=variant.restart_assignor if variant.migrates else "")


def jobs(seeds: Iterable[int], scenarios: Sequence[ComparisonScenario], variants: Sequence[Variant],
         base: SimConfig) -> List[Tuple[ComparisonScenario, Variant, Job]]:
    out: List[Tuple[ComparisonScenario, Variant, Job]] = []
    for scenario in scenarios:
        for seed in seeds:
            schedule = scenario_schedule(seed, scenario, base)
            out += [(scenario, variant, (schedule, variant_config(base, scenario, variant)))
                    for variant in scenario.variants or variants]
    return out


@attrs.frozen
class VariantSummary:
    """What ``label``'s runs add up to: totals, means a seed, and recovery percentiles over every fault
    of every seed (0 for a fault the group never became unstable after)."""

    label: str
    seeds: int
    violated_seeds: int
    faults: int
    unowned_partition_seconds: float
    records_processed_twice: int
    rebalances: int
    recoveries: int
    recovery_p50_ms: Optional[float]
    recovery_p99_ms: Optional[float]

    def per_seed(self, total: float) -> float:
        return total / self.seeds if self.seeds else 0.0


def summarise(label: str, outcomes: Sequence[SeedOutcome]) -> VariantSummary:
    recovery = [ms for o in outcomes for ms in o.metrics.recovery_ms]
    return VariantSummary(
        label=label, seeds=len(outcomes), violated_seeds=sum(not o.ok for o in outcomes),
        faults=sum(o.metrics.faults for o in outcomes),
        unowned_partition_seconds=sum(o.metrics.unowned_partition_ms for o in outcomes) / 1000,
        records_processed_twice=sum(o.metrics.records_processed_twice for o in outcomes),
        rebalances=sum(o.metrics.rebalances for o in outcomes), recoveries=len(recovery),
        recovery_p50_ms=percentile(recovery, 50), recovery_p99_ms=percentile(recovery, 99))


@attrs.frozen(eq=False)
class Comparison:
    base: SimConfig
    seeds: Tuple[int, ...]
    #: Per scenario name, per variant: its outcomes in seed order.
    outcomes: Dict[str, Dict[Variant, Tuple[SeedOutcome, ...]]]
    scenarios: Tuple[ComparisonScenario, ...]
    variants: Tuple[Variant, ...]
    result: CampaignResult

    def variants_of(self, scenario: str) -> Tuple[Variant, ...]:
        return tuple(self.outcomes[scenario])

    def summaries(self, scenario: str) -> List[VariantSummary]:
        return [summarise(v.name, self.outcomes[scenario][v]) for v in self.variants_of(scenario)]

    def pooled(self, scenario: str) -> List[VariantSummary]:
        """Eager against cooperative (dynamic members), dynamic against static (every assignor); none for a
        scenario with its own variants (each is one configuration already)."""
        runs = self.outcomes[scenario]
        if any(s.variants for s in self.scenarios if s.name == scenario):
            return []

        def union(keep: Callable[[Variant], bool]) -> List[SeedOutcome]:
            return [o for v in self.variants_of(scenario) if keep(v) for o in runs[v]]

        groups = [("eager, dynamic", lambda v: v.protocol == "eager" and not v.static),
                  ("cooperative, dynamic", lambda v: v.protocol == "cooperative" and not v.static),
                  ("KIP-848, dynamic", lambda v: v.protocol == "KIP-848" and not v.static),
                  ("dynamic, every assignor", lambda v: not v.static),
                  ("static, every assignor", lambda v: v.static)]
        return [summarise(label, union(keep)) for label, keep in groups if union(keep)]

    def failed(self) -> List[Tuple[str, Variant, SeedOutcome]]:
        return [(scenario, variant, o) for scenario, runs in self.outcomes.items()
                for variant, outcomes in runs.items() for o in outcomes if not o.ok]


def run_comparison(seeds: Iterable[int], base: SimConfig = SimConfig(),
                   scenarios: Sequence[ComparisonScenario] = SCENARIOS,
                   variants: Sequence[Variant] = default_variants(),
                   workers: Optional[int] = None,
                   progress: Optional[Callable[[int, int, int], None]] = None) -> Comparison:
    seeds = tuple(seeds)
    if not seeds or not scenarios or not variants:
        raise ConfigError(f"a comparison needs at least one seed, scenario and variant; got {len(seeds)} "
                          f"seed(s), {len(scenarios)} scenario(s), {len(variants)} variant(s)")
    planned = jobs(seeds, scenarios, variants, base)
    result = run_jobs([job for _s, _v, job in planned], workers, progress)
    outcomes: Dict[str, Dict[Variant, List[SeedOutcome]]] = {
        s.name: {v: [] for v in s.variants or variants} for s in scenarios}
    for (scenario, variant, _job), outcome in zip(planned, result.outcomes):
        outcomes[scenario.name][variant].append(outcome)
    frozen = {s: {v: tuple(runs) for v, runs in by_variant.items()} for s, by_variant in outcomes.items()}
    return Comparison(base, seeds, frozen, tuple(scenarios), tuple(variants), result)


# -- the report -------------------------------------------------------------------------------------

def _ms(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.0f}"


def _table(summaries: Sequence[VariantSummary], first: str) -> List[str]:
    lines = [f"| {first} | seeds | violated | faults | unowned partition-s / seed | processed twice / seed "
             "| rebalances / seed | recovery p50 ms | recovery p99 ms |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in summaries:
        lines.append(f"| {s.label} | {s.seeds} | {s.violated_seeds} | {s.faults} "
                     f"| {s.per_seed(s.unowned_partition_seconds):.2f} "
                     f"| {s.per_seed(s.records_processed_twice):.1f} | {s.per_seed(s.rebalances):.2f} "
                     f"| {_ms(s.recovery_p50_ms)} | {_ms(s.recovery_p99_ms)} |")
    return lines


def expectations(comparison: Comparison) -> List[Tuple[str, bool]]:
    """What the protocols promise, as ``(statement with the numbers, whether it held)``."""
    out: List[Tuple[str, bool]] = []
    for scenario in comparison.scenarios:
        if scenario.variants:
            out += _migration_expectations(comparison, scenario)
            continue
        pooled = {s.label: s for s in comparison.pooled(scenario.name)}
        dynamic, static = pooled.get("dynamic, every assignor"), pooled.get("static, every assignor")
        if scenario.faults == "static-bounce" and dynamic and static:
            a, b = static.per_seed(static.rebalances), dynamic.per_seed(dynamic.rebalances)
            out.append((f"{scenario.name}: static members rebalance less than dynamic ones "
                        f"({a:.2f} against {b:.2f} rebalances a seed; KIP-345)", a < b))
        eager, cooperative = pooled.get("eager, dynamic"), pooled.get("cooperative, dynamic")
        if eager and cooperative:
            a = cooperative.per_seed(cooperative.unowned_partition_seconds)
            b = eager.per_seed(eager.unowned_partition_seconds)
            out.append((f"{scenario.name}: cooperative members leave partitions unowned for less time than "
                        f"eager ones ({a:.2f} against {b:.2f} partition-seconds a seed; KIP-429)", a < b))
        kip848 = pooled.get("KIP-848, dynamic")
        if eager and kip848:
            a = kip848.per_seed(kip848.unowned_partition_seconds)
            b = eager.per_seed(eager.unowned_partition_seconds)
            out.append((f"{scenario.name}: KIP-848 members (no group-wide barrier) leave partitions unowned "
                        f"for less time than eager ones ({a:.2f} against {b:.2f} partition-seconds a seed)",
                        a < b))
    return out


def _classic_protocol(assignor: str) -> str:
    return "eager" if assignor in EAGER_ASSIGNORS else "cooperative"


def _migration_expectations(comparison: Comparison, scenario: ComparisonScenario) -> List[Tuple[str, bool]]:
    """Each migration converted the group in every seed, and how the upgrade's disruption compares with the
    same rolling restart of the group it started from and of a KIP-848 group."""
    out: List[Tuple[str, bool]] = []
    runs = comparison.outcomes[scenario.name]
    by_protocol = {v.protocol: v for v in runs}
    for variant, outcomes in runs.items():
        if not variant.migrates:
            continue
        ended = sum(o.metrics.final_group_type == variant.rolling_restart_to for o in outcomes)
        out.append((f"{scenario.name}: {variant.name} ended as a {variant.rolling_restart_to} group in every "
                    f"seed ({ended} of {len(outcomes)})", ended == len(outcomes)))
    upgrade = next((v for v in runs if v.protocol == "upgrade"), None)
    if upgrade is None:
        return out
    source = by_protocol.get(_classic_protocol(upgrade.assignor))
    kip848 = by_protocol.get("KIP-848")
    if source is None or kip848 is None:
        return out

    def unowned(variant: Variant) -> float:
        summary = summarise(variant.name, runs[variant])
        return summary.per_seed(summary.unowned_partition_seconds)
    a, kip848_unowned, source_unowned = unowned(upgrade), unowned(kip848), unowned(source)
    # Each restarted member moves to the protocol without a group-wide barrier: the rollout should cost no
    # more than the same rolling restart of the group it started from (the KIP-848 group's for scale).
    out.append((f"{scenario.name}: the upgrade ({upgrade.name}) leaves partitions unowned for no longer than "
                f"the same rolling restart of the {source.protocol} group it started from ({a:.2f} against "
                f"{source_unowned:.2f} partition-seconds a seed; a KIP-848 group: {kip848_unowned:.2f})",
                a <= source_unowned))
    return out


def conversions_table(comparison: Comparison, scenario: str) -> List[str]:
    """Per migrating variant: how many seeds ended with which group type, and conversions a seed."""
    lines = ["| migration | seeds | ended consumer | ended classic | conversions / seed |",
             "|---|---:|---:|---:|---:|"]
    for variant, outcomes in comparison.outcomes[scenario].items():
        if not variant.migrates:
            continue
        types = [o.metrics.group_types for o in outcomes]
        conversions = sum(max(0, len(t) - 1) for t in types)
        lines.append(f"| {variant.name} | {len(outcomes)} | {sum(t[-1:] == (CONSUMER,) for t in types)} "
                     f"| {sum(t[-1:] == (CLASSIC,) for t in types)} "
                     f"| {conversions / len(outcomes) if outcomes else 0:.2f} |")
    return lines


_SHORT = {"range": "range", "roundrobin": "rr", "sticky": "sticky", "cooperative-sticky": "coop",
          "uniform": "848 unif"}
_COLOURS = {"eager": "#1f77b4", "cooperative": "#2ca02c", "KIP-848": "#ff7f0e", "upgrade": "#9467bd",
            "downgrade": "#8c564b"}


def _plot_label(variant: Variant) -> str:
    short = _SHORT.get(variant.assignor, variant.assignor)
    if variant.migrates:
        return f"{short}\n-> {_SHORT.get(variant.restart_assignor, variant.restart_assignor)}"
    restart = " rr" if variant.rolling_restart_to else ""
    return f"{short}\n{'static' if variant.static else 'dyn'}{restart}"


def _plot(comparison: Comparison, scenario: ComparisonScenario, path: str) -> None:
    from kgroup.sim.timeline import pyplot

    plt = pyplot()
    summaries = comparison.summaries(scenario.name)
    variants = comparison.variants_of(scenario.name)
    labels = [_plot_label(v) for v in variants]
    colours = [_COLOURS[v.protocol] for v in variants]
    hatches = ["//" if v.static else "" for v in variants]
    panels = [("unowned partition-seconds a seed (mean)",
               [s.per_seed(s.unowned_partition_seconds) for s in summaries]),
              ("records processed twice a seed (mean)",
               [s.per_seed(s.records_processed_twice) for s in summaries]),
              ("rebalances a seed (mean; 2 = the group forming)",
               [s.per_seed(s.rebalances) for s in summaries]),
              ("time to Stable after a fault, p50 (ms)", [s.recovery_p50_ms or 0 for s in summaries]),
              ("time to Stable after a fault, p99 (ms)", [s.recovery_p99_ms or 0 for s in summaries])]
    figure, grid = plt.subplots(2, 3, figsize=(15, 7.5))
    axes = list(grid.flat)
    try:
        for axis, (title, values) in zip(axes, panels):
            axis.bar(range(len(values)), values, color=colours, hatch=hatches, edgecolor="black",
                     linewidth=0.5)
            axis.set_title(title, fontsize=9)
        spread = axes[5]
        runs = comparison.outcomes[scenario.name]
        spread.boxplot([[o.metrics.unowned_partition_ms / 1000 for o in runs[v]] for v in variants],
                       flierprops={"markersize": 3})
        spread.set_xticks(range(1, len(variants) + 1))
        spread.set_title("unowned partition-seconds, per seed", fontsize=9)
        for axis in axes[:5]:
            axis.set_xticks(range(len(labels)))
        for axis in axes:
            axis.set_xticklabels(labels, fontsize=7)
        legend = ("purple the upgrade to KIP-848, brown the downgrade, rr: a rolling restart keeping the "
                  "protocol"
                  if scenario.variants else "hatched static")
        figure.suptitle(f"scenario {scenario.name}: {len(comparison.seeds)} seeds; blue eager, green "
                        f"cooperative, orange KIP-848, {legend}", fontsize=10)
        figure.tight_layout()
        figure.savefig(path, dpi=72)
    finally:
        plt.close(figure)


def report_markdown(comparison: Comparison, command: str, notes: str = "") -> str:
    base = comparison.base
    seeds = comparison.seeds
    consecutive = seeds == tuple(range(seeds[0], seeds[-1] + 1))
    seed_text = f"{seeds[0]}-{seeds[-1]}" if consecutive else str(list(seeds))
    lines = ["# Consumer group configurations compared on the same fault schedules", "",
             "Regenerate (in this report's folder):", "", "```", command, "```", "",
             f"Seeds {seed_text} ({len(seeds)}); {base.members} members, {base.partitions} partitions, "
             f"{base.brokers} brokers, {base.duration_ms // 1000} simulated seconds of producing and faults "
             f"(at most {base.max_faults} a seed), session.timeout.ms {base.session_timeout_ms}, "
             f"heartbeat.interval.ms {base.heartbeat_interval_ms}, max.poll.interval.ms "
             f"{base.max_poll_interval_ms}, commit mode {base.commit_mode}.  Every variant of a scenario "
             "replays the very same schedule of each seed (and the same application, producer and network "
             "streams): see docs/simulator.md, *Comparing configurations*.  The KIP-848 variants "
             "(group.protocol=consumer) take the same session timeout and heartbeat interval from the "
             "coordinator's group settings, as Kafka does."
             + (" The migration scenarios' rolling restart (which member when, how long it is down) is drawn "
                "from the seed's own stream, the same for every variant: docs/simulator.md, *Migrating "
                "between the protocols*; there, *recovery* also counts each restart of a member "
                "(time to Stable after it)." if any(s.variants for s in comparison.scenarios) else ""), "",
             "Columns: *unowned partition-s*: summed over partitions, the time nobody owned one (so nobody "
             "consumed it); *processed twice*: records processed more than once; *rebalances*: generations "
             "formed, the first included (KIP-848: group epochs members reached, each a new target "
             "assignment); *recovery*: for each fault, the time until the group was Stable "
             "again (0 when it never stopped being Stable), percentiles over every fault of every seed; "
             "*violated*: seeds with an invariant violated (should be 0).", ""]
    for scenario in comparison.scenarios:
        lines += [f"## Scenario `{scenario.name}`: {scenario.description}", ""]
        lines += _table(comparison.summaries(scenario.name), "variant") + [""]
        pooled = comparison.pooled(scenario.name)
        if pooled:
            lines += _table(pooled, "pooled") + [""]
        if scenario.variants:
            lines += ["The coordinator's group type (classic or consumer) as the runs saw it change:", ""]
            lines += conversions_table(comparison, scenario.name) + [""]
        lines += [f"![{scenario.name}]({scenario.name}.png)", ""]
    lines += ["## What the protocols promise, against these numbers", ""]
    lines += [f"- {'holds' if held else 'DOES NOT HOLD'}: {text}" for text, held in expectations(comparison)]
    failed = comparison.failed()
    lines += ["", "## Violations", ""]
    lines += [f"- {scenario} / {variant.name} / seed {o.seed}: {', '.join(o.checks_failed)}"
              for scenario, variant, o in failed] or ["None."]
    if notes.strip():
        lines += ["", "## Notes", "", notes.strip()]
    return "\n".join(lines) + "\n"


def write_report(comparison: Comparison, out_dir: str, command: str, notes: str = "") -> str:
    """Write ``README.md`` and ``<scenario>.png`` into ``out_dir``; return the README's path."""
    os.makedirs(out_dir, exist_ok=True)
    for scenario in comparison.scenarios:
        _plot(comparison, scenario, os.path.join(out_dir, f"{scenario.name}.png"))
    path = os.path.join(out_dir, "README.md")
    with open(path, "w", encoding="utf-8") as file:
        file.write(report_markdown(comparison, command, notes))
    return path
