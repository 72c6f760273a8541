"""The serve command: ``kgroup serve`` and ``python -m kgroup.server`` start the in-memory cluster on
Kafka's wire protocol, print the bootstrap servers on stdout and serve until Ctrl-C or SIGTERM.

It lives with the server so that ``python -m kgroup.server`` needs nothing above it (the ``kgroup``
command line, :mod:`kgroup.cli`, adds this command to its own).  Its argument types are shared with
the other commands of :mod:`kgroup.cli`: a bad value fails at parse time, naming the option
(argparse's exit code 2).
"""
from __future__ import annotations

import argparse
import errno
import gc
import signal
import socket
import sys
import threading
from typing import TYPE_CHECKING, Callable, List, Optional

if TYPE_CHECKING:
    from kgroup.server.server import KafkaServer

__all__ = ["EXIT_INTERRUPTED", "add_serve_arguments", "main", "new_server", "non_negative_int",
           "port_number", "positive_int"]

#: The exit code of a command stopped by Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 128 + signal.SIGINT

SERVE_HELP = "serve an in-memory Kafka cluster over the wire protocol"
SERVE_DESCRIPTION = ("Prints the bootstrap servers on stdout, then serves until interrupted "
                     "(Ctrl-C or SIGTERM).")


def _int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more, got {value}")
        return value
    parse.__name__ = "positive_int" if minimum == 1 else "non_negative_int"
    return parse


#: An option's count that must be 1 or more (members, partitions, seeds, workers...).
positive_int = _int_at_least(1)
#: An option's count or time that may be 0 (faults, milliseconds).
non_negative_int = _int_at_least(0)


def port_number(text: str) -> int:
    """A TCP port, 0 (any free one) to 65535."""
    value = non_negative_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"must be a port, 0 to 65535, got {value}")
    return value


def add_serve_arguments(serve: argparse.ArgumentParser) -> None:
    """The serve command's options, and what runs it (``run``, ``check`` and ``parser`` defaults)."""
    serve.add_argument("--brokers", type=positive_int, default=1, help="number of brokers (default 1)")
    serve.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    serve.add_argument("--port", type=port_number, default=9092,
                       help="port of broker 1; broker n listens on port+n-1; 0 picks free ports "
                            "(default 9092)")
    serve.add_argument("--partitions", type=positive_int, default=1,
                       help="partitions of auto-created topics (default 1)")
    serve.add_argument("--offsets-partitions", type=positive_int, default=50,
                       help="partitions of __consumer_offsets (default 50)")
    serve.add_argument("--initial-rebalance-delay-ms", type=non_negative_int, default=3000,
                       help="group.initial.rebalance.delay.ms (Kafka's default 3000)")
    serve.add_argument("--broker-racks", type=_name_list, default=(),
                       help="broker.rack of each broker, comma-separated in broker order (e.g. a,b,c); "
                            "rack-aware server assignors read partition racks from them (default: none)")
    serve.add_argument("--consumer-group-assignors", type=_name_list, default=("uniform", "range"),
                       help="group.consumer.assignors: server assignors KIP-848 members may ask for, the "
                            "first the default (default uniform,range; kgroup also has uniform-rack-aware)")
    serve.set_defaults(run=_serve, parser=serve, check=_check_serve)


def _name_list(text: str) -> tuple[str, ...]:
    """Comma-separated names (racks, assignors), none empty."""
    names = tuple(name.strip() for name in text.split(","))
    if not all(names):
        raise argparse.ArgumentTypeError(
            f"{text!r} has an empty entry (comma-separated names, no spaces needed)")
    return names


