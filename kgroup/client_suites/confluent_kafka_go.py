"""confluent-kafka-go's own test suite (package ``kafka``, the Go binding of librdkafka), run against
any broker: a fidelity check kgroup did not write.

The package's unit tests need no broker; its integration tests read ``./testconf.json`` from their
working folder (``testhelpers_test.go``: Brokers, TopicName, GroupID, ...) and skip without it.  They
are a testify suite, ``TestIntegration``, whose subtests are the real tests (each has an outcome of
its own here, ``TestIntegration/TestConsumerPoll`` and so on): producing and consuming through every
API, classic consumer groups with eager and cooperative rebalancing, committed offsets, watermarks
and timestamps, and the admin API (topics, configs, consumer groups, ListOffsets, DeleteRecords,
ACLs, SCRAM credentials); plus ``TestTransactionalProducer`` and ``TestTransactionalSendOffsets``
(exactly-once through a group).  The module comes from the Go module proxy at a pinned version
(:data:`CONFLUENT_KAFKA_GO_VERSION`, with the static librdkafka it bundles, built with cgo);
:mod:`kgroup.client_suites.go_test_suite` builds and runs it.

    python -m kgroup.client_suites.confluent_kafka_go --bootstrap 127.0.0.1:9092
    python -m kgroup.client_suites.confluent_kafka_go --against kgroup    # starts kgroup's broker
    python -m kgroup.client_suites.confluent_kafka_go --against kafka     # starts Apache Kafka (one node)
"""
from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterator, Optional, Sequence

from kgroup.client_suites.go_test_suite import (
    GoSuiteUnavailableError, GoTestOutcome, go_test_binary, outcome_counts, run_go_tests, unexpected_outcomes,
)
from kgroup.errors import KGroupError

__all__ = ["CONFLUENT_KAFKA_GO_VERSION", "EXPECTED_SKIPS", "INTEGRATION_SUITE", "ISOLATED_TESTS",
           "KAFKA_FAILURES", "KAFKA_TIMING_DEPENDENT", "KNOWN_FAILURES", "TEST_TOPIC",
           "TEST_TOPIC_PARTITIONS", "TIMING_DEPENDENT", "main", "run_confluent_go_tests", "write_testconf"]

