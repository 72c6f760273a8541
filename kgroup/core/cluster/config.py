"""Cluster-wide settings (frozen)."""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Tuple, Union

import attrs

from kgroup.errors import ConfigError

#: Host of a broker with no entry in ``ClusterConfig.listeners``; ``{node_id}`` is replaced.
DEFAULT_LISTENER_HOST = "broker-{node_id}"
#: Kafka's default PLAINTEXT port.
DEFAULT_LISTENER_PORT = 9092

Listeners = Tuple[Tuple[int, Tuple[str, int]], ...]


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

    def listener(self, node_id: int) -> Tuple[str, int]:
        """The (host, port) broker ``node_id`` advertises."""
        for listed_id, address in self.listeners:
            if listed_id == node_id:
                return address
        return DEFAULT_LISTENER_HOST.format(node_id=node_id), DEFAULT_LISTENER_PORT
