"""Fixtures for the kafka-python conformance tests (see kafka_python_harness)."""
from __future__ import annotations

import pytest


@pytest.fixture
def make_coordinator(hub, monkeypatch):
    """``make(subscription=None, answers=None, partitions=None, **config)``: a drop-in
    ConsumerCoordinator whose transport is a ScriptedTransport on ``hub``."""
    from kafka_python_harness import FAST, ScriptedTransport, fake_client, subscribed_state

    from kgroup.io.kafka_python import coordinator as module

    made = []
    transports = []

    def make(subscription=None, answers=None, partitions=None, **overrides):
        transport = ScriptedTransport(hub, answers)
        transports.append(transport)
        monkeypatch.setattr(module, "KafkaPythonTransport", lambda client, request_timeout_ms: transport)
        client = fake_client(partitions or {"t": 2})
        subscription = subscription if subscription is not None else subscribed_state()
        config = dict(FAST, group_id="g")
        config.update(overrides)
        coordinator = module.ConsumerCoordinator(client, subscription, **config)
        coordinator.transport = transport
        made.append(coordinator)
        return coordinator

    yield make
    for coordinator in made:
        try:
            coordinator.close(autocommit=False, timeout_ms=500)
        except Exception:
            pass
