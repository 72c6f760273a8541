"""Fixtures shared by several test directories."""
from __future__ import annotations

import os

import pytest
from hypothesis import settings

from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig
from kgroup.io.inprocess import InProcessHub

# Property tests draw the same examples on every run (CI must not fail on a lucky draw; a flaky
# test blocks every landing).  HYPOTHESIS_PROFILE=explore searches afresh, as a campaign would.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def hub():
    """A real-clock in-process hub in front of one GroupCoordinator with fast group timings."""
    hub = InProcessHub(GroupCoordinator(GroupCoordinatorConfig(group_min_session_timeout_ms=100,
                                                               group_initial_rebalance_delay_ms=0)))
    yield hub
    hub.close()
