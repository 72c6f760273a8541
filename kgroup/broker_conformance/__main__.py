"""``python -m kgroup.broker_conformance record [--out FILE] [--only PATTERN]``: start the pinned Apache
Kafka (1 node, Java 17 and Maven needed), run the suite and write its answers (default: the recording
shipped in ``recorded/``).  ``--only`` re-records those scenarios and keeps the others."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    from kgroup.broker_conformance.runner import default_recording, record_kafka
    from kgroup.errors import KGroupError

    parser = argparse.ArgumentParser(prog="python -m kgroup.broker_conformance")
    commands = parser.add_subparsers(dest="command", required=True)
    record = commands.add_parser("record", help="record Apache Kafka's answers")
    record.add_argument("--out", type=Path, default=None, help=f"default {default_recording()}")
    record.add_argument("--only", action="append", default=None, metavar="PATTERN")
    args = parser.parse_args(argv)
    try:
        result = record_kafka(args.out, args.only, progress=lambda r: print(
            f"{r.scenario.scenario_id} ({r.elapsed_s:.2f} s)", flush=True))
    except KGroupError as error:
        print(f"kgroup: {error}", file=sys.stderr)
        return 1
    print(f"recorded {len(result.results)} scenarios to {args.out or default_recording()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
