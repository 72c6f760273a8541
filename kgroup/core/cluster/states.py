"""Broker, partition and replica states with their tables of legal previous states (seed 001)."""
from __future__ import annotations

import enum


class BrokerState(enum.Enum):
    LIVE = "live"
    SHUTTING_DOWN = "shutting_down"
    DEAD = "dead"


class PartitionState(enum.Enum):
    NON_EXISTENT = "NonExistentPartition"
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"


# Online -> Online is allowed because preferred-replica, controlled-shutdown and
# reassignment elections re-elect a partition that already has a leader (modern Kafka does too).
PARTITION_LEGAL_PREVIOUS = {
    PartitionState.NON_EXISTENT: frozenset({PartitionState.OFFLINE}),
    PartitionState.NEW: frozenset({PartitionState.NON_EXISTENT}),
    PartitionState.ONLINE: frozenset({PartitionState.NEW, PartitionState.OFFLINE, PartitionState.ONLINE}),
    PartitionState.OFFLINE: frozenset({PartitionState.NEW, PartitionState.ONLINE}),
}


class ReplicaState(enum.Enum):
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT = "NonExistentReplica"


# Offline -> Offline is allowed so a second failure report for an already-offline replica is harmless.
REPLICA_LEGAL_PREVIOUS = {
    ReplicaState.NEW: frozenset({ReplicaState.NON_EXISTENT}),
    ReplicaState.ONLINE: frozenset({ReplicaState.NEW, ReplicaState.ONLINE, ReplicaState.OFFLINE}),
    ReplicaState.OFFLINE: frozenset({ReplicaState.NEW, ReplicaState.ONLINE, ReplicaState.OFFLINE}),
    ReplicaState.DELETION_STARTED: frozenset({ReplicaState.OFFLINE}),
    ReplicaState.DELETION_SUCCESSFUL: frozenset({ReplicaState.DELETION_STARTED}),
    ReplicaState.DELETION_INELIGIBLE: frozenset({ReplicaState.DELETION_STARTED}),
    ReplicaState.NON_EXISTENT: frozenset({ReplicaState.DELETION_SUCCESSFUL}),
}
