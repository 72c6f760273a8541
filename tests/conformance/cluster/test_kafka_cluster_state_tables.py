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


def _move_id(move):
    return f"{move[0].value}->{move[1].value}"


@pytest.mark.parametrize("source,target", PARTITION_MOVES, ids=[_move_id(m) for m in PARTITION_MOVES])
def test_partition_transition_legal_exactly_when_kafka_allows_it(source, target):
    """Kafka PartitionStateMachine.validPreviousStates, checked for every pair of states."""
    _check_partition_move(source, target, source.value in KAFKA_PARTITION_VALID_PREVIOUS[target.value])


@pytest.mark.parametrize("source,target", REPLICA_MOVES, ids=[_move_id(m) for m in REPLICA_MOVES])
def test_replica_transition_legal_exactly_when_kafka_allows_it(source, target):
    """Kafka ReplicaStateMachine.validPreviousStates, checked for every pair of states."""
    _check_replica_move(source, target, source.value in KAFKA_REPLICA_VALID_PREVIOUS[target.value])


def _check_partition_move(source, target, legal):
    partition = _partition_in(source)
    if legal:
        partition.state.transition_to(target)
        assert partition.state.state is target
    else:
        with pytest.raises(IllegalStateTransition):
            partition.state.transition_to(target)
        assert partition.state.state is source


def _check_replica_move(source, target, legal):
    machine = _replica_in(source)
    if legal:
        machine.transition_to(target)
        assert machine.state is target
    else:
        with pytest.raises(IllegalStateTransition):
            machine.transition_to(target)
        assert machine.state is source


P = PartitionState
# Kafka PartitionStateMachineTest (3.7): the tests whose subject is whether a move is allowed.  The
# valid ones also check ZooKeeper writes and LeaderAndIsr requests; the cluster-level effects kgroup
# models are in test_kafka_partition_state_machine.py.
KAFKA_PARTITION_STATE_MACHINE_TESTS = [
    ("testNonexistentPartitionToNewPartitionTransition", P.NON_EXISTENT, P.NEW, True),
    ("testInvalidNonexistentPartitionToOnlinePartitionTransition", P.NON_EXISTENT, P.ONLINE, False),
    ("testInvalidNonexistentPartitionToOfflinePartitionTransition", P.NON_EXISTENT, P.OFFLINE, False),
    ("testNewPartitionToOnlinePartitionTransition", P.NEW, P.ONLINE, True),
    ("testNewPartitionToOfflinePartitionTransition", P.NEW, P.OFFLINE, True),
    ("testInvalidNewPartitionToNonexistentPartitionTransition", P.NEW, P.NON_EXISTENT, False),
    ("testOnlinePartitionToOnlineTransition", P.ONLINE, P.ONLINE, True),
    ("testOnlinePartitionToOfflineTransition", P.ONLINE, P.OFFLINE, True),
    ("testInvalidOnlinePartitionToNonexistentPartitionTransition", P.ONLINE, P.NON_EXISTENT, False),
    ("testInvalidOnlinePartitionToNewPartitionTransition", P.ONLINE, P.NEW, False),
    ("testOfflinePartitionToOnlinePartitionTransition", P.OFFLINE, P.ONLINE, True),
    ("testOfflinePartitionToNonexistentPartitionTransition", P.OFFLINE, P.NON_EXISTENT, True),
    ("testInvalidOfflinePartitionToNewPartitionTransition", P.OFFLINE, P.NEW, False),
]


@pytest.mark.parametrize("source,target,legal", [case[1:] for case in KAFKA_PARTITION_STATE_MACHINE_TESTS],
                         ids=[case[0] for case in KAFKA_PARTITION_STATE_MACHINE_TESTS])
def test_kafka_partition_state_machine_transition(source, target, legal):
    """Kafka PartitionStateMachineTest, one case per transition test (named by the case id)."""
    _check_partition_move(source, target, legal)


