"""The ``kgroup`` command line: ``kgroup serve`` starts the in-memory cluster on Kafka's wire protocol."""
from __future__ import annotations

import argparse
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
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
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
