"""The in-memory cluster served over the Kafka wire protocol (see :class:`KafkaServer`)."""
from kgroup.server.config import ServerConfig
from kgroup.server.faults import FaultRule, TraceEntry
from kgroup.server.server import KafkaServer, ServerNotRunningError

__all__ = ["FaultRule", "KafkaServer", "ServerConfig", "ServerNotRunningError", "TraceEntry"]
