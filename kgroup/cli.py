"""The ``kgroup`` command line: ``kgroup serve`` starts the in-memory cluster on Kafka's wire protocol;
``kgroup simulate``, ``kgroup campaign`` and ``kgroup compare`` run the deterministic simulator
(docs/simulator.md); ``kgroup demo`` is the README's main job (``python -m kgroup.demo``)."""
from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
from typing import List, Optional

__all__ = ["main"]


def _serve(args: argparse.Namespace) -> int:
    from kgroup.core.coordinator import GroupCoordinatorConfig
    from kgroup.server import KafkaServer

    server = KafkaServer(
        brokers=args.brokers, host=args.host, port=args.port, default_partitions=args.partitions,
        offsets_partitions=args.offsets_partitions,
        coordinator=GroupCoordinatorConfig(group_initial_rebalance_delay_ms=args.initial_rebalance_delay_ms))
    stop = threading.Event()

    def on_signal(signum, frame) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    with server:
        print(server.bootstrap_servers, flush=True)
        print(f"kgroup: {args.brokers} broker(s) serving the Kafka protocol; Ctrl-C stops", file=sys.stderr,
              flush=True)
        stop.wait()
    print("kgroup: stopped", file=sys.stderr, flush=True)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from kgroup import demo
    return demo.main(sys.stdout)


def _sim_config(args: argparse.Namespace):
    import logging

    from kgroup.sim import SimConfig

    # Members log what a simulation provokes on purpose (a member leaving on its poll timeout): the
    # verdict reports what matters.
    logging.getLogger("kgroup").setLevel(logging.ERROR)

    return SimConfig(members=args.members, partitions=args.partitions,
                     assignor=getattr(args, "assignor", "any"), static=getattr(args, "static", False),
                     group_protocol=getattr(args, "group_protocol", "classic"), commit_mode=args.commit,
                     processing_ms_per_record=args.processing_ms,
                     duration_ms=args.duration_ms, faults=getattr(args, "faults", "mixed"),
                     max_faults=args.max_faults)


def _print_failure(verdict, config, shrink_it: bool) -> None:
    from kgroup.sim.shrink import shrink

    if shrink_it and verdict.schedule.faults:
        result = shrink(verdict, config)
        print(f"shrunk {len(verdict.schedule.faults)} -> {len(result.minimal.faults)} fault(s) in "
              f"{result.runs} runs; replay with: kgroup simulate --seed {verdict.seed} --schedule FILE")
        print(result.minimal.to_text(), end="")
        for violation in result.verdict.violations[:5]:
            print(f"  ! {violation}")


def _simulate(args: argparse.Namespace) -> int:
    from kgroup.sim import parse_schedule, run

    config = _sim_config(args)
    if args.timeline and not args.timeline.lower().endswith((".png", ".html", ".htm")):
        print(f"kgroup: --timeline {args.timeline}: the name must end in .png or .html", file=sys.stderr)
        return 2
    if args.schedule:
        with open(args.schedule) as file:
            schedule = parse_schedule(file.read())
        schedule = schedule if args.seed is None else schedule.__class__(schedule.faults, args.seed)
        verdict = run(schedule, config)
    else:
        verdict = run(args.seed if args.seed is not None else 0, config)
    print(verdict.describe())
    print(verdict.schedule.to_text(), end="")
    if args.timeline:
        from kgroup.sim.timeline import write_timeline
        write_timeline(verdict.history, args.timeline, verdict.simulated_ms,
                       f"seed {verdict.seed}, {verdict.assignor}{' static' if config.static else ''}")
        print(f"timeline: {args.timeline}")
    print("coverage: " + ", ".join(f"{k} {v}" for k, v in sorted(verdict.coverage.items())))
    if args.history:
        print(verdict.history.format())
    if not verdict.ok:
        _print_failure(verdict, config, not args.no_shrink)
        return 1
    return 0


def _campaign(args: argparse.Namespace) -> int:
    from kgroup.sim import run
    from kgroup.sim.campaign import run_campaign, summary_table

    config = _sim_config(args)
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    result = run_campaign(seeds, config, args.workers, _progress("seeds"))
    print(summary_table(result))
    for outcome in result.failed[:args.show]:
        print(f"seed {outcome.seed} ({outcome.assignor}): {', '.join(outcome.checks_failed)}")
        for violation in outcome.violations[:3]:
            print(f"  ! {violation}")
        _print_failure(run(outcome.seed, config), config, not args.no_shrink)
    return 1 if result.failed else 0


