"""Collects every measurement of the session; prints the table, saves it and the plot.

Both go to ``benchmarks/results/`` (git-ignored): ``assignors.md`` (the
table in Markdown, with the issue's targets) and ``assignor_times.png``.

The table and plot appear only when benchmarking is enabled
(``--benchmark-enable``): in the default test run each benchmark body runs
once as a smoke test and its single timing means little.
"""
from __future__ import annotations

import pytest

from benchmarks import _report

_MEASUREMENTS = pytest.StashKey[list]()
_SERVER_ASSIGNOR_TIMES = pytest.StashKey[dict]()


def pytest_configure(config):
    config.stash[_MEASUREMENTS] = []
    config.stash[_SERVER_ASSIGNOR_TIMES] = {}


@pytest.fixture
def measurements(request) -> list:
    """Append a ``Measurement`` here to put it in the end-of-run table."""
    return request.config.stash[_MEASUREMENTS]


@pytest.fixture
def server_assignor_times(request) -> dict:
    """``(side, scenario, size label) -> (best seconds, rounds)`` of ``bench_server_assignors.py``."""
    return request.config.stash[_SERVER_ASSIGNOR_TIMES]


def _benchmarking(config) -> bool:
    return (bool(config.getoption("benchmark_enable", False))
            or not config.getoption("benchmark_disable", False))


@pytest.hookimpl(trylast=True)  # after pytest-benchmark's own tables
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _benchmarking(config):
        return
    server_times = config.stash.get(_SERVER_ASSIGNOR_TIMES, {})
    if server_times:
        terminalreporter.section("server-side uniform vs client-side sticky (best of rounds)")
        for line in _report.server_assignor_table(server_times):
            terminalreporter.write_line(line)
    measurements = config.stash.get(_MEASUREMENTS, [])
    if not measurements:
        return
    terminalreporter.section("kgroup vs kafka-python assignors (best of rounds)")
    terminalreporter.write_line(_report.table(measurements))
    for line in _report.targets(measurements):
        terminalreporter.write_line(line)
    markdown, plot = _report.save(measurements)
    terminalreporter.write_line(f"markdown table: {markdown}")
    if plot is not None:
        terminalreporter.write_line(f"plot: {plot}")
