"""The KIP-848 consumer group in the in-memory coordinator (Kafka's modern.consumer package).

* :mod:`.member` - a member as a frozen value and its reconciliation states;
* :mod:`.reconciliation` - CurrentAssignmentBuilder: one member's step towards the target;
* :mod:`.group` - the group: epochs, members, target assignment, partition epochs;
* :mod:`.manager` - the ConsumerGroupHeartbeat / ConsumerGroupDescribe handlers and timers.
"""
# The coordinator package imports .group and .manager, which import the coordinator's records;
# loading the coordinator first gives every entry point (this package included) one acyclic order.
import kgroup.core.coordinator  # noqa: F401,E402
