"""Turn a decoded Kafka response into plain JSON values that two brokers can be compared on.

What differs between two correct brokers (or two runs of one) is replaced or dropped; everything
else is kept:

* member ids (random ``client-id-UUID`` strings, or ids the script made up) become ``m1``, ``m2``,
  ... in the order the scenario first sees them: a response's own top-level ``member_id`` is
  numbered before the ids inside it, so a JoinGroup answer numbers its receiver first;
* the scenario's run token (the random part of its group and topic names) becomes ``RUN``, in
  strings and inside bytes (a topic name in a subscription);
* topic ids (UUIDs) become ``id:<topic>`` for topics the scenario learned, ``uuid`` otherwise;
  the zero UUID stays ``zero``;
* node ids, hosts, ports, cluster ids, producer ids and transaction start times become placeholders
  (``-1`` is kept: it means "none"); transaction markers in fetched records lose their timestamp;
* throttle times and free-text error messages are dropped, as are the broker's feature levels;
* lists are compared as multisets (sorted by their canonical JSON), since brokers iterate their
  maps in different orders; bytes become hex, record batches their records.
"""
from __future__ import annotations

import json
import uuid
from typing import Any, Dict, Optional

from kafka.protocol.data_container import DataContainer

__all__ = ["Normaliser", "canonical"]

#: Fields that carry no comparable fact: a pause the broker asks for, its own wording of an error,
#: its feature levels (which depend on the broker, not on the request).
DROPPED_FIELDS = frozenset({
    "throttle_time_ms", "error_message", "supported_features", "finalized_features",
    "finalized_features_epoch", "zk_migration_ready", "header", "tags", "unknown_tags",
})
MEMBER_ID_FIELDS = frozenset({"member_id", "leader"})
NODE_ID_FIELDS = frozenset({"node_id", "leader_id", "controller_id", "coordinator_id", "broker_id"})
NODE_LIST_FIELDS = frozenset({"replica_nodes", "isr_nodes", "offline_replicas", "eligible_leader_replicas",
                              "last_known_elr"})
ADDRESS_FIELDS = frozenset({"host", "port", "client_host", "rack", "cluster_id"})
#: Wall-clock times the broker stamps (a transaction's start): "ts" when set, -1 kept.
BROKER_TIME_FIELDS = frozenset({"transaction_start_time_ms"})
RECORD_FIELDS = frozenset({"records"})
ZERO_UUID = uuid.UUID(int=0)


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class Normaliser:
    """One per scenario run: it numbers member ids across all of that run's responses."""

    def __init__(self, run_token: str) -> None:
        self.run_token = run_token
        self.member_ids: Dict[str, str] = {}
        self.topic_ids: Dict[uuid.UUID, str] = {}

    def member(self, raw: str) -> str:
        """The stable name of a member id (numbered on first sight)."""
        if raw == "":
            return ""
        if raw not in self.member_ids:
            self.member_ids[raw] = f"m{len(self.member_ids) + 1}"
        return self.member_ids[raw]

    def learn_topic_id(self, topic_id: uuid.UUID, topic: str) -> None:
        if topic_id != ZERO_UUID:
            self.topic_ids[topic_id] = self.text(topic)

    def text(self, value: str) -> str:
        return value.replace(self.run_token, "RUN") if self.run_token else value

    def normalise(self, response: Any) -> Any:
        """The comparable form of a decoded response (or of any value inside one)."""
        own_id = getattr(response, "member_id", None) if isinstance(response, DataContainer) else None
        if isinstance(own_id, str):
            self.member(own_id)
        return self._value(response, None)

    def _value(self, value: Any, field: Optional[str]) -> Any:
        if isinstance(value, DataContainer):
            return self._container(value)
        if isinstance(value, (list, tuple)):
            items = [self._value(item, field) for item in value]
            return sorted(items, key=canonical)
        if field in MEMBER_ID_FIELDS and isinstance(value, str):
            return self.member(value)
        if field in NODE_ID_FIELDS or field in NODE_LIST_FIELDS:
            return value if not isinstance(value, int) or value < 0 else "node"
        if field in ADDRESS_FIELDS:
            return value if value is None or value == -1 else field
        if field in BROKER_TIME_FIELDS and isinstance(value, int):
            return value if value < 0 else "ts"
        if field == "producer_id" and isinstance(value, int):
            return value if value < 0 else "pid"
        if field in RECORD_FIELDS and isinstance(value, (bytes, bytearray, memoryview)):
            return records_of(bytes(value))
        if isinstance(value, uuid.UUID):
            if value == ZERO_UUID:
                return "zero"
            topic = self.topic_ids.get(value)
            return f"id:{topic}" if topic is not None else "uuid"
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, (bytes, bytearray, memoryview)):
            data = bytes(value)
            if self.run_token:  # a topic name inside a subscription or an assignment
                data = data.replace(self.run_token.encode(), b"RUN")
            return data.hex()
        if value is None or isinstance(value, (bool, int, float)):
            return value
        return self.text(str(value))

    def _container(self, container: DataContainer) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        version = container.version
        for field in container._struct._fields:
            if version is not None and not field.for_version_q(version):
                continue
            if field.name in DROPPED_FIELDS:
                continue
            out[field.name] = self._value(getattr(container, field.name), field.name)
        return out


def records_of(data: bytes) -> Any:
    """The records of a fetched log slice as [offset, timestamp, key, value] (hex), or its size when
    it does not decode.  A transaction marker (control record) is ["control", offset, "commit" or
    "abort"]: its timestamp is the broker's clock and its value the coordinator's epoch."""
    from kafka.record.memory_records import MemoryRecords

    out = []
    try:
        batches = MemoryRecords(data)
        while batches.has_next():
            batch = batches.next_batch()
            if batch is None:
                break
            for record in batch:
                if batch.is_control_batch:
                    out.append(["control", record.offset, "commit" if record.commit else "abort"])
                    continue
                key = record.key.hex() if record.key is not None else None
                value = record.value.hex() if record.value is not None else None
                out.append([record.offset, record.timestamp, key, value])
    except Exception:  # a broker's slice may end in a partial batch: compare what decodes
        return {"undecodable_bytes": len(data)}
    return out
