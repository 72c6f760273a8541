"""The ``kgroup`` PySpark Python Data Source (Spark 4): batch and streaming reads.

``spark.dataSource.register(KgroupDataSource)``, then
``spark.readStream.format("kgroup").option("source", ...)
.option("bootstrap.servers", ...).load()``.  Offsets are planned on the
driver so Spark's checkpoint keeps exactly-once; executors read through the
group (see :mod:`kgroup_spark.reader`).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, Iterator, Optional

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.types import StructType

from kgroup_spark.plan import offsets_from_json, offsets_to_json
from kgroup_spark.planner import Planner
from kgroup_spark.reader import read_slot

log = logging.getLogger(__name__)


class KgroupDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kgroup"

    def schema(self) -> str:
        planner = Planner(self.options)
        try:
            return planner.validate()
        finally:
            planner.close()

    def reader(self, schema: StructType) -> DataSourceReader:
        return KgroupBatchReader(dict(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KgroupStreamReader(dict(self.options))


class KgroupBatchReader(DataSourceReader):
    """One pass from the group's committed offsets (or ``startingOffsets``) to the latest offsets.

    Like a consumer run once: what it reads is committed to the group.
    """

    def __init__(self, options: dict) -> None:
        self.planner = Planner(options)

    def partitions(self) -> list:
        planner = self.planner
        try:
            planner.validate()
            plans = planner.plan(planner.starting(), planner.latest())
        finally:
            planner.close()
        return [InputPartition(plan) for plan in plans]

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        return _read_partition(partition)


class KgroupStreamReader(DataSourceStreamReader):
    def __init__(self, options: dict) -> None:
        self.planner = Planner(options)
        self._fenced = False
        self._validated = False

    def _ready(self) -> Planner:
        if not self._validated:
            self.planner.validate()
            self._validated = True
        if not self._fenced:
            # A new run of the query (fresh, or restarted from its checkpoint): readers an earlier
            # run left in the group are removed, so their commits are refused from now on.
            self.planner.fence_previous_run()
            self._fenced = True
        return self.planner

    def initialOffset(self) -> dict:
        return offsets_to_json(self._ready().starting())

    def latestOffset(self) -> dict:
        return offsets_to_json(self._ready().latest())

    def partitions(self, start: dict, end: dict) -> list:
        plans = self._ready().plan(offsets_from_json(start), offsets_from_json(end))
        return [InputPartition(plan) for plan in plans]

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        return _read_partition(partition)

    def commit(self, end: dict) -> None:
        acknowledged = self._ready().acknowledge(offsets_from_json(end))
        if acknowledged:
            log.info("kgroup: acknowledged %s", acknowledged)

    def stop(self) -> None:
        self.planner.close()


def _read_partition(partition: Optional[InputPartition]) -> Iterator[tuple]:
    # A plan with nothing to read (``startingOffsets=latest``, or no new records) has no partitions;
    # Spark then calls read() once with None.
    if partition is None:
        return iter(())
    return read_slot(partition.value)


def register(spark: Any) -> None:
    """Register the ``kgroup`` format with a SparkSession.

    Spark starts its Python workers with ``PYSPARK_PYTHON`` (else ``python3`` from PATH), which from a
    virtual environment that is not activated is another interpreter, without kgroup or kafka-python.
    When the user has chosen none (neither ``PYSPARK_PYTHON`` nor ``spark.pyspark.python``), the
    workers get the driver's own interpreter, as the user ran it.
    """
    use_the_drivers_python_for_workers(spark.sparkContext)
    spark.dataSource.register(KgroupDataSource)


def use_the_drivers_python_for_workers(context: Any) -> None:
    if os.environ.get("PYSPARK_PYTHON"):
        return
    chosen = context.getConf().get("spark.pyspark.python")
    if chosen:
        context.pythonExec = chosen
        return
    if context.pythonExec != sys.executable:
        log.info("kgroup: Spark's Python workers run %s (the driver's interpreter; was %s)",
                 sys.executable, context.pythonExec)
        context.pythonExec = sys.executable
