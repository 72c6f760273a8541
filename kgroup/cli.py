"""The ``kgroup`` command line: ``kgroup serve`` starts the in-memory cluster on Kafka's wire protocol;
``kgroup simulate``, ``kgroup campaign`` and ``kgroup compare`` run the deterministic simulator
(docs/simulator.md); ``kgroup demo`` is the README's main job (``python -m kgroup.demo``)."""
from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shlex
import signal
import sys
import time
from typing import Any, List, Optional

from kgroup.server.command import (
    EXIT_INTERRUPTED, SERVE_DESCRIPTION, SERVE_HELP, add_serve_arguments, non_negative_int, port_number,
    positive_int,
)

__all__ = ["main", "non_negative_int", "port_number", "positive_int"]


# -- argument types: a bad value fails at parse time, naming the option (argparse's exit code 2) ------

def _existing_file(text: str) -> str:
    """A file to read (a pipe too: ``--schedule /dev/stdin``)."""
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"{text}: no such file")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    if not os.access(text, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text}: not readable")
    return text


def _writable_folder_for(path: str) -> None:
    """Raise unless ``path`` can be created: its nearest existing ancestor is a folder this process may
    write in (checked before a run, not after it)."""
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(folder):
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"{folder} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"cannot write in the folder {folder}")


def _timeline_path(text: str) -> str:
    if not text.lower().endswith((".png", ".html", ".htm")):
        raise argparse.ArgumentTypeError(f"{text}: the name must end in .png or .html")
    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"{text}: no folder {folder}")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a folder")
    _writable_folder_for(text)
    return text


def _output_folder(text: str) -> str:
    if os.path.exists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    _writable_folder_for(os.path.join(text, "README.md"))
    return text


def _demo(args: argparse.Namespace) -> int:
    from kgroup import demo
    return demo.main(sys.stdout)


def _sim_config(args: argparse.Namespace):
    from kgroup.sim import SimConfig

    # Members log what a simulation provokes on purpose (a member leaving on its poll timeout): the
    # verdict reports what matters.
    logging.getLogger("kgroup").setLevel(logging.ERROR)

    return SimConfig(members=args.members, partitions=args.partitions,
                     assignor=getattr(args, "assignor", "any"), static=getattr(args, "static", False),
                     group_protocol=getattr(args, "group_protocol", "classic"), commit_mode=args.commit,
                     processing_ms_per_record=args.processing_ms,
                     duration_ms=args.duration_ms, faults=getattr(args, "faults", "mixed"),
                     max_faults=args.max_faults,
                     processing="transactional" if getattr(args, "eos", False) else "plain")


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
    else:
        print("timeline: none written (--timeline run.png draws one, --timeline run.html a page)")
    print("coverage: " + ", ".join(f"{k} {v}" for k, v in sorted(verdict.coverage.items())))
    if args.history:
        print(verdict.history.format())
    if not verdict.ok:
        _print_failure(verdict, config, not args.no_shrink)
        return 1
    return 0


