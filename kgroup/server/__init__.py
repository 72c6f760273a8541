"""The in-memory cluster served over the Kafka wire protocol (see :class:`KafkaServer`).

The names below load on first use (PEP 562), so ``kgroup serve``'s argument parsing
(:mod:`kgroup.server.command`, which the ``kgroup`` command line imports for every command) does not
load the server and kafka-python with it.  kafka-python's package ``__init__`` (its clients) is
deferred until something uses it (:mod:`kgroup.server.kafka_package`): the server needs only its
protocol and record modules.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from kgroup.server.kafka_package import defer_kafka_package_init

if TYPE_CHECKING:
    from kgroup.server.config import ServerConfig
    from kgroup.server.faults import FaultRule, RequestTraceEntry
    from kgroup.server.server import KafkaServer, ServerNotRunningError

defer_kafka_package_init()

__all__ = ["FaultRule", "KafkaServer", "ServerConfig", "ServerNotRunningError", "RequestTraceEntry"]

_HOMES = {
    "FaultRule": "kgroup.server.faults", "KafkaServer": "kgroup.server.server",
    "ServerConfig": "kgroup.server.config", "ServerNotRunningError": "kgroup.server.server",
    "RequestTraceEntry": "kgroup.server.faults",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
