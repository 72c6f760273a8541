"""The authorized-operation bit sets a broker without an authorizer answers.

Metadata (v8+), DescribeGroups (v3+), ConsumerGroupDescribe and DescribeCluster can ask for the
operations the client may perform on a resource.  Kafka's ``AuthHelper.authorizedOperations``
answers, when no authorizer is configured, every operation ``AclEntry.supportedOperations`` lists
for the resource type, as a 32-bit field with bit ``AclOperation.code`` set per operation
(``Utils.to32BitField``).  kgroup has no ACLs, so these are its answers.
"""
from __future__ import annotations

import enum
from typing import Iterable, Optional, Set

__all__ = ["AclOperation", "CLUSTER_OPERATIONS", "GROUP_OPERATIONS", "NOT_REQUESTED", "TOPIC_OPERATIONS",
           "bit_set"]


class AclOperation(enum.IntEnum):
    """Kafka's org.apache.kafka.common.acl.AclOperation codes (UNKNOWN, ANY and ALL are never granted)."""

    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


def _bit_field(operations: Iterable[AclOperation]) -> int:
    return sum(1 << operation for operation in set(operations))


A = AclOperation
#: AclEntry.supportedOperations(TOPIC): 8 operations, bits 3-8, 10, 11 = 3576.
TOPIC_OPERATIONS = _bit_field([A.READ, A.WRITE, A.CREATE, A.DESCRIBE, A.DELETE, A.ALTER, A.DESCRIBE_CONFIGS,
                               A.ALTER_CONFIGS])
#: AclEntry.supportedOperations(CLUSTER): 7 operations, bits 5, 7-12 = 8096.
CLUSTER_OPERATIONS = _bit_field([A.CREATE, A.CLUSTER_ACTION, A.DESCRIBE_CONFIGS, A.ALTER_CONFIGS,
                                 A.IDEMPOTENT_WRITE, A.ALTER, A.DESCRIBE])
#: AclEntry.supportedOperations(GROUP): 5 operations, bits 3, 6, 8, 10, 11 = 3400.
GROUP_OPERATIONS = _bit_field([A.READ, A.DESCRIBE, A.DELETE, A.DESCRIBE_CONFIGS, A.ALTER_CONFIGS])
#: The schemas' default (Integer.MIN_VALUE): the operations were not asked for.
NOT_REQUESTED = -2**31


def bit_set(field: int) -> Optional[Set[int]]:
    """``field`` as kafka-python's ``bitfield`` type holds it (Metadata, DescribeGroups, DescribeCluster):
    the set of bits that are on, None for the schema default (bit 31 alone)."""
    if field == NOT_REQUESTED:
        return None
    return {bit for bit in range(32) if field & (1 << bit)}
