"""One read attempt of a slot outside Spark, in its own process (a duplicated or speculative attempt).

Usage: python spark_attempt_worker.py OPTIONS_JSON SLOT; prints ``rows N`` or ``error ClassName``.
"""

from __future__ import annotations

import json
import sys

from kgroup_spark.planner import Planner
from kgroup_spark.reader import read_slot


def main() -> int:
    options = json.loads(sys.argv[1])
    slot = int(sys.argv[2])
    planner = Planner(options)
    planner.validate()
    plan = planner.plan({}, planner.latest())[slot]
    try:
        rows = sum(1 for _ in read_slot(plan))
    except Exception as error:  # reported to the test, which asserts the type
        print(f"error {type(error).__name__}: {error}", flush=True)
        return 0
    print(f"rows {rows}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
