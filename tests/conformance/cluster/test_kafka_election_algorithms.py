"""Kafka PartitionLeaderElectionAlgorithmsTest (3.7, core/src/test/scala/unit/kafka/controller/), ported.

Each case is one Kafka test: the same assignment, ISR, live replicas (and shutting-down brokers) and the
leader Kafka expects.  ``unclean`` is Kafka's ``uncleanLeaderElectionRate`` count for that election.
"""
import pytest

from kgroup.core.cluster.election import (
    elect_controlled_shutdown, elect_offline, elect_preferred, elect_reassignment,
)


@pytest.mark.parametrize("assignment,isr,live,unclean_enabled,leader,unclean", [
    pytest.param([2, 4], [2, 4], {4}, False, 4, False, id="testOfflinePartitionLeaderElection"),
    pytest.param([2, 4], [2], {4}, False, None, False,
                 id="testOfflinePartitionLeaderElectionLastIsrOfflineUncleanLeaderElectionDisabled"),
    pytest.param([2, 4], [2], {4}, True, 4, True,
                 id="testOfflinePartitionLeaderElectionLastIsrOfflineUncleanLeaderElectionEnabled"),
])
def test_offline_partition_leader_election(assignment, isr, live, unclean_enabled, leader, unclean):
    """Kafka PartitionLeaderElectionAlgorithmsTest.testOfflinePartitionLeaderElection*."""
    result = elect_offline(assignment, isr, live, unclean_enabled)
    assert result.leader == leader
    assert result.unclean is unclean


@pytest.mark.parametrize("reassignment,isr,live,leader", [
    pytest.param([2, 4], [2, 4], {4}, 4, id="testReassignPartitionLeaderElection"),
    pytest.param([2, 4], [2], set(), None, id="testReassignPartitionLeaderElectionWithNoLiveIsr"),
    pytest.param([2, 4], [], {2}, None, id="testReassignPartitionLeaderElectionWithEmptyIsr"),
])
def test_reassign_partition_leader_election(reassignment, isr, live, leader):
    """Kafka PartitionLeaderElectionAlgorithmsTest.testReassignPartitionLeaderElection*."""
    result = elect_reassignment(reassignment, isr, live)
    assert result.leader == leader
    assert result.unclean is False


@pytest.mark.parametrize("assignment,isr,live,leader", [
    pytest.param([2, 4], [2, 4], {2, 4}, 2, id="testPreferredReplicaPartitionLeaderElection"),
    pytest.param([2, 4], [2], set(), None,
                 id="testPreferredReplicaPartitionLeaderElectionPreferredReplicaInIsrNotLive"),
    pytest.param([2, 4], [4], {2, 4}, None,
                 id="testPreferredReplicaPartitionLeaderElectionPreferredReplicaNotInIsrLive"),
    pytest.param([2, 4], [], set(), None,
                 id="testPreferredReplicaPartitionLeaderElectionPreferredReplicaNotInIsrNotLive"),
])
def test_preferred_replica_partition_leader_election(assignment, isr, live, leader):
    """Kafka PartitionLeaderElectionAlgorithmsTest.testPreferredReplicaPartitionLeaderElection*."""
    assert elect_preferred(assignment, isr, live).leader == leader


def test_preferred_replica_election_with_no_assignment_elects_nobody():
    """Kafka PartitionLeaderElectionAlgorithms.preferredReplicaPartitionLeaderElection uses
    ``assignment.headOption``: an empty assignment yields no leader rather than an error."""
    assert elect_preferred([], [], {1}).leader is None


@pytest.mark.parametrize("assignment,isr,live,shutting_down,leader", [
    pytest.param([2, 4], [2, 4], {2, 4}, {2}, 4, id="testControlledShutdownPartitionLeaderElection"),
    pytest.param([2, 4], [2], {2, 4}, {2}, None,
                 id="testControlledShutdownPartitionLeaderElectionLastIsrShuttingDown"),
    pytest.param([2, 4], [2, 4], {2, 4}, {2, 4}, None,
                 id="testControlledShutdownPartitionLeaderElectionAllIsrSimultaneouslyShutdown"),
])
def test_controlled_shutdown_partition_leader_election(assignment, isr, live, shutting_down, leader):
    """Kafka PartitionLeaderElectionAlgorithmsTest.testControlledShutdownPartitionLeaderElection*."""
    assert elect_controlled_shutdown(assignment, isr, live, shutting_down).leader == leader