R = ReplicaState
# Kafka ReplicaStateMachineTest (3.7): every transition test.
KAFKA_REPLICA_STATE_MACHINE_TESTS = [
    ("testNonexistentReplicaToNewReplicaTransition", R.NON_EXISTENT, R.NEW, True),
    ("testInvalidNonexistentReplicaToOnlineReplicaTransition", R.NON_EXISTENT, R.ONLINE, False),
    ("testInvalidNonexistentReplicaToOfflineReplicaTransition", R.NON_EXISTENT, R.OFFLINE, False),
    ("testInvalidNonexistentReplicaToReplicaDeletionStartedTransition",
     R.NON_EXISTENT, R.DELETION_STARTED, False),
    ("testInvalidNonexistentReplicaToReplicaDeletionIneligibleTransition", R.NON_EXISTENT,
     R.DELETION_INELIGIBLE, False),
    ("testInvalidNonexistentReplicaToReplicaDeletionSuccessfulTransition", R.NON_EXISTENT,
     R.DELETION_SUCCESSFUL, False),
    ("testInvalidNewReplicaToNonexistentReplicaTransition", R.NEW, R.NON_EXISTENT, False),
    ("testNewReplicaToOnlineReplicaTransition", R.NEW, R.ONLINE, True),
    ("testNewReplicaToOfflineReplicaTransition", R.NEW, R.OFFLINE, True),
    ("testInvalidNewReplicaToReplicaDeletionStartedTransition", R.NEW, R.DELETION_STARTED, False),
    ("testInvalidNewReplicaToReplicaDeletionIneligibleTransition", R.NEW, R.DELETION_INELIGIBLE, False),
    ("testInvalidNewReplicaToReplicaDeletionSuccessfulTransition", R.NEW, R.DELETION_SUCCESSFUL, False),
    ("testInvalidOnlineReplicaToNonexistentReplicaTransition", R.ONLINE, R.NON_EXISTENT, False),
    ("testInvalidOnlineReplicaToNewReplicaTransition", R.ONLINE, R.NEW, False),
    ("testOnlineReplicaToOnlineReplicaTransition", R.ONLINE, R.ONLINE, True),
    ("testOnlineReplicaToOfflineReplicaTransition", R.ONLINE, R.OFFLINE, True),
    ("testInvalidOnlineReplicaToReplicaDeletionStartedTransition", R.ONLINE, R.DELETION_STARTED, False),
    ("testInvalidOnlineReplicaToReplicaDeletionIneligibleTransition", R.ONLINE, R.DELETION_INELIGIBLE, False),
    ("testInvalidOnlineReplicaToReplicaDeletionSuccessfulTransition", R.ONLINE, R.DELETION_SUCCESSFUL, False),
    ("testInvalidOfflineReplicaToNonexistentReplicaTransition", R.OFFLINE, R.NON_EXISTENT, False),
    ("testInvalidOfflineReplicaToNewReplicaTransition", R.OFFLINE, R.NEW, False),
    ("testOfflineReplicaToOnlineReplicaTransition", R.OFFLINE, R.ONLINE, True),
    ("testOfflineReplicaToReplicaDeletionStartedTransition", R.OFFLINE, R.DELETION_STARTED, True),
    ("testOfflineReplicaToReplicaDeletionIneligibleTransition", R.OFFLINE, R.DELETION_INELIGIBLE, True),
    ("testInvalidOfflineReplicaToReplicaDeletionSuccessfulTransition",
     R.OFFLINE, R.DELETION_SUCCESSFUL, False),
    ("testInvalidReplicaDeletionStartedToNonexistentReplicaTransition", R.DELETION_STARTED, R.NON_EXISTENT,
     False),
    ("testInvalidReplicaDeletionStartedToNewReplicaTransition", R.DELETION_STARTED, R.NEW, False),
    ("testInvalidReplicaDeletionStartedToOnlineReplicaTransition", R.DELETION_STARTED, R.ONLINE, False),
    ("testInvalidReplicaDeletionStartedToOfflineReplicaTransition", R.DELETION_STARTED, R.OFFLINE, False),
    ("testReplicaDeletionStartedToReplicaDeletionIneligibleTransition", R.DELETION_STARTED,
     R.DELETION_INELIGIBLE, True),
    ("testReplicaDeletionStartedToReplicaDeletionSuccessfulTransition", R.DELETION_STARTED,
     R.DELETION_SUCCESSFUL, True),
    ("testReplicaDeletionSuccessfulToNonexistentReplicaTransition",
     R.DELETION_SUCCESSFUL, R.NON_EXISTENT, True),
    ("testInvalidReplicaDeletionSuccessfulToNewReplicaTransition", R.DELETION_SUCCESSFUL, R.NEW, False),
    ("testInvalidReplicaDeletionSuccessfulToOnlineReplicaTransition", R.DELETION_SUCCESSFUL, R.ONLINE, False),
    ("testInvalidReplicaDeletionSuccessfulToOfflineReplicaTransition",
     R.DELETION_SUCCESSFUL, R.OFFLINE, False),
    ("testInvalidReplicaDeletionSuccessfulToReplicaDeletionStartedTransition", R.DELETION_SUCCESSFUL,
     R.DELETION_STARTED, False),
    ("testInvalidReplicaDeletionSuccessfulToReplicaDeletionIneligibleTransition", R.DELETION_SUCCESSFUL,
     R.DELETION_INELIGIBLE, False),
    ("testInvalidReplicaDeletionIneligibleToNonexistentReplicaTransition", R.DELETION_INELIGIBLE,
     R.NON_EXISTENT, False),
    ("testInvalidReplicaDeletionIneligibleToNewReplicaTransition", R.DELETION_INELIGIBLE, R.NEW, False),
    ("testReplicaDeletionIneligibleToOnlineReplicaTransition", R.DELETION_INELIGIBLE, R.ONLINE, True),
    ("testInvalidReplicaDeletionIneligibleToReplicaDeletionStartedTransition", R.DELETION_INELIGIBLE,
     R.DELETION_STARTED, False),
    ("testInvalidReplicaDeletionIneligibleToReplicaDeletionSuccessfulTransition", R.DELETION_INELIGIBLE,
     R.DELETION_SUCCESSFUL, False),
]


@pytest.mark.parametrize("source,target,legal", [case[1:] for case in KAFKA_REPLICA_STATE_MACHINE_TESTS],
                         ids=[case[0] for case in KAFKA_REPLICA_STATE_MACHINE_TESTS])
def test_kafka_replica_state_machine_transition(source, target, legal):
    """Kafka ReplicaStateMachineTest, one case per transition test (named by the case id)."""
    _check_replica_move(source, target, legal)
