"""Cluster-wide settings (frozen)."""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Tuple, Union

import attrs

from kgroup.errors import ConfigError

#: Host of a broker with no entry in ``ClusterConfig.listeners``; ``{node_id}`` is replaced.
DEFAULT_LISTENER_HOST = "broker-{node_id}"
#: Kafka's default PLAINTEXT port.
DEFAULT_LISTENER_PORT = 9092

Listeners = Tuple[Tuple[int, Tuple[str, int]], ...]
BrokerRacks = Tuple[Tuple[int, str], ...]


def _listener_items(value: Union[Mapping[int, Tuple[str, int]], Iterable]) -> Listeners:
    """A {broker id: (host, port)} map as sorted pairs, so the frozen config stays hashable."""
    items: Iterable[Any] = value.items() if isinstance(value, Mapping) else value
    out = []
    for entry in items:
        try:
            node_id, (host, port) = entry
        except (TypeError, ValueError):
            raise ConfigError(f"listeners maps a broker id to (host, port), got {entry!r}") from None
        if not isinstance(node_id, int) or not isinstance(host, str) or not host \
                or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ConfigError(f"listener of broker {node_id!r} must be (non-empty host, port 0-65535), "
                              f"got {(host, port)!r}")
        out.append((node_id, (host, port)))
    return tuple(sorted(out))


def rack_items(value: Union[Mapping[int, str], Iterable]) -> BrokerRacks:
    """A {broker id: rack} map as sorted pairs (Kafka's ``broker.rack`` of each broker)."""
    items: Iterable[Any] = value.items() if isinstance(value, Mapping) else value
    out = []
    for entry in items:
        try:
            node_id, rack = entry
        except (TypeError, ValueError):
            raise ConfigError(f"broker_racks maps a broker id to its rack, got {entry!r}") from None
        if not isinstance(node_id, int) or not isinstance(rack, str) or not rack.strip():
            raise ConfigError(f"rack of broker {node_id!r} must be a non-blank string, got {rack!r}")
        out.append((node_id, rack))
    return tuple(sorted(out))


@attrs.frozen
class ClusterConfig:
    broker_ids: tuple = (1, 2, 3)
    default_replication_factor: int = 3
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    replica_lag_time_max_ms: int = 30000
    replica_fetch_interval_ms: int = 100
    # False reproduces pre-KIP-101 Kafka: a restarted follower truncates to its own HW.
    leader_epoch_truncation: bool = True
    #: Each broker's advertised listener (Kafka's ``advertised.listeners``), as {broker id: (host, port)};
    #: FindCoordinator answers it.  Brokers without an entry advertise ``broker-<id>:9092``.
    listeners: Listeners = attrs.field(default=(), converter=_listener_items)
    #: Each broker's ``broker.rack``, as {broker id: rack}; brokers without an entry have no rack.
    #: Metadata and DescribeCluster answer it, and the KIP-848 coordinator gives rack-aware server
    #: assignors each partition's replica racks from it (KIP-881's partition racks).
    broker_racks: BrokerRacks = attrs.field(default=(), converter=rack_items)

    def __attrs_post_init__(self) -> None:
        unknown = sorted({node_id for node_id, _ in self.broker_racks} - set(self.broker_ids))
        if unknown:
            raise ConfigError(f"broker_racks names brokers {unknown} that are not in broker_ids "
                              f"{list(self.broker_ids)}")

    def rack(self, node_id: int) -> Optional[str]:
        """Broker ``node_id``'s rack, None when it has none."""
        return dict(self.broker_racks).get(node_id)

    def listener(self, node_id: int) -> Tuple[str, int]:
        """The (host, port) broker ``node_id`` advertises."""
        for listed_id, address in self.listeners:
            if listed_id == node_id:
                return address
        return DEFAULT_LISTENER_HOST.format(node_id=node_id), DEFAULT_LISTENER_PORT
