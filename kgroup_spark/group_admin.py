"""The planner's view of the group, through kafka-python's admin client.

Used on the driver side only: is the coordinator reachable, what has the
group committed, and removing a previous run's readers (Kafka's
``removeMembersFromConsumerGroup``, KIP-345) so their commits are refused.
"""
from __future__ import annotations

import logging
from typing import Any, Optional

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
                self._admin = KafkaAdminClient(bootstrap_servers=self.bootstrap_servers,
                                               client_id=f"{self.group_id}-planner",
                                               request_timeout_ms=max(self.connect_timeout_ms, 1_000),
                                               bootstrap_timeout_ms=self.connect_timeout_ms)
            except (KafkaError, OSError, TimeoutError) as error:
                raise CoordinatorUnreachableError(
                    f"kgroup: no coordinator answered at bootstrap.servers={self.bootstrap_servers!r} within "
                    f"{self.connect_timeout_ms} ms ({type(error).__name__}: {error})") from None
        return self._admin

    def check_reachable(self) -> None:
        self._client()

    def committed(self, topic: str) -> dict[int, tuple[int, str]]:
        """``{partition: (offset, metadata)}`` the group committed for ``topic``."""
        offsets = self._client().list_group_offsets({self.group_id: None}).get(self.group_id, {})
        return {tp.partition: (meta.offset, meta.metadata or "") for tp, meta in offsets.items()
                if tp.topic == topic and meta.offset >= 0}

    def remove_members(self) -> int:
        """Remove every member of the group (a previous run's readers); how many were removed."""
        from kafka.admin import MemberToRemove
        admin = self._client()
        description = admin.describe_groups([self.group_id]).get(self.group_id, {})
        identities = []
        for member in description.get("members", []) or []:
            instance_id = member.get("group_instance_id")
            identities.append(MemberToRemove(group_instance_id=instance_id) if instance_id
                              else MemberToRemove(member_id=member.get("member_id")))
        if identities:
            admin.remove_group_members(self.group_id, identities)
            log.info("kgroup: removed %d members of a previous run from group %s", len(identities), self.group_id)
        return len(identities)

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None
