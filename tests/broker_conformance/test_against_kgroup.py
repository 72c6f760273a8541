"""kgroup's broker held to Apache Kafka's recorded answers (no JVM): every scenario of
kgroup.broker_conformance runs against KafkaServer; the divergent ones must be exactly
KNOWN_DIVERGENCES (docs/conformance/broker.md)."""
from __future__ import annotations

import pytest

from kgroup.broker_conformance.kgroup_server import running_kgroup_server
from kgroup.broker_conformance.known_divergences import KNOWN_DIVERGENCES
from kgroup.broker_conformance.runner import SCENARIOS, load_recording, run_suite, select
from kgroup.testing.apache_kafka import KAFKA_VERSION


@pytest.fixture(scope="module")
def kgroup_results():
    recording = load_recording()
    with running_kgroup_server() as server:
        return run_suite(server.bootstrap_servers, recording["scenarios"], select())


def test_the_recording_is_the_pinned_kafka_and_covers_every_scenario():
    recording = load_recording()
    assert recording["kafka_version"] == KAFKA_VERSION
    select()
    assert len(SCENARIOS) >= 150
    assert sorted(recording["scenarios"]) == sorted(SCENARIOS), \
        "re-record: python -m kgroup.broker_conformance record"
    stopped = [i for i, s in recording["scenarios"].items() if s["steps"] and s["steps"][-1][0] == "stopped"]
    assert stopped == []


def test_kgroup_differs_from_kafka_exactly_where_listed(kgroup_results):
    divergent = {r.scenario.scenario_id: r.diffs for r in kgroup_results.divergent}
    unexpected = {i: d[:3] for i, d in divergent.items() if i not in KNOWN_DIVERGENCES}
    now_matching = sorted(set(KNOWN_DIVERGENCES) - set(divergent))
    assert unexpected == {}, "new divergences from Kafka: fix kgroup or list them with a reason"
    assert now_matching == [], "these now match Kafka: take them off KNOWN_DIVERGENCES and the docs"


def test_known_divergences_name_real_scenarios_with_reasons():
    select()
    assert set(KNOWN_DIVERGENCES) <= set(SCENARIOS)
    assert all(len(reason) > 20 for reason in KNOWN_DIVERGENCES.values())
