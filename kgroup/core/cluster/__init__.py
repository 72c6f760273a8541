"""The replica layer of a Kafka cluster as a state machine (sans-I/O, driven by ``now_ms``).

:class:`ClusterStateMachine` models brokers, the controller, partitions and their replicas; the
test harness that adds group coordinators and in-process clients on top is
:class:`kgroup.testing.InMemoryKafka`.

API::

    ClusterStateMachine(config=ClusterConfig(broker_ids=(1, 2, 3), ...), now_ms=0)
      .create_topic(name, partitions, replication_factor=None, assignments=None)
      .add_partitions(name, count) ; .delete_topic(name)   # then each topic_deletion_listeners(name, count)
      .produce(topic, partition, payload, acks_all=True) -> offset   # ClusterError(error_code=...)
      .replicate(now_ms=None)          # one explicit fetch round
      .get_timer() -> int ; .handle_timer(now_ms)   # fetch rounds every replica_fetch_interval_ms
      .take_acks() -> list[Ack]        # acks=all appends the HW has passed
      .kill_broker(id) ; .restart_broker(id) ; .bounce_broker(id) ; .controlled_shutdown(id)
      .isolate_broker(id) ; .heal_broker(id) ; .slow_follower(id, fetch_interval_ms | None)
      .elect_preferred_leaders() ; .reassign_partition(topic, p, rar) -> Reassignment (.steps)
      .partition(topic, p) -> Partition (.leader, .isr, .leader_epoch, .logs[b].leo/.hw, .state)
      .controller_id, .controller_epoch, .brokers, .elections
"""
from kgroup.core.cluster.config import ClusterConfig
from kgroup.core.cluster.partition import Ack, Partition
from kgroup.core.cluster.reassignment import Reassignment, ReassignmentStep
from kgroup.core.cluster.state_machine import ClusterStateMachine
from kgroup.core.cluster.states import BrokerState, PartitionState, ReplicaState

__all__ = ["Ack", "BrokerState", "ClusterConfig", "ClusterStateMachine", "Partition", "PartitionState",
           "Reassignment", "ReassignmentStep", "ReplicaState"]
