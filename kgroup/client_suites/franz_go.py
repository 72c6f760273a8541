"""franz-go's own client test suite (``pkg/kgo``), run against any broker: a fidelity check kgroup did
not write.

franz-go's ``kgo`` tests are unit tests plus integration tests that talk to the broker named by
``KGO_SEEDS``: producing and consuming (compression, large messages, pausing, purging, regexes),
classic and KIP-848 consumer groups under every balancer with static members (``TestGroupETL``), and
exactly-once transactions chained through groups (``TestTxnEtl``).  The module comes from the Go
module proxy at a pinned version (:data:`FRANZ_GO_VERSION`; :mod:`kgroup.client_suites.go_test_suite`
builds and runs it).

    python -m kgroup.client_suites.franz_go --bootstrap 127.0.0.1:9092 --replication-factor 3
    python -m kgroup.client_suites.franz_go --against kgroup        # starts kgroup's broker (3 brokers)
    python -m kgroup.client_suites.franz_go --against kafka         # starts Apache Kafka (one node)
"""
from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Dict, Iterator, Optional, Sequence, Tuple

from kgroup.errors import KGroupError
from kgroup.client_suites.go_test_suite import GoTestOutcome, go_test_binary, outcome_counts, run_go_tests

__all__ = ["EXPECTED_SKIPS", "FRANZ_GO_VERSION", "run_kgo_tests", "main"]

#: The franz-go release whose tests are run (the newest the Go module proxy served on 2026-11-25).
FRANZ_GO_VERSION = "v1.22.3"
#: Tests franz-go skips itself when the broker (or the environment) lacks what they need: a skip of
#: these is expected; any other skip is reported.
EXPECTED_SKIPS = {
    "TestShareGroup": "share groups (KIP-932): not served by kgroup; Kafka 4.4 needs them enabled",
    "TestShareGroupETL": "share groups (KIP-932)",
    "TestShareGroupAckOnClose": "share groups (KIP-932)",
    "TestShareGroupOffsetsAdmin": "share groups (KIP-932)",
    "TestConsumeRegexShareSkipsInternal": "share groups (KIP-932)",
    "TestSCRAMAuth": "SASL/SCRAM: runs only with KGO_TEST_SCRAM set",
    "TestSCRAMAuthBadCredentials": "SASL/SCRAM: runs only with KGO_TEST_SCRAM set",
    "TestOAuthAuth": "SASL/OAUTHBEARER: runs only with KGO_TEST_OAUTH_SEEDS set",
    "TestIssueProduceBrokerTooOldFailsRecords": "runs only against a broker without Produce v13 "
                                                "(Kafka 4.4 has it, kgroup serves up to v11)",
}


def run_kgo_tests(bootstrap: str, *, replication_factor: int, records: int = 50_000, run: str = ".*",
                  skip: Optional[str] = None, timeout_s: float = 1_200.0) -> Dict[str, GoTestOutcome]:
    """Run franz-go's kgo tests matching ``run`` (and not ``skip``) against ``bootstrap``; each
    top-level test's outcome by name.  ``records`` is ``KGO_TEST_RECORDS``: how many records the ETL
    tests push through each chain (franz-go's default is 500,000)."""
    binary, source = go_test_binary("github.com/twmb/franz-go", FRANZ_GO_VERSION, "pkg/kgo")
    env = {"KGO_SEEDS": bootstrap, "KGO_TEST_RF": str(replication_factor), "KGO_TEST_RECORDS": str(records),
           "KGO_LOG_LEVEL": "none"}
    return run_go_tests(binary, source, env, run=run, skip=skip, timeout_s=timeout_s)


@contextlib.contextmanager
def _broker(against: str) -> Iterator[Tuple[str, int]]:
    """(bootstrap, replication factor) of a broker started for the run."""
    if against == "kafka":
        from kgroup.testing.apache_kafka import ApacheKafkaCluster
        with ApacheKafkaCluster(nodes=1) as kafka:
            yield kafka.bootstrap_servers, 1
    else:
        from kgroup.core.coordinator import GroupCoordinatorConfig
        from kgroup.server import KafkaServer, ServerConfig
        config = ServerConfig(brokers=3,
                              coordinator=GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0))
        with KafkaServer(config) as server:
            yield server.bootstrap_servers, 3


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kgroup.client_suites.franz_go", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--bootstrap", help="the broker to test (HOST:PORT)")
    where.add_argument("--against", choices=("kgroup", "kafka"), help="start this broker for the run")
    parser.add_argument("--replication-factor", type=int, default=1, help="with --bootstrap (default 1)")
    parser.add_argument("--records", type=int, default=50_000, help="KGO_TEST_RECORDS (default 50000)")
    parser.add_argument("--run", default=".*", help="Go's -test.run pattern (default all)")
    parser.add_argument("--skip", help="Go's -test.skip pattern")
    args = parser.parse_args(argv)
    try:
        with contextlib.ExitStack() as stack:
            if args.against:
                bootstrap, rf = stack.enter_context(_broker(args.against))
            else:
                bootstrap, rf = args.bootstrap, args.replication_factor
            outcomes = run_kgo_tests(bootstrap, replication_factor=rf, records=args.records, run=args.run,
                                     skip=args.skip)
    except KGroupError as error:
        print(f"kgroup franz-go: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kgroup franz-go: interrupted", file=sys.stderr)
        return 130
    counts = outcome_counts(outcomes)
    for outcome in sorted(outcomes.values(), key=lambda o: o.name):
        if outcome.action != "pass":
            reason = EXPECTED_SKIPS.get(outcome.name, "") if outcome.action == "skip" else ""
            print(f"{outcome.action.upper():4} {outcome.name} ({outcome.elapsed_s:.2f} s) {reason}".rstrip())
    print(f"franz-go {FRANZ_GO_VERSION} kgo tests against {bootstrap}: {counts['pass']} passed, "
          f"{counts['fail']} failed, {counts['skip']} skipped")
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
