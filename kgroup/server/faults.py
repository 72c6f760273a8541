"""Fault rules a test sets on a running server, and the trace of every request.

A rule matches requests by API name, client id and group id (each optional) and does one
thing to the next ``count`` of them (or to all, until cleared): answer with an error code,
delay the answer, swallow the request (no answer; the client times out), or close the
connection.  Rules are checked in the order they were added; the first match applies.
"""
from __future__ import annotations

import itertools
from typing import Any, List, Optional, Tuple

import attrs
from kafka.protocol.data_container import DataContainer

from kgroup.errors import ConfigError

__all__ = ["FaultAction", "FaultRule", "FaultRules", "TraceEntry", "error_codes_of"]

_KINDS = ("fail", "delay", "drop", "close")


@attrs.frozen
class FaultAction:
    kind: str
    error_code: int = 0
    delay_ms: int = 0

    def describe(self) -> str:
        if self.kind == "fail":
            return f"fail with error {self.error_code}"
        if self.kind == "delay":
            return f"delay {self.delay_ms} ms"
        return self.kind


@attrs.define
class FaultRule:
    """One fault: ``action`` for requests matching ``api``/``client_id``/``group_id`` (None = any)."""

    rule_id: int
    action: FaultAction
    api: Optional[str] = None
    client_id: Optional[str] = None
    group_id: Optional[str] = None
    #: How many more requests it applies to; None = every one until removed.
    remaining: Optional[int] = None

    def matches(self, api: str, client_id: str, group_id: Optional[str]) -> bool:
        return ((self.api is None or self.api == api)
                and (self.client_id is None or self.client_id == client_id)
                and (self.group_id is None or self.group_id == group_id))


class FaultRules:
    def __init__(self) -> None:
        self.rules: List[FaultRule] = []
        self._ids = itertools.count(1)

    def add(self, action: FaultAction, api: Optional[str] = None, client_id: Optional[str] = None,
            group_id: Optional[str] = None, count: Optional[int] = 1) -> FaultRule:
        if action.kind not in _KINDS:
            raise ConfigError(f"fault kind must be one of {_KINDS}, got {action.kind!r}")
        if count is not None and count < 1:
            raise ConfigError(
                f"a fault applies to at least one request (count >= 1) or None for all, got {count}")
        if action.delay_ms < 0:
            raise ConfigError(f"delay_ms must be >= 0, got {action.delay_ms}")
        rule = FaultRule(next(self._ids), action, api, client_id, group_id, count)
        self.rules.append(rule)
        return rule

    def remove(self, rule: FaultRule) -> None:
        self.rules = [r for r in self.rules if r.rule_id != rule.rule_id]

    def clear(self, client_id: Optional[str] = None) -> None:
        """Remove every rule, or every rule naming ``client_id``."""
        self.rules = [] if client_id is None else [r for r in self.rules if r.client_id != client_id]

    def match(self, api: str, client_id: str, group_id: Optional[str]) -> Optional[FaultAction]:
        for rule in self.rules:
            if rule.matches(api, client_id, group_id):
                if rule.remaining is not None:
                    rule.remaining -= 1
                    if rule.remaining == 0:
                        self.remove(rule)
                return rule.action
        return None


@attrs.define
class TraceEntry:
    """One request and how it was answered."""

    node_id: int
    connection_id: int
    client_id: str
    api: str
    api_version: int
    correlation_id: int
    received_ms: int
    answered_ms: Optional[int] = None
    #: Every error code in the response, outermost first, without repeats (NONE left out).
    error_codes: Tuple[int, ...] = ()
    group_id: Optional[str] = None
    #: "pending", "answered", "dropped", "closed", "broker unreachable", ...
    outcome: str = "pending"
    #: The fault that applied, if any.
    fault: Optional[str] = None

    @property
    def error_code(self) -> int:
        """The first error code of the response (0 when it carried none)."""
        return self.error_codes[0] if self.error_codes else 0


def error_codes_of(response: Any) -> Tuple[int, ...]:
    """Every non-zero ``error_code`` in a response struct, in field order, each once."""
    found: List[int] = []

    def walk(value: Any) -> None:
        if isinstance(value, DataContainer):
            for name in type(value).fields:
                field_value = getattr(value, name, None)
                if name == "error_code" and isinstance(field_value, int):
                    if field_value and field_value not in found:
                        found.append(int(field_value))
                else:
                    walk(field_value)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(response)
    return tuple(found)