def _campaign(args: argparse.Namespace) -> int:
    from kgroup.sim import run
    from kgroup.sim.campaign import CampaignInterrupted, run_campaign, summary_table

    config = _sim_config(args)
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    if args.spark:
        return _campaign_on_spark(args, config, seeds)
    try:
        with _ProgressBar("seed") as progress:
            result = run_campaign(seeds, config, args.workers, progress)
    except CampaignInterrupted as interrupted:
        # Keep what finished: the summary of those seeds, their failures unshrunk (shrinking reruns).
        if interrupted.result.outcomes:
            print(summary_table(interrupted.result))
        for outcome in interrupted.result.failed[:args.show]:
            print(f"seed {outcome.seed} ({outcome.assignor}): {', '.join(outcome.checks_failed)}")
        print(f"kgroup: interrupted after {len(interrupted.result.outcomes)} of {interrupted.planned} seeds"
              f"{'; the summary covers those' if interrupted.result.outcomes else ''}", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(summary_table(result))
    for outcome in result.failed[:args.show]:
        print(f"seed {outcome.seed} ({outcome.assignor}): {', '.join(outcome.checks_failed)}")
        for violation in outcome.violations[:3]:
            print(f"  ! {violation}")
        _print_failure(run(outcome.seed, config), config, not args.no_shrink)
    return 1 if result.failed else 0


def _campaign_on_spark(args: argparse.Namespace, config, seeds: range) -> int:
    """``campaign --spark``: the seeds on Spark's executors, rows to Parquet, the same summary."""
    from kgroup.sim import run

    try:
        from pyspark.sql import SparkSession
    except ImportError:
        print("kgroup: --spark needs pyspark (pip install 'kgroup[spark]')", file=sys.stderr)
        return 2
    from kgroup_spark.campaign import run_campaign_on_spark

    began = time.perf_counter()
    try:
        spark = (SparkSession.builder.master(args.master).appName("kgroup-campaign")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
                 .getOrCreate())
    except Exception as error:  # no Java, a bad master URL: Spark's own message, one line
        print(f"kgroup: Spark did not start on {args.master}: {str(error).splitlines()[0]}", file=sys.stderr)
        return 2
    # Ctrl-C reaches Spark's JVM too (one process group), which then dies under the running job: the
    # job's failure is then the interrupt's, reported as such.
    interrupted: List[int] = []

    def on_interrupt(signum: int, frame: Any) -> None:
        interrupted.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_interrupt)
    # py4j logs the interrupt of a pending JVM call and the JVM going away, with tracebacks (on the root
    # logger and its own): the CLI reports either as one line.
    logging.getLogger().addFilter(lambda record: "KeyboardInterrupt while sending command" not in record.msg)
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    try:
        spark.sparkContext.setLogLevel("OFF")
        print(f"Spark {spark.version} on {args.master} ({spark.sparkContext.defaultParallelism} task slots) "
              f"up after {time.perf_counter() - began:.1f} s", file=sys.stderr)
        with _ProgressBar("seed") as progress:
            campaign = run_campaign_on_spark(spark, seeds, config, args.spark_out, args.show, progress)
    except Exception:
        if not interrupted:
            raise
        campaign = None
    except KeyboardInterrupt:
        campaign = None
    finally:
        signal.signal(signal.SIGINT, previous)
        with contextlib.suppress(Exception):  # a JVM already gone with the interrupt
            spark.stop()
    if campaign is None:
        print(f"kgroup: interrupted; the Spark job was cancelled, {args.spark_out} holds no complete result",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    print(campaign.summary.format())
    print(f"rows: {campaign.parquet_path} (one per seed: seed, verdict, digest, counters)")
    for seed, assignor, checks_failed, violations in campaign.failed:
        print(f"seed {seed} ({assignor}): {', '.join(checks_failed)}")
        for violation in violations[:3]:
            print(f"  ! {violation}")
        _print_failure(run(seed, config), config, not args.no_shrink)
    return 1 if campaign.summary.violated else 0


class _ProgressBar:
    """Progress of a pool's runs on stderr (``done/total``, %, rate, ETA, runs with violations), from
    the first run on; nothing when stderr is not a terminal (a log or a pipe).  tqdm draws it: it
    measures the rate and the ETA, fits the terminal's width and keeps to one line."""

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self.bar: Any = None
        # tqdm would stay quiet off a terminal too (disable=None), but still start its monitor thread.
        self.on_terminal = _isatty(sys.stderr)

    def __call__(self, done: int, total: int, failed: int) -> None:
        if not self.on_terminal:
            return
        if self.bar is None:
            from tqdm import tqdm

            # A pseudo-terminal nobody sized (``script`` run from a pipe) reports 0 x 0, where tqdm
            # draws nothing: then 80 x 24.
            sized = _terminal_columns() > 0
            self.bar = tqdm(total=total, unit=self.unit, file=sys.stderr, disable=None, dynamic_ncols=sized,
                            ncols=None if sized else 80, nrows=None if sized else 24, smoothing=0.1,
                            mininterval=0.2)
        self.bar.set_postfix_str(f"{failed} violated", refresh=False)
        self.bar.update(done - self.bar.n)

    def __enter__(self) -> "_ProgressBar":
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.close()


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


def _terminal_columns() -> int:
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except (AttributeError, OSError, ValueError):  # not a terminal, or no file descriptor
        return 0


def _compare(args: argparse.Namespace) -> int:
    from kgroup.sim.campaign import CampaignInterrupted
    from kgroup.sim.compare import ALL_SCENARIOS, run_comparison, write_report

    base = _sim_config(args)
    scenarios = [s for s in ALL_SCENARIOS if s.name in args.scenarios]
    notes = ""
    if args.notes:
        with open(args.notes, encoding="utf-8") as file:
            notes = file.read()
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    try:
        with _ProgressBar("run") as progress:
            comparison = run_comparison(seeds, base, scenarios, workers=args.workers, progress=progress)
    except CampaignInterrupted as interrupted:
        # A report compares every variant on the same seeds: a part of the runs would not.
        print(f"kgroup: interrupted after {len(interrupted.result.outcomes)} of {interrupted.planned} runs; "
              f"no report written", file=sys.stderr)
        return EXIT_INTERRUPTED
    command = "kgroup compare " + shlex.join(_in_report_folder(args.argv, args.out))
    path = write_report(comparison, args.out, command, notes)
    result = comparison.result
    # The migration scenarios bring their own variants.
    counts = "/".join(str(n) for n in dict.fromkeys(len(comparison.variants_of(s.name)) for s in scenarios))
    print(f"{len(result.outcomes)} runs ({len(comparison.seeds)} seeds x {len(scenarios)} scenario(s) x "
          f"{counts} variants) in {result.elapsed_s:.1f} s on {result.workers} process(es)")
    print(f"report: {path}")
    failed = comparison.failed()
    for scenario, variant, outcome in failed[:args.show]:
        print(f"{scenario} / {variant.name} / seed {outcome.seed}: {', '.join(outcome.checks_failed)}")
        for violation in outcome.violations[:3]:
            print(f"  ! {violation}")
    return 1 if failed else 0


def _in_report_folder(argv: List[str], out: str) -> List[str]:
    """``compare``'s arguments as they read when run in the report's folder (the report quotes them):
    ``--out .`` and ``--notes`` relative to that folder, wherever the command was run from."""
    paths = {"--out": lambda _: ".", "--notes": lambda path: os.path.relpath(path, out)}
    result: List[str] = []
    pending = None
    for token in argv:
        if pending is not None:
            result.append(paths[pending](token))
            pending = None
        elif token in paths:
            result.append(token)
            pending = token
        elif token.split("=", 1)[0] in paths:
            option, value = token.split("=", 1)
            result.append(f"{option}={paths[option](value)}")
        else:
            result.append(token)
    if not any(token.split("=", 1)[0] == "--out" for token in result):
        result += ["--out", "."]
    return result


def _scenario_names(text: str) -> List[str]:
    from kgroup.sim.compare import ALL_SCENARIOS

    names = [n.strip() for n in text.split(",") if n.strip()]
    known = [s.name for s in ALL_SCENARIOS]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown scenario(s) {unknown}; known: {', '.join(known)}")
    return names


def _pool_arguments(parser: argparse.ArgumentParser, seeds: int, seeds_help: str) -> None:
    """The seeds of a campaign or a comparison and the processes that run them."""
    parser.add_argument("--seeds", type=positive_int, default=seeds, help=f"{seeds_help} (default {seeds})")
    parser.add_argument("--first-seed", type=int, default=0, help="the first seed (default 0)")
    parser.add_argument("--workers", type=positive_int, default=None,
                        help="worker processes (default: os.cpu_count())")


def _sim_arguments(parser: argparse.ArgumentParser, group: bool = True) -> None:
    from kgroup.sim.simulator import ASSIGNOR_MIXES, ASSIGNORS, GROUP_PROTOCOLS, SERVER_ASSIGNORS

    parser.add_argument("--members", type=positive_int, default=5,
                        help="consumers at the start (default %(default)s)")
    parser.add_argument("--partitions", type=positive_int, default=12,
                        help="partitions of the topic (default %(default)s)")
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
    parser.add_argument("--processing-ms", type=non_negative_int, default=1,
                        help="processing time per record (default 1)")
    parser.add_argument("--duration-ms", type=positive_int, default=60_000,
                        help="simulated time with producers and faults (default %(default)s)")
    if group:  # compare runs its scenarios
        parser.add_argument("--faults", choices=("mixed", "static-bounce", "none"), default="mixed",
                            help="what the seed's schedule draws (default mixed)")
    parser.add_argument("--max-faults", type=non_negative_int, default=8,
                        help="at most this many faults a seed; 0: none (default %(default)s)")
    if group:
        parser.add_argument("--no-shrink", action="store_true", help="do not shrink a failing schedule")
        parser.add_argument("--eos", action="store_true",
                            help="exactly-once consume-transform-produce: each batch in a transaction with "
                                 "its offsets (KIP-98, KIP-447), checked by the exactly-once checks "
                                 "(docs/simulator.md); --commit is then ignored")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kgroup",
                                     description="kgroup: Kafka consumer groups in pure Python")
    commands = parser.add_subparsers(dest="command", required=True)
    add_serve_arguments(commands.add_parser("serve", help=SERVE_HELP, description=SERVE_DESCRIPTION))

    simulate = commands.add_parser(
        "simulate", help="run one seeded simulation of a consumer group under faults and check it",
        description="Runs kgroup members on the in-memory cluster under a seeded fault schedule on a "
                    "virtual clock, checks every guarantee (docs/simulator.md) and prints the verdict, the "
                    "schedule and what it covered.  Exit code 1 when an invariant is violated (then the "
                    "schedule is shrunk to a minimal failing one).")
    simulate.add_argument("--seed", type=int, default=None, help="the seed (default 0)")
    simulate.add_argument("--schedule", metavar="FILE", type=_existing_file,
                          help="replay this schedule (the format `simulate` prints) instead of the seed's")
    simulate.add_argument("--history", action="store_true", help="print the recorded history")
    simulate.add_argument("--timeline", metavar="PATH", type=_timeline_path,
                          help="write the run's timeline: PATH.png a picture, PATH.html a self-contained "
                               "page (default: none)")
    _sim_arguments(simulate)
    simulate.set_defaults(run=_simulate, parser=simulate)

    campaign = commands.add_parser(
        "campaign", help="run many seeds in parallel processes and summarise",
        description="Runs --seeds seeds in worker processes, shows progress on stderr, prints a summary "
                    "table and coverage, and the failing seeds with shrunk schedules.  Exit code 1 when any "
                    "seed violates an invariant.")
    _pool_arguments(campaign, 100, "how many seeds")
    campaign.add_argument("--show", type=non_negative_int, default=5,
                          help="failing seeds to show and shrink (default 5)")
    campaign.add_argument("--spark", action="store_true",
                          help="run the seeds on Spark executors (mapPartitions), one row per seed to "
                               "Parquet, the summary aggregated by Spark; --workers is then ignored")
    campaign.add_argument("--master", default="local[*]",
                          help="Spark master URL for --spark (default %(default)s; e.g. spark://host:7077)")
    campaign.add_argument("--spark-out", default="kgroup-campaign.parquet", metavar="PATH",
                          help="where --spark writes its rows, replaced if it exists (default %(default)s)")
    _sim_arguments(campaign)
    from kgroup.sim.simulator import CAMPAIGN_SHAPE  # the shape that covers the most faults a CPU-second
    campaign.set_defaults(run=_campaign, parser=campaign, **CAMPAIGN_SHAPE)

    compare = commands.add_parser(
        "compare", help="compare group configurations on the same fault schedules: a markdown report",
        description="Runs every variant (range, roundrobin, sticky: eager; cooperative-sticky: cooperative; "
                    "uniform: the consumer protocol of KIP-848; each with dynamic and with static members) "
                    "through the very same fault schedule of each seed, per scenario (mixed: every fault "
                    "kind; bounces: rolling restarts within the session timeout; on request migration-eager "
                    "and migration-cooperative: every member restarted once, upgrading a range or "
                    "cooperative-sticky group online to KIP-848 and downgrading back, against the same "
                    "rolling restart keeping each protocol), and writes OUT/README.md "
                    "(tables: partition-seconds without an "
                    "owner, records processed twice, rebalances, p50/p99 time to Stable after a fault, "
                    "violations) and one PNG per scenario.  Exit code 1 when any run violates an "
                    "invariant.")
    _pool_arguments(compare, 20, "seeds per scenario")
    compare.add_argument("--out", default="kgroup-compare", metavar="DIR", type=_output_folder,
                         help="where README.md and the plots go (default ./kgroup-compare)")
    compare.add_argument("--scenarios", type=_scenario_names, default=["mixed", "bounces"],
                         help="comma-separated: mixed, bounces, migration-eager, migration-cooperative "
                              "(default mixed,bounces)")
    compare.add_argument("--notes", metavar="FILE", type=_existing_file,
                         help="markdown appended to the report under Notes")
    compare.add_argument("--show", type=non_negative_int, default=5,
                         help="violating runs to print (default 5)")
    _sim_arguments(compare, group=False)
    compare.set_defaults(run=_compare, parser=compare)

    from kgroup.broker_conformance.command import add_conformance_command
    add_conformance_command(commands)

    from kgroup import demo
    summary, _, details = (demo.__doc__ or "").partition("\n\n")
    demo_command = commands.add_parser("demo", help="assign a realistic group with every strategy, then "
                                       "fail over its coordinator (the README's main job)",
                                       description=summary, epilog=details,
                                       formatter_class=argparse.RawDescriptionHelpFormatter)
    demo_command.set_defaults(run=_demo, parser=demo_command)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # the command's own usage, not the top level's
        args.parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    problem = getattr(args, "check", lambda _: None)(args)
    if problem:
        args.parser.error(problem)
    args.argv = list(sys.argv[2:] if argv is None else argv[1:])
    try:
        return args.run(args)
    except KeyboardInterrupt:  # Ctrl-C: one line (pool workers ignore it; the pool is stopped by then)
        print("kgroup: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as error:  # a config or bind error: one line, no traceback
        from kgroup.errors import KGroupError
        if isinstance(error, (KGroupError, OSError)):
            print(f"kgroup: {error}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
