"""Member configuration, validated once at construction.

Impossible combinations raise :class:`~kgroup.errors.ConfigError` here
rather than as odd behaviour later (the heartbeat interval must be below the
session timeout, as Kafka's ``org.apache.kafka.clients.consumer.internals.Heartbeat``
constructor requires).
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

import attrs

from kgroup.assignors import Assignor, RebalanceProtocol, get_assignor
from kgroup.core.member.shared.contract import check_group_id
from kgroup.errors import ConfigError, UnknownAssignorError


def _resolve(value: Sequence[Union[str, Assignor]]) -> tuple[Assignor, ...]:
    if isinstance(value, (str, Assignor)):
        value = (value,)
    try:
        entries = tuple(value)
    except TypeError:
        raise ConfigError(
            f"assignors must be a sequence of assignor names or instances, got {value!r}") from None
    resolved = []
    for entry in entries:
        if isinstance(entry, str):
            try:
                entry = get_assignor(entry)
            except UnknownAssignorError as exc:
                raise ConfigError(f"assignors: no assignor is registered under {exc.name!r} "
                                  f"(known: {', '.join(exc.known)})") from exc
        elif not isinstance(entry, Assignor):
            raise ConfigError(f"assignors: {entry!r} is neither an assignor name nor a kgroup Assignor")
        resolved.append(entry)
    return tuple(resolved)


#: Settings that are whole milliseconds; a float such as 6000.5 would reach
#: the wire as a value JoinGroup's INT32 cannot carry.
_MS_SETTINGS = ("session_timeout_ms", "heartbeat_interval_ms", "max_poll_interval_ms",
                "retry_backoff_ms", "auto_commit_interval_ms")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_optional_str(value: object) -> bool:
    return value is None or isinstance(value, str)


@attrs.frozen
class MemberConfig:
    group_id: str
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000
    #: None: Kafka's consumer uses max.poll.interval.ms as the rebalance timeout.
    rebalance_timeout_ms: Optional[int] = None
    retry_backoff_ms: int = 100
    group_instance_id: Optional[str] = None
    client_id: str = "kgroup"
    #: Assignor names (or instances), most preferred first.
    assignors: tuple[Assignor, ...] = attrs.field(default=("range",), converter=_resolve)
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5_000
    #: None: dynamic members leave on close, static members do not.
    leave_group_on_close: Optional[bool] = None
    #: Ask for committed offsets of newly assigned partitions (a CommittedFetched event).
    fetch_committed_on_assignment: bool = True
    rack_id: Optional[str] = None

    def __attrs_post_init__(self) -> None:
        check_group_id(self.group_id)
        for name in _MS_SETTINGS:
            if not _is_int(getattr(self, name)):
                raise ConfigError(f"{name} must be an int (milliseconds), got {getattr(self, name)!r}")
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")
        if self.rebalance_timeout_ms is not None and not _is_int(self.rebalance_timeout_ms):
            raise ConfigError(f"rebalance_timeout_ms must be None or an int (milliseconds), "
                              f"got {self.rebalance_timeout_ms!r}")
        if self.rebalance_timeout_ms is not None and self.rebalance_timeout_ms <= 0:
            raise ConfigError(f"rebalance_timeout_ms must be positive, got {self.rebalance_timeout_ms}")
        for name in ("group_instance_id", "rack_id"):
            if not _is_optional_str(getattr(self, name)):
                raise ConfigError(f"{name} must be None or a string, got {getattr(self, name)!r}")
        if not isinstance(self.client_id, str):
            raise ConfigError(f"client_id must be a string, got {self.client_id!r}")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ConfigError(
                f"heartbeat_interval_ms ({self.heartbeat_interval_ms}) must be lower than "
                f"session_timeout_ms ({self.session_timeout_ms})"
            )
        if self.group_instance_id is not None and not self.group_instance_id:
            raise ConfigError("group_instance_id must be None or a non-empty string")
        if not self.assignors:
            raise ConfigError("at least one assignor is required")
        names = [a.name for a in self.assignors]
        if len(set(names)) != len(names):
            raise ConfigError(f"assignor names must be unique, got {names}")
        common = set(self.assignors[0].supported_protocols)
        for assignor in self.assignors[1:]:
            common &= set(assignor.supported_protocols)
        if not common:
            raise ConfigError(f"assignors {names} have no rebalance protocol in common")

    @property
    def protocol(self) -> RebalanceProtocol:
        """The highest protocol every configured assignor supports (KIP-429)."""
        common = set(self.assignors[0].supported_protocols)
        for assignor in self.assignors[1:]:
            common &= set(assignor.supported_protocols)
        return max(common)

    @property
    def effective_rebalance_timeout_ms(self) -> int:
        return self.max_poll_interval_ms if self.rebalance_timeout_ms is None else self.rebalance_timeout_ms

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def leaves_on_close(self, leave_group: Optional[bool]) -> bool:
        if leave_group is not None:
            return leave_group
        if self.leave_group_on_close is not None:
            return self.leave_group_on_close
        # Static members stay so a bounce within the session timeout causes no rebalance.
        return not self.is_static

    def assignor(self, name: str) -> Optional[Assignor]:
        for assignor in self.assignors:
            if assignor.name == name:
                return assignor
        return None
