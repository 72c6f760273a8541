"""A group coordinator hosted in the driver process: kgroup's wire server on an ephemeral port.

Executors reach it over TCP like any Kafka cluster; stock admin clients see
the readers as a consumer group there.  It also records, from the
coordinator's own answers, which member held which partition when.
"""

from __future__ import annotations

import threading
from typing import Any, Optional

from kgroup.core.coordinator_common.config import GroupCoordinatorConfig
from kgroup.server import KafkaServer, ServerConfig
from kgroup_spark.ownership import OwnershipInterval, OwnershipRecorder
from kgroup_spark.stickiness import BatchRead, ReadRecorder, Stickiness

#: Readers of one batch start within a few hundred ms of each other; a short initial
#: delay lets them form one generation without holding the first batch for Kafka's 3 s.
DEFAULT_INITIAL_REBALANCE_DELAY_MS = 500


class GroupHost:
    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        initial_rebalance_delay_ms: int = DEFAULT_INITIAL_REBALANCE_DELAY_MS,
        **server_options: Any,
    ) -> None:
        coordinator = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=initial_rebalance_delay_ms)
        self.server = KafkaServer(
            ServerConfig(
                host=host, port=port, offsets_partitions=1, coordinator=coordinator, **server_options
            )
        )
        self._recorder = OwnershipRecorder()
        self._reads = ReadRecorder()
        self._lock = threading.Lock()

    def start(self) -> "GroupHost":
        """Start the server; return once its coordinators answer (a first ListGroups gets no
        COORDINATOR_LOAD_IN_PROGRESS)."""
        self.server.start()
        self.server.observe_groups(self._observe)
        self.server.wait_coordinators_loaded()
        return self

    def stop(self) -> None:
        self.server.stop()

    def __enter__(self) -> "GroupHost":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def bootstrap_servers(self) -> str:
        return self.server.bootstrap_servers

    def _observe(self, request: Any, response: Any, now_ms: int) -> None:
        with self._lock:
            self._recorder.observe(request, response, now_ms)
            self._reads.observe(request, response, now_ms)

    def ownership(self, group_id: Optional[str] = None) -> list[OwnershipInterval]:
        """Every interval a member id held a partition, in the coordinator's view."""
        with self._lock:
            return self._recorder.intervals(group_id)

    def ownership_overlaps(self, group_id: Optional[str] = None) -> list:
        """Pairs of intervals where two members held one partition at once (empty when all is well)."""
        with self._lock:
            return self._recorder.overlaps(group_id)

    def batch_reads(self, group_id: str) -> list[dict[int, BatchRead]]:
        """Per batch, in commit order: who (member id, reader identity, executor) read each partition."""
        with self._lock:
            return self._reads.batches(group_id)

    def stickiness(self, group_id: str, skip_batches: int = 0) -> Stickiness:
        """How often a partition was read by the same member / executor in consecutive batches."""
        with self._lock:
            return self._reads.stickiness(group_id, skip_batches)