#: The confluent-kafka-go release whose tests are run (bundles librdkafka 2.11.1).
CONFLUENT_KAFKA_GO_VERSION = "v2.11.1"
MODULE = "github.com/confluentinc/confluent-kafka-go/v2"
#: The testify suite whose subtests are the integration tests.
INTEGRATION_SUITE = "TestIntegration"
#: testconf.json's TopicName: the tests produce to it and read it back, and never create it (their
#: CI broker auto-creates it with ``num.partitions=4``, testresources/kraft/server.properties).
TEST_TOPIC = "test"
TEST_TOPIC_PARTITIONS = 4
#: Tests the suite skips itself when the broker or the environment lacks what they need: a skip of
#: these is expected; any other skip is reported.
EXPECTED_SKIPS: Dict[str, str] = {
    "TestConfigPluginPaths": "needs librdkafka test plugins built beside the module (a unit test)",
    f"{INTEGRATION_SUITE}/TestAdminClient_DescribeCluster": "SASL: runs only with BrokersSasl in testconf",
    f"{INTEGRATION_SUITE}/TestAdminClient_DescribeTopics": "SASL: runs only with BrokersSasl in testconf",
    f"{INTEGRATION_SUITE}/TestAdminClient_DescribeConsumerGroupsAuthorizedOperations":
        "SASL: runs only with BrokersSasl in testconf",
}
#: Tests that fail against Apache Kafka 4.4 started with its defaults too (the reference run).
KAFKA_FAILURES: Dict[str, str] = {
    f"{INTEGRATION_SUITE}/TestAdminACLs": "CreateAcls needs an authorizer; a default broker answers "
                                          "SECURITY_DISABLED (\"No Authorizer is configured\")",
}
#: Tests that pass on Kafka and fail on kgroup, each for a reason given (docs/conformance/
#: confluent_kafka_go.md): an API kgroup does not serve, or a race in the test that kgroup's timing
#: loses.  A test of these that starts passing must be reported, so that the table stays true.
KNOWN_FAILURES: Dict[str, str] = {
    **KAFKA_FAILURES,
    f"{INTEGRATION_SUITE}/TestAdminConfig": "DescribeConfigs / AlterConfigs / IncrementalAlterConfigs "
                                            "(KIP-133, KIP-339) are not served by kgroup",
    f"{INTEGRATION_SUITE}/TestAdminClient_UserScramCredentials": "Describe/AlterUserScramCredentials "
                                                                 "(KIP-554) are not served by kgroup",
    f"{INTEGRATION_SUITE}/TestAdminClient_DeleteRecords": "DeleteRecords (KIP-107) is not served by "
                                                          "kgroup: its logs never move their start offset",
    "TestTransactionalProducer": "the test's Flush(-1) does not wait (a negative timeout has already "
                                 "expired), so it passes only where SendOffsetsToTransaction outlasts "
                                 "librdkafka's partition registration and produce: on Kafka the "
                                 "AddOffsetsToTxn sent right after a commit is answered "
                                 "CONCURRENT_TRANSACTIONS (TransactionMarkerChannelManager writes the "
                                 "markers asynchronously) and retried 100 ms later; kgroup completes a "
                                 "one-broker transaction within EndTxn, so nothing is retried",
}
#: Tests whose outcome depends on a race in the test itself, on either broker: not asserted.
TIMING_DEPENDENT: Dict[str, str] = {
    f"{INTEGRATION_SUITE}/TestProducerFunc": "expects Produce() to a partition that does not exist to "
                                             "be accepted, which holds only while the new producer has "
                                             "no metadata for the topic yet: it fails whenever the "
                                             "metadata arrives before the loop reaches that message",
}
#: Tests whose outcome varied between runs against Kafka 4.4: not asserted there.
KAFKA_TIMING_DEPENDENT: Dict[str, str] = {
    **TIMING_DEPENDENT,
    "TestTransactionalSendOffsets": "failed once in a whole run against Kafka 4.4 (its lines were not "
                                    "captured) and passed in another and alone",
}
#: Tests run each in an invocation of their own, bounded, and started in a wall-clock second of their
#: own.  TestConsumerCloseForStaticMember closes consumers while other goroutines still poll them, and
#: hung once in librdkafka's queue poll on a loaded machine: alone, a hang fails that test instead of
#: ending the whole run at Go's -test.timeout.  TestTransactionalSendOffsets creates topics named by
#: createTestTopic, which seeds its random suffix with the Unix second: run in the same second as
#: TestTransactionalProducer's (which takes 0.1 s on kgroup), it finds them created and fails on that.
ISOLATED_TESTS = ("TestConsumerCloseForStaticMember", "TestTransactionalSendOffsets")
ISOLATED_TIMEOUT_S = 120.0
#: How many times an isolated test that hangs is run: TestConsumerCloseForStaticMember hung in 6 of 16
#: runs against kgroup (none of 3 against Kafka), inside librdkafka's poll of a consumer the test
#: closes at the same time from another goroutine (docs/conformance/confluent_kafka_go.md).
HANG_ATTEMPTS = 3


def write_testconf(folder: Path, bootstrap: str, *, group_id: str = "testgroup") -> Path:
    """Write the testconf.json the integration tests read from their working folder."""
    path = folder / "testconf.json"
    path.write_text(json.dumps({"Brokers": bootstrap, "TopicName": TEST_TOPIC, "GroupID": group_id,
                                "PerfMsgCount": 1000, "PerfMsgSize": 100,
                                "Config": ["api.version.request=true"]}, indent=2) + "\n")
    return path


def create_test_topic(bootstrap: str) -> None:
    """Create testconf's topic with the partitions the tests' own broker would auto-create it with
    (they produce to partition 0 and to PartitionAny, and assert messages per partition)."""
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic(TEST_TOPIC, num_partitions=TEST_TOPIC_PARTITIONS,
                                      replication_factor=1)])
    except TopicAlreadyExistsError:
        pass
    finally:
        admin.close()


def run_confluent_go_tests(bootstrap: str, *, run: str = ".*", skip: Optional[str] = None,
                           group_protocol: Optional[str] = None, timeout_s: float = 1_200.0,
                           create_topic: bool = True) -> Dict[str, GoTestOutcome]:
    """Run confluent-kafka-go's ``kafka`` tests matching ``run`` (and not ``skip``) against
    ``bootstrap``; each top-level test's outcome by name, and each integration test's as
    ``TestIntegration/<name>``.  ``group_protocol`` is the suite's TEST_CONSUMER_GROUP_PROTOCOL
    (None: classic; "consumer": KIP-848)."""
    binary, _source = go_test_binary(MODULE, CONFLUENT_KAFKA_GO_VERSION, "kafka")
    if create_topic:
        create_test_topic(bootstrap)
    env = {} if group_protocol is None else {"TEST_CONSUMER_GROUP_PROTOCOL": group_protocol}
    top_level_run = run.split("/", 1)[0]
    isolated = [name for name in ISOLATED_TESTS
                if re.search(top_level_run, name) and not (skip and re.search(skip, name))]
    isolated_pattern = "|".join(f"^{name}$" for name in ISOLATED_TESTS)
    # The tests find testconf.json in their working folder; the module cache is read-only, and no
    # test reads another file of its package (testresources/ is for their docker-compose mode only).
    with tempfile.TemporaryDirectory(prefix="kgroup-confluent-go-") as folder:
        write_testconf(Path(folder), bootstrap)
        outcomes = run_go_tests(binary, Path(folder), env, run=run,
                                skip=f"{skip}|{isolated_pattern}" if skip else isolated_pattern,
                                timeout_s=timeout_s, suites=(INTEGRATION_SUITE,))
        for name in isolated:
            outcomes[name] = _run_isolated(binary, Path(folder), env, name)
    return outcomes


