"""The KIP-848 member's configuration, and which settings the protocol forbids.

With ``group_protocol="consumer"`` the coordinator owns the session timeout,
the heartbeat interval and the assignor (KIP-848); Kafka's ``ConsumerConfig``
rejects ``session.timeout.ms``, ``heartbeat.interval.ms`` and
``partition.assignment.strategy`` set alongside it (KAFKA-17338: "... cannot
be set when group.protocol=CONSUMER") and ``group.remote.assignor`` set
with the classic protocol.  :func:`check_group_protocol_settings` makes
the same checks on the settings an application passed explicitly, so an
adapter can fail before it opens anything.
"""
from __future__ import annotations

from typing import Iterable, Optional

import attrs

from kgroup.core.member.shared.contract import check_group_id
from kgroup.errors import ConfigError

CLASSIC = "classic"
CONSUMER = "consumer"
GROUP_PROTOCOLS = (CLASSIC, CONSUMER)

#: Settings of the classic protocol that the consumer protocol leaves to the broker.
CLASSIC_ONLY_SETTINGS = ("session_timeout_ms", "heartbeat_interval_ms", "partition_assignment_strategy",
                         "assignors")
#: Settings only the consumer protocol reads.
CONSUMER_ONLY_SETTINGS = ("group_remote_assignor",)

#: ConsumerGroupHeartbeat versions the member speaks: v0 (the coordinator makes the member id) and
#: v1 (KIP-1082: the member makes it).
HEARTBEAT_VERSIONS = (0, 1)


def parse_group_protocol(value: object) -> str:
    """``"classic"`` or ``"consumer"``, case-insensitive as Kafka's ``GroupProtocol`` is."""
    if not isinstance(value, str) or value.lower() not in GROUP_PROTOCOLS:
        raise ConfigError(f"group_protocol must be one of {', '.join(GROUP_PROTOCOLS)}, got {value!r}")
    return value.lower()


def check_group_protocol_settings(group_protocol: str, explicit: Iterable[str],
                                  remote_assignor: Optional[str] = None) -> str:
    """Reject settings the chosen protocol does not take; returns the normalised protocol name.

    ``explicit`` names the settings the application passed itself (a default is never an error).
    """
    protocol = parse_group_protocol(group_protocol)
    given = set(explicit)
    if protocol == CONSUMER:
        for name in CLASSIC_ONLY_SETTINGS:
            if name in given:
                raise ConfigError(f"{name} cannot be set when group_protocol='consumer': the group "
                                  "coordinator decides it (KIP-848; Kafka's ConsumerConfig rejects it too)")
    elif remote_assignor:
        raise ConfigError("group_remote_assignor cannot be set when group_protocol='classic'")
    return protocol


def _is_positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


_MS_SETTINGS = ("max_poll_interval_ms", "retry_backoff_ms", "retry_backoff_max_ms", "auto_commit_interval_ms")


@attrs.frozen
class ConsumerProtocolConfig:
    """What a KIP-848 member needs; everything else (session, interval, assignment) is the broker's."""

    group_id: str
    group_instance_id: Optional[str] = None
    client_id: str = "kgroup"
    rack_id: Optional[str] = None
    #: Also the rebalance timeout the member sends (Java: rebalanceTimeoutMs = max.poll.interval.ms).
    max_poll_interval_ms: int = 300_000
    retry_backoff_ms: int = 100
    #: Java's retry.backoff.max.ms: heartbeat retries back off exponentially up to this.
    retry_backoff_max_ms: int = 1_000
    #: The server-side assignor to ask for (None: the group's default, Kafka's ``uniform``).
    group_remote_assignor: Optional[str] = None
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5_000
    #: None and True: leave on close (static members with epoch -2); False: stay (KIP-1092's REMAIN_IN_GROUP).
    leave_group_on_close: Optional[bool] = None
    fetch_committed_on_assignment: bool = True
    #: ConsumerGroupHeartbeat version: 1 (KIP-1082, client-made member id) or 0.
    heartbeat_api_version: int = 1

    def __attrs_post_init__(self) -> None:
        check_group_id(self.group_id)
        for name in _MS_SETTINGS:
            if not _is_positive_int(getattr(self, name)):
                raise ConfigError(
                    f"{name} must be a positive int (milliseconds), got {getattr(self, name)!r}")
        for name in ("group_instance_id", "rack_id", "group_remote_assignor"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise ConfigError(f"{name} must be None or a non-empty string, got {value!r}")
        if not isinstance(self.client_id, str):
            raise ConfigError(f"client_id must be a string, got {self.client_id!r}")
        if self.heartbeat_api_version not in HEARTBEAT_VERSIONS:
            raise ConfigError(f"heartbeat_api_version must be one of {HEARTBEAT_VERSIONS}, "
                              f"got {self.heartbeat_api_version!r}")

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def backoff_cap_ms(self) -> int:
        """KIP-580: a ``retry_backoff_ms`` above ``retry_backoff_max_ms`` is a constant backoff."""
        return max(self.retry_backoff_ms, self.retry_backoff_max_ms)

    @property
    def rebalance_timeout_ms(self) -> int:
        return self.max_poll_interval_ms

    @property
    def client_generates_member_id(self) -> bool:
        return self.heartbeat_api_version >= 1

    def leaves_on_close(self, leave_group: Optional[bool]) -> bool:
        if leave_group is not None:
            return leave_group
        return self.leave_group_on_close is not False
