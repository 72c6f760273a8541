"""``kgroup conformance``: run the broker conformance suite against any broker and report."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, List, Optional

__all__ = ["add_conformance_command", "run_command"]


def add_conformance_command(commands: Any) -> None:
    """Register ``conformance`` on the ``kgroup`` command's subparsers."""
    parser = commands.add_parser(
        "conformance", help="check a Kafka broker against Apache Kafka's recorded answers",
        description="Runs the wire-level conformance scenarios (kgroup.broker_conformance) against the "
                    "broker at "
                    "--bootstrap and compares every normalised answer with the answers recorded from Apache "
                    "Kafka; prints one line per scenario, the differences, and a table per area.  Exit code "
                    "1 "
                    "when any scenario differs, 2 on bad arguments.  The recording assumes the broker's test "
                    "settings (group.initial.rebalance.delay.ms=0, group.min.session.timeout.ms=100, "
                    "group.consumer.heartbeat.interval.ms=500, group.consumer.session.timeout.ms=10000, one "
                    "node); see docs/conformance/broker.md.")
    parser.add_argument("--bootstrap", required=True, metavar="HOST:PORT", help="the broker to check")
    parser.add_argument("--record", metavar="FILE", default=None,
                        help="the recording to compare with (default: the one shipped for the pinned Kafka)")
    parser.add_argument("--only", metavar="PATTERN", action="append", default=None,
                        help="only scenarios whose id matches (shell wildcards; a plain word matches ids "
                             "that "
                             "contain it); repeatable")
    parser.add_argument("--list", action="store_true", help="list the chosen scenarios and exit")
    parser.add_argument("--verbose", action="store_true", help="print every scenario's steps")
    parser.set_defaults(run=run_command)


def run_command(args: argparse.Namespace) -> int:
    from kgroup.broker_conformance.connection import parse_address
    from kgroup.broker_conformance.runner import load_recording, run_suite, select
    from kgroup.errors import KGroupError

    try:
        for address in args.bootstrap.split(","):
            parse_address(address.strip())
        chosen = select(args.only)
        recording = load_recording(Path(args.record) if args.record else None)
    except KGroupError as error:
        print(f"kgroup: {error}", file=sys.stderr)
        return 2
    if not args.list:
        import socket
        first = args.bootstrap.split(",")[0].strip()
        try:
            socket.create_connection(parse_address(first), timeout=5.0).close()
        except OSError as error:
            print(f"kgroup: cannot connect to {first}: {error.strerror or error}", file=sys.stderr)
            return 2
    if args.list:
        for item in chosen:
            print(f"{item.scenario_id}  [{item.area}]  {item.description}")
        return 0
    print(f"kgroup conformance: {len(chosen)} scenario(s) against {args.bootstrap}, compared with Apache "
          "Kafka "
          f"{recording.get('kafka_version', '?')}", flush=True)

    def progress(result: Any) -> None:
        mark = "ok  " if result.ok else "DIFF"
        print(f"{mark} {result.scenario.scenario_id} ({result.elapsed_s:.2f} s)", flush=True)
        for line in result.diffs if not result.ok else []:
            print(f"       {line}", flush=True)
        if args.verbose:
            for label, value in result.steps:
                print(f"       | {label}: {value}", flush=True)

    result = run_suite(args.bootstrap, recording["scenarios"], chosen, progress)
    print()
    print(result.report().split("\n\n", 1)[-1] if "\n\n" in result.report() else result.report())
    return 1 if result.divergent else 0


def main(argv: Optional[List[str]] = None) -> int:
    from kgroup.cli import main as kgroup_main
    return kgroup_main(["conformance", *(sys.argv[1:] if argv is None else argv)])
