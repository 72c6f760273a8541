"""Fault rules a test sets on a running server, and the trace of every request.

A rule matches requests by API name, client id and group id (each optional) and does one
thing to the next ``count`` of them (or to all, until cleared): answer with an error code,
delay the answer, swallow the request (no answer; the client times out), or close the
connection.  Rules are checked in the order they were added; the first match applies.
"""
from __future__ import annotations

import enum
import itertools
from collections import deque
from typing import Any, Deque, Dict, Iterator, List, Optional, Tuple

import attrs
from kafka.protocol.data_container import DataContainer

from kgroup.errors import ConfigError
from kgroup.server.fetch_encoding import FetchAnswer
from kgroup.server.metadata_encoding import EncodedPartitions
from kgroup.server.produce_encoding import ProduceAnswer

__all__ = ["FaultAction", "FaultRule", "FaultRules", "RequestTrace", "RequestTraceEntry", "WireFaultKind",
           "error_codes_of"]


class WireFaultKind(enum.Enum):
    """What a fault rule does to a matching request."""

    #: Answer with the rule's error code instead of handling the request.
    FAIL = "fail"
    #: Handle it, and send the answer ``delay_ms`` later.
    DELAY = "delay"
    #: Swallow it: no answer (the client times out).
    DROP = "drop"
    #: Close the connection.
    CLOSE = "close"


def _wire_fault_kind(kind: object) -> WireFaultKind:
    try:
        return WireFaultKind(kind)
    except ValueError:
        names = ", ".join(k.value for k in WireFaultKind)
        raise ConfigError(f"fault kind must be one of {names}, got {kind!r}") from None


@attrs.frozen
class FaultAction:
    #: A :class:`WireFaultKind` (its value, ``"fail"`` ..., is accepted too).
    kind: WireFaultKind = attrs.field(converter=_wire_fault_kind)
    error_code: int = 0
    delay_ms: int = 0

    def describe(self) -> str:
        if self.kind is WireFaultKind.FAIL:
            return f"fail with error {self.error_code}"
        if self.kind is WireFaultKind.DELAY:
            return f"delay {self.delay_ms} ms"
        return self.kind.value


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
class RequestTraceEntry:
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


class RequestTrace:
    """The last ``max_entries`` requests, oldest first: a ring buffer, so a server that runs for
    days keeps a few megabytes of trace, not one entry per request it ever served.

    ``max_entries=0`` records nothing (and the engine then skips the error-code walk);
    ``dropped`` counts entries pushed out to make room, so a reader knows the trace is partial.
    """

    def __init__(self, max_entries: int) -> None:
        if max_entries < 0:
            raise ConfigError(f"max_entries must be >= 0, got {max_entries}")
        self.max_entries = max_entries
        self._entries: Deque[RequestTraceEntry] = deque(maxlen=max_entries)
        self.dropped = 0

    @property
    def enabled(self) -> bool:
        return self.max_entries > 0

    def append(self, entry: RequestTraceEntry) -> None:
        if not self.max_entries:
            return
        if len(self._entries) == self.max_entries:
            self.dropped += 1
        self._entries.append(entry)

    def clear(self) -> None:
        self._entries.clear()
        self.dropped = 0

    def __iter__(self) -> Iterator[RequestTraceEntry]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, index: int) -> RequestTraceEntry:
        return self._entries[index]


#: Per response class, in field order: the fields to read, each True for ``error_code`` and
#: False for a field that can hold structs (other fields never hold an error code).
_ERROR_CODE_PLANS: Dict[type, Tuple[Tuple[str, bool], ...]] = {}


def _plan(cls: type) -> Tuple[Tuple[str, bool], ...]:
    plan = _ERROR_CODE_PLANS.get(cls)
    if plan is None:
        steps = []
        for name, field in cls.fields.items():  # type: ignore[attr-defined]
            if name in ("error_code", "partition_error_code"):   # the latter: AddPartitionsToTxn
                steps.append((name, True))
                continue
            is_struct = getattr(field, "is_struct", None)
            is_array = getattr(field, "is_struct_array", None)
            if not callable(is_struct) or not callable(is_array) or is_struct() or is_array():
                steps.append((name, False))  # a struct, an array of them, or unknown: look inside
        plan = _ERROR_CODE_PLANS[cls] = tuple(steps)
    return plan


_HAND_BUILT_ANSWERS = (ProduceAnswer, FetchAnswer)


def error_codes_of(response: Any) -> Tuple[int, ...]:
    """Every non-zero ``error_code`` in a response struct, in field order, each once.

    Only fields that can hold structs are walked (planned once per class from the schema), so a
    Metadata answer's 10,000 partitions cost one attribute read each, not one per field."""
    if type(response) in _HAND_BUILT_ANSWERS:  # the Produce and Fetch hot paths' own answer types
        return response.error_codes()
    found: List[int] = []

    def walk(value: Any) -> None:
        if isinstance(value, DataContainer):
            for name, is_code in _plan(type(value)):
                field_value = getattr(value, name, None)
                if not is_code:
                    walk(field_value)
                elif isinstance(field_value, int) and field_value and field_value not in found:
                    found.append(int(field_value))
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, EncodedPartitions):
            # A Metadata topic's packed entries know their codes: no struct decoded for them.
            found.extend(code for code in value.error_codes if code not in found)

    walk(response)
    return tuple(found)
