"""Kafka's ``cooperative-sticky`` assignor (KIP-429).

It computes the sticky assignment, then withholds every partition that would
change owner: the current owner is not given it, so it revokes it and
rejoins, and the next rebalance hands it to its new owner.  A membership
change settles in at most two rounds: before answering, the engine
simulates the follow-up round and, where that round would take a partition
from a member that keeps it now, withholds that partition in this round too
(see :mod:`kgroup.assignors._sticky_engine`), so the second round only adds.

Ownership comes from ``Subscription.owned_partitions`` / ``generation_id``
(ConsumerProtocol v1+ carries them natively).  Java's cooperative-sticky also
writes the generation into user data for brokers that only speak
subscription v0/v1; kgroup's wire layer always sends v2+, so we emit no user
data and ignore any.

A partition is withheld from a member that does not claim it when *any*
other member claims it, whatever the claim's generation: a stale or
conflicting claimer may still be consuming it, and only its revocation makes
the hand-over safe.  A member that itself claims the partition keeps it,
unless another member claims it in the same generation: then, as in Java
(``partitionsWithMultiplePreviousOwners`` are transferring ownership), nobody
gets it until both claimers have revoked it.
"""
from __future__ import annotations

from typing import Mapping, Optional

from kgroup.assignors._sticky_engine import MemberInput, sticky_assign
from kgroup.assignors.base import Assignor, PartitionRacks, RebalanceProtocol
from kgroup.values import Assignment, Subscription

__all__ = ["CooperativeStickyAssignor"]


class CooperativeStickyAssignor(Assignor):
    """Sticky assignment made safe for incremental (cooperative) rebalancing."""

    name = "cooperative-sticky"
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
        partition_racks: Optional[PartitionRacks] = None,
    ) -> dict[str, Assignment]:
        inputs = {
            m: MemberInput(s.topics, s.owned_partitions, s.generation_id, s.rack_id)
            for m, s in subscriptions.items()
        }
        result = sticky_assign(partitions_per_topic, inputs, partition_racks, cooperative=True)
        return {m: Assignment(partitions=parts) for m, parts in result.items()}