def _progress(unit: str):
    """A progress bar on stderr: a line at every twentieth of the work."""
    def progress(done: int, total: int, failed: int) -> None:
        if done == total or done % max(1, total // 20) == 0:
            print(f"  {done}/{total} {unit}, {failed} with violations", file=sys.stderr, flush=True)
    return progress


def _compare(args: argparse.Namespace) -> int:
    from kgroup.sim.compare import SCENARIOS, run_comparison, write_report

    base = _sim_config(args)
    scenarios = [s for s in SCENARIOS if s.name in args.scenarios]
    notes = ""
    if args.notes:
        with open(args.notes, encoding="utf-8") as file:
            notes = file.read()
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    comparison = run_comparison(seeds, base, scenarios, workers=args.workers, progress=_progress("runs"))
    command = "kgroup compare " + shlex.join(args.argv)
    path = write_report(comparison, args.out, command, notes)
    result = comparison.result
    print(f"{len(result.outcomes)} runs ({len(comparison.seeds)} seeds x {len(scenarios)} scenario(s) x "
          f"{len(comparison.variants)} variants) in {result.elapsed_s:.1f} s on {result.workers} process(es)")
    print(f"report: {path}")
    failed = comparison.failed()
    for scenario, variant, outcome in failed[:args.show]:
        print(f"{scenario} / {variant.name} / seed {outcome.seed}: {', '.join(outcome.checks_failed)}")
        for violation in outcome.violations[:3]:
            print(f"  ! {violation}")
    return 1 if failed else 0


def _scenario_names(text: str) -> List[str]:
    from kgroup.sim.compare import SCENARIOS

    names = [n.strip() for n in text.split(",") if n.strip()]
    known = [s.name for s in SCENARIOS]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown scenario(s) {unknown}; known: {', '.join(known)}")
    return names


def _pool_arguments(parser: argparse.ArgumentParser, seeds: int, seeds_help: str) -> None:
    """The seeds of a campaign or a comparison and the processes that run them."""
    parser.add_argument("--seeds", type=int, default=seeds, help=f"{seeds_help} (default {seeds})")
    parser.add_argument("--first-seed", type=int, default=0, help="the first seed (default 0)")
    parser.add_argument("--workers", type=int, default=None,
                        help="worker processes (default: os.cpu_count())")


def _sim_arguments(parser: argparse.ArgumentParser, group: bool = True) -> None:
    from kgroup.sim.simulator import ASSIGNOR_MIXES, ASSIGNORS, GROUP_PROTOCOLS, SERVER_ASSIGNORS

    parser.add_argument("--members", type=int, default=5, help="consumers at the start (default 5)")
    parser.add_argument("--partitions", type=int, default=12, help="partitions of the topic (default 12)")
    if group:  # compare varies these itself
        names = tuple(dict.fromkeys(ASSIGNORS + tuple(ASSIGNOR_MIXES) + SERVER_ASSIGNORS + ("any",)))
        parser.add_argument("--assignor", choices=names, default="any",
                            help="the group's assignor; upgrade: members half eager, half cooperative "
                                 "(KIP-429's rolling upgrade); uniform and range with --group-protocol "
                                 "consumer: the coordinator's; any: drawn from the seed (default any)")
        parser.add_argument("--static", action="store_true", help="static members (group.instance.id)")
        parser.add_argument("--group-protocol", choices=GROUP_PROTOCOLS, default="classic",
                            help="classic (JoinGroup/SyncGroup) or consumer (KIP-848: the coordinator "
                                 "assigns; the session timeout and heartbeat interval are its group "
                                 "settings) (default classic)")
    parser.add_argument("--commit", choices=("auto", "sync", "async", "mixed", "retried"), default="mixed",
                        help="how the applications commit; mixed: each draws auto, sync or async; "
                             "retried: retried until a deadline without waiting (default mixed)")
    parser.add_argument("--processing-ms", type=int, default=1, help="processing time per record (default 1)")
    parser.add_argument("--duration-ms", type=int, default=60_000,
                        help="simulated time with producers and faults (default 60000)")
    if group:  # compare runs its scenarios
        parser.add_argument("--faults", choices=("mixed", "static-bounce", "none"), default="mixed",
                            help="what the seed's schedule draws (default mixed)")
    parser.add_argument("--max-faults", type=int, default=8,
                        help="at most this many faults a seed (default 8)")
    if group:
        parser.add_argument("--no-shrink", action="store_true", help="do not shrink a failing schedule")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kgroup",
                                     description="kgroup: Kafka consumer groups in pure Python")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve an in-memory Kafka cluster over the wire protocol",
                                description="Prints the bootstrap servers on stdout, then serves until "
                                            "interrupted (Ctrl-C or SIGTERM).")
    serve.add_argument("--brokers", type=int, default=1, help="number of brokers (default 1)")
    serve.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=9092,
                       help="port of broker 1; broker n listens on port+n-1; 0 picks free ports "
                            "(default 9092)")
    serve.add_argument("--partitions", type=int, default=1,
                       help="partitions of auto-created topics (default 1)")
    serve.add_argument("--offsets-partitions", type=int, default=50,
                       help="partitions of __consumer_offsets (default 50)")
    serve.add_argument("--initial-rebalance-delay-ms", type=int, default=3000,
                       help="group.initial.rebalance.delay.ms (Kafka's default 3000)")
    serve.set_defaults(run=_serve)

    simulate = commands.add_parser(
        "simulate", help="run one seeded simulation of a consumer group under faults and check it",
        description="Runs kgroup members on the in-memory cluster under a seeded fault schedule on a "
                    "virtual clock, checks every guarantee (docs/simulator.md) and prints the verdict, the "
                    "schedule and what it covered.  Exit code 1 when an invariant is violated (then the "
                    "schedule is shrunk to a minimal failing one).")
    simulate.add_argument("--seed", type=int, default=None, help="the seed (default 0)")
    simulate.add_argument("--schedule", metavar="FILE",
                          help="replay this schedule (the format `simulate` prints) instead of the seed's")
    simulate.add_argument("--history", action="store_true", help="print the recorded history")
    simulate.add_argument("--timeline", metavar="PATH",
                          help="write the run's timeline: PATH.png a picture, PATH.html a self-contained "
                               "page")
    _sim_arguments(simulate)
    simulate.set_defaults(run=_simulate)

    campaign = commands.add_parser(
        "campaign", help="run many seeds in parallel processes and summarise",
        description="Runs --seeds seeds in worker processes, shows progress on stderr, prints a summary "
                    "table and coverage, and the failing seeds with shrunk schedules.  Exit code 1 when any "
                    "seed violates an invariant.")
    _pool_arguments(campaign, 100, "how many seeds")
    campaign.add_argument("--show", type=int, default=5, help="failing seeds to show and shrink (default 5)")
    _sim_arguments(campaign)
    campaign.set_defaults(run=_campaign)

    compare = commands.add_parser(
        "compare", help="compare group configurations on the same fault schedules: a markdown report",
        description="Runs every variant (range, roundrobin, sticky: eager; cooperative-sticky: cooperative; "
                    "uniform: the consumer protocol of KIP-848; each with dynamic and with static members) "
                    "through the very same fault schedule of each seed, per scenario (mixed: every fault "
                    "kind; bounces: rolling restarts within the session timeout), and writes OUT/README.md "
                    "(tables: partition-seconds without an "
                    "owner, records processed twice, rebalances, p50/p99 time to Stable after a fault, "
                    "violations) and one PNG per scenario.  Exit code 1 when any run violates an "
                    "invariant.")
    _pool_arguments(compare, 20, "seeds per scenario")
    compare.add_argument("--out", default="kgroup-compare", metavar="DIR",
                         help="where README.md and the plots go (default ./kgroup-compare)")
    compare.add_argument("--scenarios", type=_scenario_names, default=["mixed", "bounces"],
                         help="comma-separated: mixed, bounces (default both)")
    compare.add_argument("--notes", metavar="FILE", help="markdown appended to the report under Notes")
    compare.add_argument("--show", type=int, default=5, help="violating runs to print (default 5)")
    _sim_arguments(compare, group=False)
    compare.set_defaults(run=_compare)

    from kgroup.broker_conformance.command import add_conformance_command
    add_conformance_command(commands)

    from kgroup import demo
    summary, _, details = (demo.__doc__ or "").partition("\n\n")
    demo_command = commands.add_parser("demo", help="assign a realistic group with every strategy, then "
                                       "fail over its coordinator (the README's main job)",
                                       description=summary, epilog=details,
                                       formatter_class=argparse.RawDescriptionHelpFormatter)
    demo_command.set_defaults(run=_demo)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    args.argv = list(sys.argv[2:] if argv is None else argv[1:])
    try:
        return args.run(args)
    except Exception as error:  # a config or bind error: one line, no traceback
        from kgroup.errors import KGroupError
        if isinstance(error, (KGroupError, OSError)):
            print(f"kgroup: {error}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
