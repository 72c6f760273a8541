"""Transactional records, markers and read_committed reads on the in-process cluster's partitions (issue 26).

The cluster's partitions hold arbitrary payloads in replica logs (``ClusterStateMachine``).  A
transactional producer appends :class:`TransactionalRecord` payloads (tagged with producer id and
epoch, as Kafka's transactional batches are), and the transaction coordinator's markers arrive through
:class:`TransactionalData` (a :class:`~kgroup.core.transaction_markers.TxnMarkerWriter`) as
:class:`ControlMarker` payloads, Kafka's control batches (``ControlRecordType`` COMMIT / ABORT).  Any
other payload (a :class:`PlainRecord`, the simulator's input strings) is outside every transaction.

Per partition, :class:`_PartitionView` derives what Kafka's ``ProducerStateManager`` keeps from the
leader's log, reading only what was appended since it last looked (and the whole log again after a
leader change, as a new Kafka leader loads its producer state): each producer's latest epoch (an
append or marker with an older one is INVALID_PRODUCER_EPOCH, ``ProducerAppendInfo.checkProducerEpoch``),
the open transactions, the aborted records, and the last stable offset (the first offset of the
earliest transaction not decided below the high watermark, else the HW).  A read_committed read
(:meth:`TransactionalData.read_committed`) returns records below the LSO, skipping aborted records and
markers, as Kafka's consumer does with the aborted-transactions list; a read_uncommitted read
(:meth:`TransactionalData.read_uncommitted`) returns every record below the HW, markers skipped.

Used by :class:`kgroup.testing.InMemoryKafka` (``transactions=True``) and the simulator's exactly-once
mode (``kgroup.sim.eos``).
"""
from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional, Set, Tuple, Union

from kgroup.core.cluster import ClusterStateMachine
from kgroup.core.error_codes import ErrorCode
from kgroup.core.transaction_markers import MarkerAppend, TxnMarker
from kgroup.errors import ClusterError

__all__ = ["ControlMarker", "PlainRecord", "TransactionalData", "TransactionalRecord"]

E = ErrorCode


class TransactionalRecord(NamedTuple):
    """One record a transactional producer appended (Kafka's record in a transactional batch)."""

    value: object
    producer_id: int
    producer_epoch: int
    key: object = None


class PlainRecord(NamedTuple):
    """A record outside any transaction (a non-transactional producer's)."""

    value: object
    key: object = None


class ControlMarker(NamedTuple):
    """A transaction marker (Kafka's control batch) in a data partition."""

    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int


class _PartitionView:
    """Producer state and transaction outcomes of one partition's leader log (see the module doc)."""

    __slots__ = ("leader", "leader_epoch", "scanned", "epochs", "open_first", "open_records", "aborted",
                 "decided_above")

    def __init__(self, leader: Optional[int], leader_epoch: int) -> None:
        self.leader = leader
        self.leader_epoch = leader_epoch
        self.scanned = 0
        self.epochs: Dict[int, int] = {}
        #: Per producer id with an open transaction: its first offset, and its records' offsets.
        self.open_first: Dict[int, int] = {}
        self.open_records: Dict[int, List[int]] = {}
        self.aborted: Set[int] = set()
        #: (first offset, marker offset) of transactions whose marker the HW may not have passed yet.
        self.decided_above: List[Tuple[int, int]] = []

    def scan(self, entries: list) -> None:
        for offset in range(self.scanned, len(entries)):
            payload = entries[offset].payload
            if isinstance(payload, TransactionalRecord):
                pid = payload.producer_id
                if payload.producer_epoch > self.epochs.get(pid, -1):
                    self.epochs[pid] = payload.producer_epoch
                if pid not in self.open_first:
                    self.open_first[pid] = offset
                    self.open_records[pid] = []
                self.open_records[pid].append(offset)
            elif isinstance(payload, ControlMarker):
                pid = payload.producer_id
                if payload.producer_epoch > self.epochs.get(pid, -1):
                    self.epochs[pid] = payload.producer_epoch
                first = self.open_first.pop(pid, None)
                records = self.open_records.pop(pid, [])
                if first is not None:  # a marker for a producer with nothing open ends nothing (Kafka)
                    if not payload.commit:
                        self.aborted.update(records)
                    self.decided_above.append((first, offset))
        self.scanned = len(entries)

    def last_stable_offset(self, hw: int) -> int:
        self.decided_above = [(first, marker) for first, marker in self.decided_above if marker >= hw]
        lso = hw
        for first in self.open_first.values():
            lso = min(lso, first)
        for first, _marker in self.decided_above:
            lso = min(lso, first)
        return lso


