"""The partition and replica state tables against Kafka's ``validPreviousStates``.

Source: Kafka 3.7 ``core/src/main/scala/kafka/controller/PartitionStateMachine.scala`` and
``ReplicaStateMachine.scala`` (the ``validPreviousStates`` of each ``case object``), written out
here by Kafka's state names so the comparison does not depend on our table's own spelling.
"""
import pytest

from kgroup.core.cluster.partition import Partition
from kgroup.core.cluster.states import (
    PARTITION_LEGAL_PREVIOUS, REPLICA_LEGAL_PREVIOUS, PartitionState, ReplicaState,
)
from kgroup.errors import IllegalStateTransition

KAFKA_PARTITION_VALID_PREVIOUS = {
    "NewPartition": {"NonExistentPartition"},
    "OnlinePartition": {"NewPartition", "OnlinePartition", "OfflinePartition"},
    "OfflinePartition": {"NewPartition", "OnlinePartition", "OfflinePartition"},
    "NonExistentPartition": {"OfflinePartition"},
}

KAFKA_REPLICA_VALID_PREVIOUS = {
    "NewReplica": {"NonExistentReplica"},
    "OnlineReplica": {"NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"},
    "OfflineReplica": {"NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"},
    "ReplicaDeletionStarted": {"OfflineReplica"},
    "ReplicaDeletionSuccessful": {"ReplicaDeletionStarted"},
    "ReplicaDeletionIneligible": {"OfflineReplica", "ReplicaDeletionStarted"},
    "NonExistentReplica": {"ReplicaDeletionSuccessful"},
}


def _by_kafka_name(table):
    return {target.value: {source.value for source in sources} for target, sources in table.items()}


def test_partition_table_is_kafkas_partition_state_machine_valid_previous_states():
    """Kafka PartitionStateMachine.scala: every PartitionState's validPreviousStates."""
    assert _by_kafka_name(PARTITION_LEGAL_PREVIOUS) == KAFKA_PARTITION_VALID_PREVIOUS


def test_replica_table_is_kafkas_replica_state_machine_valid_previous_states():
    """Kafka ReplicaStateMachine.scala: every ReplicaState's validPreviousStates."""
    assert _by_kafka_name(REPLICA_LEGAL_PREVIOUS) == KAFKA_REPLICA_VALID_PREVIOUS


def _partition_in(state: PartitionState) -> Partition:
    partition = Partition("t", 0, [1])
    partition.state.state = state
    return partition


def _replica_in(state: ReplicaState):
    machine = Partition("t", 0, [1]).replica_states[1]
    machine.state = state
    return machine


PARTITION_MOVES = [(source, target) for target in PartitionState for source in PartitionState]
REPLICA_MOVES = [(source, target) for target in ReplicaState for source in ReplicaState]


@pytest.mark.parametrize("source,target", PARTITION_MOVES, ids=[f"{s.value}->{t.value}" for s, t in PARTITION_MOVES])
def test_partition_transition_legal_exactly_when_kafka_allows_it(source, target):
    """Kafka PartitionStateMachineTest: the valid transitions (e.g. testNewPartitionToOnlinePartitionTransition,
    testOfflinePartitionToOnlinePartitionTransition) succeed and the invalid ones
    (testInvalidNonexistentPartitionToOnlinePartitionTransition, testInvalidOnlinePartitionToNewPartitionTransition,
    testInvalidOfflinePartitionToNewPartitionTransition, testInvalidNonexistentPartitionToOfflinePartitionTransition)
    are refused, here for every pair of states."""
    partition = _partition_in(source)
    if source.value in KAFKA_PARTITION_VALID_PREVIOUS[target.value]:
        partition.state.transition_to(target)
        assert partition.state.state is target
    else:
        with pytest.raises(IllegalStateTransition):
            partition.state.transition_to(target)
        assert partition.state.state is source


@pytest.mark.parametrize("source,target", REPLICA_MOVES, ids=[f"{s.value}->{t.value}" for s, t in REPLICA_MOVES])
def test_replica_transition_legal_exactly_when_kafka_allows_it(source, target):
    """Kafka ReplicaStateMachineTest: testNonexistentReplicaToNewReplicaTransition, the
    testInvalid*Transition family (e.g. testInvalidNonexistentReplicaToOnlineReplicaTransition,
    testInvalidOnlineReplicaToReplicaDeletionStartedTransition) and
    testReplicaDeletionIneligibleToOnlineReplicaTransition, here for every pair of states."""
    machine = _replica_in(source)
    if source.value in KAFKA_REPLICA_VALID_PREVIOUS[target.value]:
        machine.transition_to(target)
        assert machine.state is target
    else:
        with pytest.raises(IllegalStateTransition):
            machine.transition_to(target)
        assert machine.state is source
