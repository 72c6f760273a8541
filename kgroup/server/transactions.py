"""How the wire server builds its transaction hosting, and where its marker writers come from.

Markers for ``__consumer_offsets`` are written by ``GroupHosting.write_txn_marker`` and markers for
every other partition by ``DataPlane.write_txn_marker`` (issue 26 builds both beside the transaction
coordinator).  Both are looked up here, by name, when a marker is written: a missing one raises
:class:`MissingTxnMarkerWriter` naming the class, from this one place, instead of failing
somewhere inside the coordinator, and a server whose transactions write no marker still serves
everything else.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Union

from kgroup.core.cluster.transaction_hosting import TransactionHosting, TransactionHostingConfig
from kgroup.core.error_codes import ErrorCode
from kgroup.core.transaction_markers import MarkerAppend, TxnMarker
from kgroup.errors import KGroupError

if TYPE_CHECKING:
    from kgroup.core.cluster.group_hosting import GroupHosting
    from kgroup.server.config import ServerConfig
    from kgroup.server.data_plane import DataPlane

__all__ = ["MissingTxnMarkerWriter", "transaction_hosting_for"]

#: The method both writers provide (``kgroup.core.transaction_markers.TxnMarkerWriter``).
WRITER_METHOD = "write_txn_marker"


class MissingTxnMarkerWriter(KGroupError, TypeError):
    """A transaction needs a marker written and the object meant to write it has no ``write_txn_marker``."""


class _WriterByName:
    """``target.write_txn_marker``, looked up at each write."""

    def __init__(self, target: object) -> None:
        self.target = target

    def write_txn_marker(self, marker: TxnMarker, now_ms: int) -> Union[MarkerAppend, ErrorCode]:
        write = getattr(self.target, WRITER_METHOD, None)
        if write is None:
            raise MissingTxnMarkerWriter(
                f"{type(self.target).__name__} has no {WRITER_METHOD}(marker, now_ms): the marker for "
                f"{marker.topic}-{marker.partition} cannot be written (issue 26: it is built beside the "
                "transaction coordinator)")
        return write(marker, now_ms)


def transaction_hosting_for(hosting: "GroupHosting", data_plane: "DataPlane", config: "ServerConfig",
                            now_ms: int) -> TransactionHosting:
    """The transaction coordinators of the server's cluster, set up as its group coordinators are."""
    return TransactionHosting(hosting.cluster, TransactionHostingConfig(
        transaction_state_partitions=config.transaction_partitions, transaction_state_replication_factor=3,
        load_time_ms=config.group_load_time_ms, coordinator=config.transaction,
        first_producer_id=config.first_producer_id, eager_replication=True), now_ms,
        offsets_writer=_WriterByName(hosting), data_writer=_WriterByName(data_plane))