def _run_isolated(binary: Path, folder: Path, env: Dict[str, str], name: str) -> GoTestOutcome:
    """``name``'s outcome from invocations of its own: a hang (no outcome within ISOLATED_TIMEOUT_S) is
    run again, up to HANG_ATTEMPTS times in all; a failure is not."""
    outcome = GoTestOutcome(name, "fail", 0.0, "(kgroup) isolated_run_test.go: not run\n")
    for _attempt in range(HANG_ATTEMPTS):
        time.sleep(1.0)  # a Unix second no earlier test created topics in (createTestTopic's seed)
        try:
            found = run_go_tests(binary, folder, env, run=f"^{name}$", timeout_s=ISOLATED_TIMEOUT_S)
        except GoSuiteUnavailableError as error:  # Go's -test.timeout ended it before any outcome
            outcome = GoTestOutcome(name, "fail", ISOLATED_TIMEOUT_S,
                                    f"(kgroup) isolated_run_test.go: hung: {error}\n")
            continue
        outcome = found.get(name) or outcome
        if "panic: test timed out" not in outcome.output:
            return outcome
    return outcome


@contextlib.contextmanager
def _broker(against: str) -> Iterator[str]:
    """The bootstrap of a broker started for the run."""
    if against == "kafka":
        from kgroup.testing.apache_kafka import ApacheKafkaCluster
        with ApacheKafkaCluster(nodes=1) as kafka:
            yield kafka.bootstrap_servers
    else:
        from kgroup.core.coordinator import GroupCoordinatorConfig
        from kgroup.server import KafkaServer, ServerConfig
        config = ServerConfig(coordinator=GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0))
        with KafkaServer(config) as server:
            yield server.bootstrap_servers


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kgroup.client_suites.confluent_kafka_go",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--bootstrap", help="the broker to test (HOST:PORT)")
    where.add_argument("--against", choices=("kgroup", "kafka"), help="start this broker for the run")
    parser.add_argument("--group-protocol", choices=("classic", "consumer"),
                        help="TEST_CONSUMER_GROUP_PROTOCOL (default: unset, classic)")
    parser.add_argument("--run", default=".*", help="Go's -test.run pattern (default all)")
    parser.add_argument("--skip", help="Go's -test.skip pattern")
    parser.add_argument("--verbose", action="store_true", help="list the passed tests too")
    args = parser.parse_args(argv)
    try:
        with contextlib.ExitStack() as stack:
            bootstrap = stack.enter_context(_broker(args.against)) if args.against else args.bootstrap
            outcomes = run_confluent_go_tests(bootstrap, run=args.run, skip=args.skip,
                                              group_protocol=args.group_protocol)
    except KGroupError as error:
        print(f"kgroup confluent-kafka-go: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kgroup confluent-kafka-go: interrupted", file=sys.stderr)
        return 130
    counts = outcome_counts(outcomes)
    failing_lines = unexpected_outcomes(outcomes, EXPECTED_SKIPS)
    for outcome in sorted(outcomes.values(), key=lambda o: o.name):
        if outcome.action == "pass" and not args.verbose:
            continue
        reason = {**EXPECTED_SKIPS, **KNOWN_FAILURES, **KAFKA_TIMING_DEPENDENT}.get(outcome.name, "")
        print(f"{outcome.action.upper():4} {outcome.name} ({outcome.elapsed_s:.2f} s) {reason}".rstrip())
        if outcome.name in failing_lines and outcome.name != INTEGRATION_SUITE:
            for line in failing_lines[outcome.name][1]:
                print(f"       {line[:300]}")
    print(f"confluent-kafka-go {CONFLUENT_KAFKA_GO_VERSION} kafka tests against {bootstrap}: "
          f"{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped")
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
