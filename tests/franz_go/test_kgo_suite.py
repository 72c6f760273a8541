"""franz-go's own client tests (``pkg/kgo`` at kgroup.client_suites.franz_go.FRANZ_GO_VERSION) against
kgroup's broker: a suite kgroup did not write, built from the Go module proxy and run with
``go tool test2json`` (kgroup.client_suites.franz_go).

Every test must pass, or be one of the skips franz-go makes itself for what a plain broker does not
offer (share groups, SASL; ``EXPECTED_SKIPS`` says why for each).  The same run against Apache Kafka
4.4 is the ``slow`` test below: what passes there must pass here (docs/conformance/franz_go.md has
both runs).  The tests' own bounds are franz-go's (each ETL chain waits for its records; Go's
``-test.timeout`` is 20 minutes); the whole run takes about 80 s on 2 cores.
"""
from __future__ import annotations

import pytest

from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.server import KafkaServer, ServerConfig
from kgroup.client_suites.franz_go import EXPECTED_SKIPS, run_kgo_tests
from kgroup.client_suites.go_test_suite import unexpected_outcomes

#: franz-go 1.22.3 has 166 top-level tests in pkg/kgo; a run that reports far fewer did not run.
AT_LEAST_PASSED = 140


def test_franz_go_kgo_suite_passes_against_kgroups_broker():
    config = ServerConfig(brokers=3, coordinator=GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0))
    with KafkaServer(config) as server:
        outcomes = run_kgo_tests(server.bootstrap_servers, replication_factor=3)
    assert unexpected_outcomes(outcomes, EXPECTED_SKIPS) == {}
    assert sum(o.action == "pass" for o in outcomes.values()) >= AT_LEAST_PASSED
    # the integration tests that exercise groups, transactions and the three fixed behaviours ran
    for name in ("TestGroupETL", "TestTxnEtl", "Test848RegexBrokerResolves",
                 "TestClient_ProduceLargeMessages", "TestIssueFetchLargerThanBrokerMaxReadBytes"):
        assert outcomes[name].action == "pass", name


@pytest.mark.slow
@pytest.mark.kafka
def test_franz_go_kgo_suite_passes_against_apache_kafka():
    """The reference: the same tests against Apache Kafka 4.4 (one node), share groups left out (Kafka
    4.4 serves them only when enabled, and franz-go's share tests then fail on a default broker)."""
    from kgroup.testing.apache_kafka import ApacheKafkaCluster

    with ApacheKafkaCluster(nodes=1) as kafka:
        outcomes = run_kgo_tests(kafka.bootstrap_servers, replication_factor=1, skip="ShareGroup")
    assert unexpected_outcomes(outcomes, EXPECTED_SKIPS) == {}
    assert sum(o.action == "pass" for o in outcomes.values()) >= AT_LEAST_PASSED