def new_server(args: argparse.Namespace) -> "KafkaServer":
    """The (not yet started) server the parsed serve options describe."""
    from kgroup.core.coordinator import GroupCoordinatorConfig
    from kgroup.server import KafkaServer

    return KafkaServer(
        brokers=args.brokers, host=args.host, port=args.port, default_partitions=args.partitions,
        offsets_partitions=args.offsets_partitions,
        broker_racks={node_id: rack for node_id, rack in enumerate(args.broker_racks, start=1)},
        coordinator=GroupCoordinatorConfig(group_initial_rebalance_delay_ms=args.initial_rebalance_delay_ms,
                                           consumer_group_assignors=args.consumer_group_assignors))


def _serve(args: argparse.Namespace) -> int:
    server = new_server(args)
    try:
        server.start()
    except OSError as error:
        print(f"kgroup: {_listen_error(args, error)}", file=sys.stderr)
        return 2
    # Everything alive now (modules, classes, the cluster's start state) lives as long as the
    # process: out of the cyclic collector's sight, so each full collection during traffic walks
    # only what came later.  A full collection of the started server walked ~51,000 objects,
    # a 5-17 ms stall of every client (issue 28: a p99 produce latency spike).  Only this
    # process does it: an application embedding KafkaServer keeps its own collector settings.
    gc.freeze()
    stop = threading.Event()

    def on_signal(signum, frame) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        print(server.bootstrap_servers, flush=True)
        print(f"kgroup: {args.brokers} broker(s) serving the Kafka protocol; Ctrl-C stops", file=sys.stderr,
              flush=True)
        stop.wait()
    finally:
        server.stop()
    print("kgroup: stopped", file=sys.stderr, flush=True)
    return 0


def _listen_error(args: argparse.Namespace, error: OSError) -> str:
    """What went wrong when the brokers tried to listen, naming the flag, its value and the broker."""
    reason = error.strerror or str(error)
    if isinstance(error, socket.gaierror) or error.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
        return f"--host {args.host}: cannot listen there: {reason}"
    if args.port == 0:
        return f"--host {args.host} --port 0: cannot listen on a free port: {reason}"
    if error.errno == errno.EADDRINUSE:
        # The server closed the ports it had bound; find the one another process holds.
        for index in range(args.brokers):
            if not _can_bind(args.host, args.port + index):
                return (f"--port {args.port}: {args.host}:{args.port + index} (broker {index + 1}'s port) "
                        f"is already in use")
    last = args.port + args.brokers - 1
    ports = str(args.port) if last == args.port else f"{args.port}-{last}"
    return f"--port {args.port}: cannot listen on {args.host}:{ports}: {reason}"


def _can_bind(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _check_serve(args: argparse.Namespace) -> Optional[str]:
    if args.broker_racks and len(args.broker_racks) != args.brokers:
        return (f"argument --broker-racks: {len(args.broker_racks)} rack(s) for {args.brokers} broker(s); "
                "give one per broker")
    from kgroup.assignors import known_server_assignors, unknown_server_assignors
    unknown = unknown_server_assignors(args.consumer_group_assignors)
    if unknown:
        return (f"argument --consumer-group-assignors: unknown {', '.join(unknown)}; known: "
                f"{', '.join(known_server_assignors())}")
    last = args.port + args.brokers - 1
    if args.port and last > 65535:
        return (f"argument --port: {args.port} with --brokers {args.brokers}: broker {args.brokers} would "
                f"listen on port {last}, past 65535")
    return None


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m kgroup.server [options]``: ``kgroup serve``, with the same usage, errors and exit codes."""
    parser = argparse.ArgumentParser(prog="kgroup serve", description=SERVE_DESCRIPTION)
    add_serve_arguments(parser)
    args = parser.parse_args(argv)
    problem = _check_serve(args)
    if problem:
        parser.error(problem)
    try:
        return _serve(args)
    except KeyboardInterrupt:  # Ctrl-C before the signal handlers were installed
        print("kgroup: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as error:  # a config error: one line, no traceback, as kgroup.cli answers it
        from kgroup.errors import KGroupError
        if isinstance(error, (KGroupError, OSError)):
            print(f"kgroup: {error}", file=sys.stderr)
            return 2
        raise
