"""The supported kafka-python versions: what pyproject pins, what is installed,
and what docs/kafka_python.md promises must agree."""
from __future__ import annotations

import re
from importlib.metadata import requires, version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


def _kafka_python_requirement() -> Requirement:
    for line in requires("kgroup") or []:
        req = Requirement(line)
        if req.name == "kafka-python" and req.marker is None:
            return req
    raise AssertionError("kgroup does not declare a kafka-python requirement")


def test_installed_kafka_python_satisfies_the_pin():
    req = _kafka_python_requirement()
    installed = Version(version("kafka-python"))
    assert installed in req.specifier, f"kafka-python {installed} is outside kgroup's pin {req.specifier}"


def test_pin_is_the_3_0_series_the_drop_in_was_written_against():
    spec = _kafka_python_requirement().specifier
    assert Version("3.0.0") in spec and Version("3.0.99") in spec
    assert Version("2.2.15") not in spec and Version("3.1.0") not in spec


def test_pyproject_and_docs_state_the_same_range():
    pyproject = (ROOT / "pyproject.toml").read_text()
    pinned = re.search(r'"kafka-python(>=[^"]+)"', pyproject).group(1)
    assert Requirement("kafka-python" + pinned).specifier == _kafka_python_requirement().specifier
    docs = (ROOT / "docs" / "kafka_python.md").read_text()
    assert f"kafka-python{pinned}" in docs.replace(" ", "")