class TransactionalData:
    """Transactional appends, markers and read_committed reads on the simulator's partitions."""

    def __init__(self, cluster: ClusterStateMachine) -> None:
        self.cluster = cluster
        self._views: Dict[Tuple[str, int], _PartitionView] = {}

    def _view(self, topic: str, index: int) -> Optional[Tuple[_PartitionView, list, int]]:
        """The partition's view brought up to its leader's log end, the log's entries and its HW; None
        without a leader."""
        partition = self.cluster.partition(topic, index)
        leader = partition.leader
        if leader is None:
            return None
        log = partition.logs[leader]
        view = self._views.get((topic, index))
        if (view is None or view.leader != leader or view.leader_epoch != partition.leader_epoch
                or view.scanned > len(log.entries)):
            # A new leader reads its log from the start, as Kafka's ProducerStateManager loads it.
            view = self._views[(topic, index)] = _PartitionView(leader, partition.leader_epoch)
        view.scan(log.entries)
        return view, log.entries, log.hw

    def producer_epoch(self, topic: str, index: int, producer_id: int) -> int:
        seen = self._view(topic, index)
        return -1 if seen is None else seen[0].epochs.get(producer_id, -1)

    def append(self, topic: str, index: int, records: List[TransactionalRecord]) -> Union[int, ErrorCode]:
        """Append one producer's transactional records on the leader (acks=all); the first offset, or
        why not (an older producer epoch than the partition holds: INVALID_PRODUCER_EPOCH)."""
        first = records[0]
        if first.producer_epoch < self.producer_epoch(topic, index, first.producer_id):
            return E.INVALID_PRODUCER_EPOCH
        try:
            return self.cluster.produce_many(topic, index, records, acks_all=True)
        except ClusterError as error:
            return _code(error)

    def append_plain(self, topic: str, index: int, records: List[PlainRecord]) -> Union[int, ErrorCode]:
        """Append records outside any transaction on the leader (acks=all); the first offset, or why not."""
        try:
            return self.cluster.produce_many(topic, index, records, acks_all=True)
        except ClusterError as error:
            return _code(error)

    def write_txn_marker(self, marker: TxnMarker, now_ms: int) -> Union[MarkerAppend, ErrorCode]:
        """The broker side of WriteTxnMarkers for a data partition (as the wire server's
        ``DataPlane.write_txn_marker``; the coordinator epoch is carried but not checked)."""
        partitions = self.cluster.topics.get(marker.topic)
        if partitions is None or not 0 <= marker.partition < len(partitions):
            return E.UNKNOWN_TOPIC_OR_PARTITION
        partition = partitions[marker.partition]
        if partition.leader is None:
            return E.NOT_LEADER_OR_FOLLOWER
        if marker.producer_epoch < self.producer_epoch(marker.topic, marker.partition, marker.producer_id):
            return E.INVALID_PRODUCER_EPOCH
        control = ControlMarker(marker.producer_id, marker.producer_epoch, marker.commit,
                                marker.coordinator_epoch)
        try:
            offset = self.cluster.produce(marker.topic, marker.partition, control, acks_all=True)
        except ClusterError as error:
            return _code(error)
        return MarkerAppend(marker.topic, marker.partition, partition.leader_epoch, offset)

    def last_stable_offset(self, topic: str, index: int) -> Optional[int]:
        seen = self._view(topic, index)
        if seen is None:
            return None
        view, _entries, hw = seen
        return view.last_stable_offset(hw)

    def read_committed(self, topic: str, index: int, position: int,
                       max_records: int) -> Tuple[List[Tuple[int, object]], int]:
        """Records from ``position`` below the LSO, at most ``max_records`` offsets on, without aborted
        records or markers: ([(offset, payload)], the next position)."""
        seen = self._view(topic, index)
        if seen is None:
            return [], position
        view, entries, hw = seen
        end = min(view.last_stable_offset(hw), position + max_records)
        out: List[Tuple[int, object]] = []
        aborted = view.aborted
        for offset in range(position, end):
            payload = entries[offset].payload
            if isinstance(payload, ControlMarker) or offset in aborted:
                continue
            out.append((offset, payload))
        return out, max(position, end)

    def read_uncommitted(self, topic: str, index: int, position: int,
                         max_records: int) -> Tuple[List[Tuple[int, object]], int]:
        """Records from ``position`` below the high watermark, at most ``max_records`` offsets on, open and
        aborted transactions' records included, markers skipped (Kafka's consumer never returns control
        records): ([(offset, payload)], the next position)."""
        seen = self._view(topic, index)
        if seen is None:
            return [], position
        _view, entries, hw = seen
        end = min(hw, position + max_records)
        out = [(offset, entries[offset].payload) for offset in range(position, end)
               if not isinstance(entries[offset].payload, ControlMarker)]
        return out, max(position, end)


def _code(error: ClusterError) -> ErrorCode:
    code = error.error_code
    return code if isinstance(code, ErrorCode) else E.UNKNOWN_SERVER_ERROR
