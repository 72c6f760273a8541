"""The recorded answers stay true: the whole suite re-run against the pinned Apache Kafka (1 node,
the apache_kafka_single fixture, marker ``kafka``) must match the recording with 0 divergences."""
from __future__ import annotations

from kgroup.broker_conformance.runner import load_recording, run_suite, select


def test_apache_kafka_matches_its_recording(apache_kafka_single):
    recording = load_recording()
    assert recording["kafka_version"] == apache_kafka_single.version
    result = run_suite(apache_kafka_single.bootstrap_servers, recording["scenarios"], select())
    divergent = {r.scenario.scenario_id: r.diffs[:3] for r in result.divergent}
    assert divergent == {}
    assert len(result.results) == len(recording["scenarios"])
