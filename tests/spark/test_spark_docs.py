"""The ```python-spark blocks of docs/guide/spark.md run here, in the shared SparkSession.

They are not run by tests/test_docs_examples.py, which starts a fresh interpreter per block (a Spark
JVM each time would take most of its minute); here ``getOrCreate()`` returns the session the other
Spark tests use.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "spark.md"
BLOCKS = re.findall(r"^```python-spark\n(.*?)^```", GUIDE.read_text(), re.MULTILINE | re.DOTALL)


def test_the_guide_has_runnable_examples():
    assert BLOCKS


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_guide_example_runs(spark, index):
    source = BLOCKS[index]
    assert "spark.stop()" not in source  # would stop the shared session
    exec(compile(source, f"{GUIDE}:block{index}", "exec"), {"__name__": "guide_example"})
