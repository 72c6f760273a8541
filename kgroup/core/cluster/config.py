"""Cluster-wide settings (frozen)."""
from __future__ import annotations

import attrs


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
