"""The pure assignor interface.

An assignor maps topic partition counts and each member's subscription to
each member's assignment.  It does no I/O and keeps no state between calls,
so the same object serves kgroup's member, kafka-python's consumer (through
:mod:`kgroup.assignors.kafka_python`), tests and benchmarks.
"""
from __future__ import annotations

import abc
import enum
from typing import ClassVar, Mapping, Optional, Sequence

from kgroup.values import Assignment, Subscription


class RebalanceProtocol(enum.IntEnum):
    """KIP-429: EAGER revokes everything before a join, COOPERATIVE only what moves."""

    EAGER = 0
    COOPERATIVE = 1


#: partition_racks[topic][partition] -> the racks holding a replica of it (KIP-881).
PartitionRacks = Mapping[str, Sequence[frozenset]]


class Assignor(abc.ABC):
    """Base class of every kgroup assignor (and of third-party ones)."""

    #: The name members advertise in JoinGroup (Kafka's ``name()``).
    name: ClassVar[str]
    #: Protocols this assignor supports, most preferred first.
    supported_protocols: ClassVar[tuple[RebalanceProtocol, ...]] = (RebalanceProtocol.EAGER,)

    @abc.abstractmethod
    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
        partition_racks: Optional[PartitionRacks] = None,
    ) -> dict[str, Assignment]:
        """Return an assignment for every member id in ``subscriptions``.

        ``partitions_per_topic`` lists the topics that exist; a subscribed
        topic missing from it (deleted, or not yet created) gets no
        partitions.  ``partition_racks`` is optional rack metadata for
        rack-aware assignment.
        """

    def subscription_user_data(self, topics: Sequence[str], owned: Sequence,
                               generation_id: int) -> Optional[bytes]:
        """User data a member puts in its subscription (default: none)."""
        return None
