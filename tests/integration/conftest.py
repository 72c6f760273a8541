"""Real-broker fixtures: one Tansu broker per test session (kgroup.testing.tansu).

The broker keeps everything in memory, so every test uses its own topic and
group names instead of a fresh broker.
"""
from __future__ import annotations

import contextlib
import uuid

import pytest

from kgroup.testing.tansu import BrokerUnavailableError, running_tansu


@pytest.fixture(scope="session")
def tansu_bootstrap() -> str:
    """``host:port`` of a Tansu broker that lives for the whole session."""
    with contextlib.ExitStack() as stack:
        try:
            bootstrap = stack.enter_context(running_tansu())
        except BrokerUnavailableError as exc:
            pytest.fail(str(exc), pytrace=False)
        yield bootstrap


@pytest.fixture
def unique_name():
    """Fresh topic / group names: the session's broker is shared."""

    def make(prefix: str) -> str:
        return f"{prefix}-{uuid.uuid4().hex[:10]}"

    return make
