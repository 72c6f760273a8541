"""Broker-side settings of the group coordinator (Kafka's ``group.*`` configs)."""
from __future__ import annotations

import enum
from typing import Union

import attrs

from kgroup.errors import ConfigError


class ConsumerGroupMigrationPolicy(enum.Enum):
    """Kafka's ``group.consumer.migration.policy`` (ConsumerGroupMigrationPolicy): which way a non-empty
    group may change type online.  Upgrade: a classic group becomes a consumer group when the first
    ConsumerGroupHeartbeat joins; downgrade: a consumer group becomes classic when its last
    consumer-protocol member leaves."""

    DISABLED = "disabled"
    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    BIDIRECTIONAL = "bidirectional"

    @property
    def upgrade_enabled(self) -> bool:
        return self in (ConsumerGroupMigrationPolicy.UPGRADE, ConsumerGroupMigrationPolicy.BIDIRECTIONAL)

    @property
    def downgrade_enabled(self) -> bool:
        return self in (ConsumerGroupMigrationPolicy.DOWNGRADE, ConsumerGroupMigrationPolicy.BIDIRECTIONAL)


def _migration_policy(value: Union[str, ConsumerGroupMigrationPolicy]) -> ConsumerGroupMigrationPolicy:
    """Kafka validates the value case-insensitively (ConfigDef.CaseInsensitiveValidString)."""
    if isinstance(value, ConsumerGroupMigrationPolicy):
        return value
    try:
        return ConsumerGroupMigrationPolicy(str(value).lower())
    except ValueError:
        allowed = ", ".join(p.value for p in ConsumerGroupMigrationPolicy)
        raise ConfigError(
            f"consumer_group_migration_policy must be one of {allowed}, got {value!r}") from None


@attrs.frozen
class GroupCoordinatorConfig:
    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    #: Delay before the first generation of a new (Empty) group; 0 disables it.
    group_initial_rebalance_delay_ms: int = 3_000
    group_max_size: int = 2**31 - 1
    #: How long a new member's first JoinGroup may stay parked before the member is dropped
    #: (Kafka's classic-group new member join timeout, 5 minutes).
    group_new_member_join_timeout_ms: int = 300_000
    #: Kafka's ``offset.metadata.max.bytes``: longer commit metadata is refused per partition with
    #: OFFSET_METADATA_TOO_LARGE (OffsetMetadataManager.isMetadataInvalid).
    offset_metadata_max_bytes: int = 4096
    # KIP-848 consumer groups (Kafka's group.consumer.* configs, with Kafka's defaults).
    consumer_group_session_timeout_ms: int = 45_000
    consumer_group_heartbeat_interval_ms: int = 5_000
    consumer_group_max_size: int = 2**31 - 1
    #: Server-side assignors members may ask for; the first is the default (group.consumer.assignors).
    consumer_group_assignors: tuple[str, ...] = ("uniform", "range")
    #: Online migration between group types; Kafka 4.x's default (GroupCoordinatorConfig
    #: CONSUMER_GROUP_MIGRATION_POLICY_DEFAULT) is bidirectional.
    consumer_group_migration_policy: ConsumerGroupMigrationPolicy = attrs.field(
        default=ConsumerGroupMigrationPolicy.BIDIRECTIONAL, converter=_migration_policy)
    #: How often a group's subscribed regexes are resolved again against the topics (KIP-848 regex
    #: subscriptions): at the first heartbeat this long after the last resolution.  Kafka's
    #: GroupMetadataManager.REGEX_BATCH_REFRESH_MIN_INTERVAL_MS (10 s); Kafka also waits for new
    #: topics in its metadata image or group.consumer.regex.refresh.interval.ms (10 min), kgroup
    #: rescans at every refresh (docs/guide/consumer-protocol.md).
    consumer_group_regex_refresh_interval_ms: int = 10_000

    def __attrs_post_init__(self) -> None:
        if self.group_min_session_timeout_ms < 0:
            raise ConfigError(
                f"group_min_session_timeout_ms must be >= 0, got {self.group_min_session_timeout_ms}"
            )
        if self.group_max_session_timeout_ms < self.group_min_session_timeout_ms:
            raise ConfigError(
                f"group_max_session_timeout_ms ({self.group_max_session_timeout_ms}) is below "
                f"group_min_session_timeout_ms ({self.group_min_session_timeout_ms})"
            )
        if self.group_initial_rebalance_delay_ms < 0:
            raise ConfigError(
                f"group_initial_rebalance_delay_ms must be >= 0, got {self.group_initial_rebalance_delay_ms}"
            )
        if self.group_new_member_join_timeout_ms < 1:
            raise ConfigError(
                f"group_new_member_join_timeout_ms must be >= 1, got {self.group_new_member_join_timeout_ms}"
            )
        if self.consumer_group_heartbeat_interval_ms < 1:
            raise ConfigError("consumer_group_heartbeat_interval_ms must be >= 1, "
                              f"got {self.consumer_group_heartbeat_interval_ms}")
        if self.consumer_group_session_timeout_ms <= self.consumer_group_heartbeat_interval_ms:
            raise ConfigError(
                f"consumer_group_session_timeout_ms ({self.consumer_group_session_timeout_ms}) must be above "
                f"consumer_group_heartbeat_interval_ms ({self.consumer_group_heartbeat_interval_ms})")
        if self.consumer_group_max_size < 1:
            raise ConfigError(f"consumer_group_max_size must be >= 1, got {self.consumer_group_max_size}")
        if self.consumer_group_regex_refresh_interval_ms < 0:
            raise ConfigError("consumer_group_regex_refresh_interval_ms must be >= 0, "
                              f"got {self.consumer_group_regex_refresh_interval_ms}")
        if not self.consumer_group_assignors:
            raise ConfigError("consumer_group_assignors must name at least one server-side assignor")
        if self.offset_metadata_max_bytes < 0:
            raise ConfigError(f"offset_metadata_max_bytes must be >= 0, got {self.offset_metadata_max_bytes}")
        if self.group_max_size < 1:
            raise ConfigError(f"group_max_size must be >= 1, got {self.group_max_size}")
