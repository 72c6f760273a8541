"""Broker, partition and replica states with their tables of legal previous states.

The partition and replica tables are exactly Kafka's ``validPreviousStates``
(``kafka.controller.PartitionStateMachine`` / ``ReplicaStateMachine``, 3.x).
"""
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


# Online -> Online: preferred-replica, controlled-shutdown and reassignment elections re-elect a
# partition that already has a leader.  Offline -> Offline: a partition that lost its leader may be
# reported offline again (another broker of its replica set fails) - Kafka's PartitionStateMachine.
PARTITION_LEGAL_PREVIOUS = {
    PartitionState.NON_EXISTENT: frozenset({PartitionState.OFFLINE}),
    PartitionState.NEW: frozenset({PartitionState.NON_EXISTENT}),
    PartitionState.ONLINE: frozenset({PartitionState.NEW, PartitionState.OFFLINE, PartitionState.ONLINE}),
    PartitionState.OFFLINE: frozenset({PartitionState.NEW, PartitionState.ONLINE, PartitionState.OFFLINE}),
}


class ReplicaState(enum.Enum):
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT = "NonExistentReplica"


# Offline -> Offline: a second failure report for an already-offline replica is harmless.
# ReplicaDeletionIneligible is entered from Offline (TopicDeletionManager marks replicas of a dead
# broker ineligible before deletion starts) as well as from DeletionStarted, and is left for Online
# (the broker came back) or Offline (deletion is retried) - Kafka's ReplicaStateMachine.
REPLICA_LEGAL_PREVIOUS = {
    ReplicaState.NEW: frozenset({ReplicaState.NON_EXISTENT}),
    ReplicaState.ONLINE: frozenset({ReplicaState.NEW, ReplicaState.ONLINE, ReplicaState.OFFLINE,
                                    ReplicaState.DELETION_INELIGIBLE}),
    ReplicaState.OFFLINE: frozenset({ReplicaState.NEW, ReplicaState.ONLINE, ReplicaState.OFFLINE,
                                     ReplicaState.DELETION_INELIGIBLE}),
    ReplicaState.DELETION_STARTED: frozenset({ReplicaState.OFFLINE}),
    ReplicaState.DELETION_SUCCESSFUL: frozenset({ReplicaState.DELETION_STARTED}),
    ReplicaState.DELETION_INELIGIBLE: frozenset({ReplicaState.OFFLINE, ReplicaState.DELETION_STARTED}),
    ReplicaState.NON_EXISTENT: frozenset({ReplicaState.DELETION_SUCCESSFUL}),
}
