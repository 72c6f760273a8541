"""kgroup_spark: Spark executors that own a custom source's partitions through the consumer-group protocol.

Importing the package needs no Spark; :mod:`kgroup_spark.datasource` does.
"""

from kgroup_spark.errors import (
    BatchNotCoveredError,
    CoordinatorUnreachableError,
    OwnershipFencedError,
    SourceOptionError,
)
from kgroup_spark.host import GroupHost
from kgroup_spark.source import PartitionedSource

__all__ = [
    "BatchNotCoveredError",
    "CoordinatorUnreachableError",
    "GroupHost",
    "OwnershipFencedError",
    "PartitionedSource",
    "SourceOptionError",
    "register",
]


def register(spark: object) -> None:
    """Register the ``kgroup`` data source format with a SparkSession (Spark 4)."""
    from kgroup_spark.datasource import register as register_source

    register_source(spark)
