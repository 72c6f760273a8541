"""The planner's view of the group, through kafka-python's admin client.

Used on the driver side only: is the coordinator reachable, what has the
group committed, and removing a previous run's readers (Kafka's
``removeMembersFromConsumerGroup``, KIP-345) so their commits are refused.
"""

from __future__ import annotations

import logging
from typing import Any, Optional, Sequence

from kgroup_spark.errors import CoordinatorUnreachableError

log = logging.getLogger(__name__)


class GroupAdmin:
    def __init__(self, bootstrap_servers: str, group_id: str, connect_timeout_ms: int) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.group_id = group_id
        self.connect_timeout_ms = connect_timeout_ms
        self._admin: Optional[Any] = None

    def _client(self) -> Any:
        if self._admin is None:
            from kafka import KafkaAdminClient
            from kafka.errors import KafkaError

            try:
                self._admin = KafkaAdminClient(
                    bootstrap_servers=self.bootstrap_servers,
                    client_id=f"{self.group_id}-planner",
                    request_timeout_ms=max(self.connect_timeout_ms, 1_000),
                    bootstrap_timeout_ms=self.connect_timeout_ms,
                )
            except (KafkaError, OSError, TimeoutError) as error:
                raise CoordinatorUnreachableError(
                    f"kgroup: no coordinator answered at bootstrap.servers={self.bootstrap_servers!r} within "
                    f"{self.connect_timeout_ms} ms ({type(error).__name__}: {error})"
                ) from None
        return self._admin

    def check_reachable(self) -> None:
        self._client()

    def ensure_topic(self, topic: str, partitions: int) -> None:
        """Make the group's topic exist with at least ``partitions`` partitions on the coordinator's cluster.

        The readers commit offsets of the source's partitions under the source's name, and a Kafka
        broker refuses a commit for a topic or partition it does not have
        (``KafkaApis.handleOffsetCommitRequest``: UNKNOWN_TOPIC_OR_PARTITION).  Created with the
        broker's default replication factor (-1, KIP-464).
        """
        from kafka.admin import NewPartitions, NewTopic
        from kafka.errors import KafkaError, TopicAlreadyExistsError

        admin = self._client()
        try:
            admin.create_topics([NewTopic(topic, partitions, -1)])
            return
        except TopicAlreadyExistsError:
            pass
        except KafkaError as error:
            raise CoordinatorUnreachableError(
                f"kgroup: cannot create topic {topic!r} ({partitions} partitions) for the group's commits "
                f"at {self.bootstrap_servers!r}: {type(error).__name__}: {error}"
            ) from None
        described = admin.describe_topics([topic])
        existing = len(described[0].get("partitions", [])) if described else 0
        if 0 < existing < partitions:
            admin.create_partitions({topic: NewPartitions(partitions)})

    def committed(self, topic: str) -> dict[int, tuple[int, str]]:
        """``{partition: (offset, metadata)}`` the group committed for ``topic``."""
        offsets = self._client().list_group_offsets({self.group_id: None}).get(self.group_id, {})
        return {
            tp.partition: (meta.offset, meta.metadata or "")
            for tp, meta in offsets.items()
            if tp.topic == topic and meta.offset >= 0
        }

    def remove_members(self, instance_ids: Sequence[str]) -> int:
        """Remove a previous run's readers; how many the coordinator removed.

        Static readers are removed by instance id (LeaveGroup v3+, no lookup
        needed); dynamic ones by the member ids DescribeGroups lists.
        """
        from kafka.admin import MemberToRemove
        from kafka.errors import KafkaError

        admin = self._client()
        if instance_ids:
            identities = [MemberToRemove(group_instance_id=instance_id) for instance_id in instance_ids]
        else:
            try:
                description = admin.describe_groups([self.group_id]).get(self.group_id, {})
            except (KafkaError, ValueError) as error:  # some brokers' answers kafka-python cannot decode
                log.warning(
                    "kgroup: cannot describe group %s to remove a previous run's readers: %s",
                    self.group_id,
                    error,
                )
                return 0
            identities = [
                MemberToRemove(member_id=member.get("member_id"))
                for member in description.get("members", []) or []
            ]
        if not identities:
            return 0
        try:
            results = admin.remove_group_members(self.group_id, identities)
        except KafkaError as error:  # e.g. the group does not exist yet
            log.info("kgroup: no previous readers removed from group %s: %s", self.group_id, error)
            return 0
        removed = sum(1 for error in results.values() if getattr(error, "errno", 0) == 0)
        log.info("kgroup: removed %d readers of a previous run from group %s", removed, self.group_id)
        return removed

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None
