import pytest

from kgroup.core.cluster.partition import Partition
from kgroup.core.cluster.states import PartitionState, ReplicaState
from kgroup.errors import IllegalStateTransition


def test_partition_cannot_go_online_from_non_existent():
    p = Partition("t", 0, [1])
    with pytest.raises(IllegalStateTransition, match="NON_EXISTENT to ONLINE"):
        p.state.transition_to(PartitionState.ONLINE)


def test_replica_deletion_needs_offline_first():
    p = Partition("t", 0, [1])
    sm = p.replica_states[1]
    sm.transition_to(ReplicaState.NEW)
    sm.transition_to(ReplicaState.ONLINE)
    with pytest.raises(IllegalStateTransition, match="ONLINE to DELETION_STARTED"):
        sm.transition_to(ReplicaState.DELETION_STARTED)
