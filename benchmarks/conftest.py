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


def pytest_configure(config):
    config.stash[_MEASUREMENTS] = []


@pytest.fixture
def measurements(request) -> list:
    """Append a ``Measurement`` here to put it in the end-of-run table."""
    return request.config.stash[_MEASUREMENTS]


def _benchmarking(config) -> bool:
    return (bool(config.getoption("benchmark_enable", False))
            or not config.getoption("benchmark_disable", False))


@pytest.hookimpl(trylast=True)  # after pytest-benchmark's own tables
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    measurements = config.stash.get(_MEASUREMENTS, [])
    if not measurements or not _benchmarking(config):
        return
    terminalreporter.section("kgroup vs kafka-python assignors (best of rounds)")
    terminalreporter.write_line(_report.table(measurements))
    for line in _report.targets(measurements):
        terminalreporter.write_line(line)
    markdown, plot = _report.save(measurements)
    terminalreporter.write_line(f"markdown table: {markdown}")
    if plot is not None:
        terminalreporter.write_line(f"plot: {plot}")
