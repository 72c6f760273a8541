"""Fixtures shared by several test directories."""
from __future__ import annotations

import pytest

from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig
from kgroup.io.inprocess import InProcessHub


@pytest.fixture
def hub():
    """A real-clock in-process hub in front of one GroupCoordinator with fast group timings."""
    hub = InProcessHub(GroupCoordinator(GroupCoordinatorConfig(group_min_session_timeout_ms=100,
                                                               group_initial_rebalance_delay_ms=0)))
    yield hub
    hub.close()
