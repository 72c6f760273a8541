"""The wire server's settings (frozen; errors at construction)."""
from __future__ import annotations

from typing import Tuple

import attrs

from kgroup.core.cluster.config import BrokerRacks, rack_items
from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.core.transaction import TransactionCoordinatorConfig
from kgroup.errors import ConfigError

__all__ = ["ServerConfig"]


@attrs.frozen
class ServerConfig:
    #: How many in-memory brokers (node ids 1..brokers), each with its own listener.
    brokers: int = 1
    host: str = "127.0.0.1"
    #: Port of broker 1; broker n listens on ``port + n - 1``.  0 picks free ports.
    port: int = 0
    #: Kafka's ``num.partitions``: partitions of an auto-created topic or of CreateTopics with -1.
    default_partitions: int = 1
    #: Replication factor of new topics when none is given (capped at the number of brokers).
    #: Kafka's ``default.replication.factor`` is 1; kgroup defaults to 3 so a broker kill keeps data.
    default_replication_factor: int = 3
    #: Kafka's ``auto.create.topics.enable``.
    auto_create_topics: bool = True
    #: Kafka's ``offsets.topic.num.partitions``.
    offsets_partitions: int = 50
    #: Kafka's ``transaction.state.log.num.partitions``.
    transaction_partitions: int = 50
    #: Kafka's ``transaction.max.timeout.ms`` and the other transaction coordinator settings.
    transaction: TransactionCoordinatorConfig = TransactionCoordinatorConfig()
    #: Kafka's ``transaction.partition.verification.enable`` (KIP-890 part 1): before the first
    #: transactional batch of a producer's transaction on a partition, its leader asks the
    #: transaction coordinator whether the partition is in the transaction, and refuses the batch
    #: if not.  False appends it unasked, as Kafka before 3.6 did.
    transaction_partition_verification_enable: bool = True
    #: Kafka's ``min.insync.replicas``.
    min_insync_replicas: int = 1
    #: Kafka's ``message.max.bytes`` (largest record batch a produce may carry).
    max_message_bytes: int = 1_048_588
    #: Each broker's ``broker.rack`` as {broker id: rack} (brokers left out have none).  Metadata and
    #: DescribeCluster answer it; rack-aware server assignors (``uniform-rack-aware``) read the replica
    #: racks of each partition from it.
    broker_racks: BrokerRacks = attrs.field(default=(), converter=rack_items)
    #: Kafka's ``group.initial.rebalance.delay.ms`` and the other coordinator settings.
    coordinator: GroupCoordinatorConfig = GroupCoordinatorConfig()
    #: How long a new coordinator takes to load its groups after a failover.
    group_load_time_ms: int = 100
    cluster_id: str = "kgroup-in-memory"
    #: The first producer id InitProducerId hands out (idempotent and transactional producers).
    first_producer_id: int = 1000
    #: How many of the latest requests ``KafkaServer.trace()`` keeps (a ring buffer, about 250
    #: bytes an entry: 10,000 is ~2.5 MB); 0 keeps none and skips the per-answer error-code walk.
    trace_entries: int = 10_000

    def __attrs_post_init__(self) -> None:
        checks: Tuple[Tuple[bool, str], ...] = (
            (self.brokers >= 1, f"brokers must be >= 1, got {self.brokers}"),
            (0 <= self.port <= 65535 - self.brokers + 1,
             f"port {self.port} leaves no room for {self.brokers} brokers"),
            (self.default_partitions >= 1, f"default_partitions must be >= 1, got {self.default_partitions}"),
            (self.default_replication_factor >= 1,
             f"default_replication_factor must be >= 1, got {self.default_replication_factor}"),
            (self.offsets_partitions >= 1, f"offsets_partitions must be >= 1, got {self.offsets_partitions}"),
            (self.transaction_partitions >= 1,
             f"transaction_partitions must be >= 1, got {self.transaction_partitions}"),
            (self.min_insync_replicas >= 1,
             f"min_insync_replicas must be >= 1, got {self.min_insync_replicas}"),
            (self.max_message_bytes >= 1, f"max_message_bytes must be >= 1, got {self.max_message_bytes}"),
            (self.group_load_time_ms >= 0, f"group_load_time_ms must be >= 0, got {self.group_load_time_ms}"),
            (self.trace_entries >= 0, f"trace_entries must be >= 0, got {self.trace_entries}"),
        )
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
        unknown = sorted({node_id for node_id, _ in self.broker_racks} - set(self.broker_ids))
        if unknown:
            raise ConfigError(f"broker_racks names brokers {unknown}; the brokers are 1..{self.brokers}")

    @property
    def broker_ids(self) -> Tuple[int, ...]:
        return tuple(range(1, self.brokers + 1))
