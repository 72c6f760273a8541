"""Scripted group members: one connection each, every answer recorded under the member's name."""
from __future__ import annotations

import uuid
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from kgroup.broker_conformance import builders
from kgroup.broker_conformance.scenario import ScenarioContext

MEMBER_ID_REQUIRED = 79


class ClassicMember:
    """A classic-protocol member (JoinGroup/SyncGroup/Heartbeat/LeaveGroup) scripted step by step."""

    def __init__(self, ctx: ScenarioContext, group_id: str, name: str, *, version: int = 5,
                 instance_id: Optional[str] = None, session_timeout_ms: int = 10_000,
                 rebalance_timeout_ms: int = 3_000, topics: Sequence[str] = ("t",),
                 protocols: Optional[Sequence[Tuple[str, bytes]]] = None,
                 protocol_type: str = "consumer") -> None:
        self.ctx = ctx
        self.group_id = group_id
        self.name = name
        self.version = version
        self.instance_id = instance_id
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.protocols = (list(protocols) if protocols is not None
                          else [("range", builders.subscription(*topics))])
        self.protocol_type = protocol_type
        self.connection = ctx.group_connection(group_id, client_id=name)
        self.member_id = ""
        self.generation_id = -1
        self.protocol_name: Optional[str] = None
        self.leader = ""
        self.members: List[str] = []

    # -- JoinGroup --------------------------------------------------------------------------------

    def send_join(self) -> None:
        self.ctx.send(self.connection, builders.join_group(
            self.version, self.group_id, self.member_id, instance_id=self.instance_id,
            session_timeout_ms=self.session_timeout_ms, rebalance_timeout_ms=self.rebalance_timeout_ms,
            protocol_type=self.protocol_type, protocols=self.protocols))

    def receive_join(self, timeout_s: float = 15.0) -> Any:
        answer = self.ctx.receive(self.connection, f"{self.name} JoinGroup v{self.version}",
                                  timeout_s=timeout_s)
        if answer is not None:
            if answer.member_id:
                self.member_id = answer.member_id
            if answer.error_code == 0:
                self.generation_id = answer.generation_id
                self.protocol_name = answer.protocol_name
                self.leader = answer.leader
                self.members = [m.member_id for m in answer.members]
        return answer

    def join(self) -> Any:
        """Join, and join again with the given id when the broker answers MEMBER_ID_REQUIRED (KIP-394)."""
        self.send_join()
        answer = self.receive_join()
        if answer is not None and answer.error_code == MEMBER_ID_REQUIRED:
            self.send_join()
            answer = self.receive_join()
        return answer

    # -- SyncGroup, Heartbeat, LeaveGroup, OffsetCommit ---------------------------------------------

    def sync_request(self, assignments: Optional[Mapping[str, bytes]] = None, version: Optional[int] = None,
                     generation_id: Optional[int] = None, member_id: Optional[str] = None,
                     protocol_name: Optional[str] = None, protocol_type: Optional[str] = "consumer") -> Any:
        version = min(self.version, 5) if version is None else version
        return builders.sync_group(
            version, self.group_id, self.generation_id if generation_id is None else generation_id,
            self.member_id if member_id is None else member_id, instance_id=self.instance_id,
            protocol_type=protocol_type, protocol_name=protocol_name or self.protocol_name or "range",
            assignments=assignments or {})

    def sync(self, assignments: Optional[Mapping[str, bytes]] = None, **options: Any) -> Any:
        request = self.sync_request(assignments, **options)
        return self.ctx.call(self.connection, request, f"{self.name} SyncGroup v{request.API_VERSION}")

    def send_sync(self, assignments: Optional[Mapping[str, bytes]] = None, **options: Any) -> None:
        self.ctx.send(self.connection, self.sync_request(assignments, **options))

    def receive_sync(self) -> Any:
        return self.ctx.receive(self.connection, f"{self.name} SyncGroup")

    def heartbeat(self, version: int = 4, generation_id: Optional[int] = None,
                  member_id: Optional[str] = None) -> Any:
        request = builders.heartbeat(version, self.group_id,
                                     self.generation_id if generation_id is None else generation_id,
                                     self.member_id if member_id is None else member_id, self.instance_id)
        return self.ctx.call(self.connection, request, f"{self.name} Heartbeat v{version}")

    def leave(self, version: int = 5, member_id: Optional[str] = None) -> Any:
        leaving = self.member_id if member_id is None else member_id
        request = builders.leave_group(version, self.group_id, [(leaving, self.instance_id)])
        return self.ctx.call(self.connection, request, f"{self.name} LeaveGroup v{version}")

    def commit(self, offsets: Mapping[str, Mapping[int, int]], version: int = 8,
               generation_id: Optional[int] = None, member_id: Optional[str] = None) -> Any:
        request = builders.offset_commit(
            version, self.group_id, offsets, generation_id=self.generation_id if generation_id is None
            else generation_id, member_id=self.member_id if member_id is None else member_id,
            instance_id=self.instance_id)
        return self.ctx.call(self.connection, request, f"{self.name} OffsetCommit v{version}")


def stable_group(ctx: ScenarioContext, group_id: str, names: Iterable[str] = ("A",), topic: str = "t",
                 **options: Any) -> List[ClassicMember]:
    """Members that joined one by one and synced: a Stable group (every step recorded).

    The first member joins and syncs alone; each next one joins, the ones already in rejoin after
    their heartbeat says REBALANCE_IN_PROGRESS, and the leader hands partition i to the i-th member.
    """
    members: List[ClassicMember] = []
    for name in names:
        member = ClassicMember(ctx, group_id, name, topics=(topic,), **options)
        if not members:
            member.join()
        else:
            if member.version >= 4 and member.instance_id is None:
                member.send_join()
                member.receive_join()  # MEMBER_ID_REQUIRED
            member.send_join()
            ctx.wait_group_state(group_id, "PreparingRebalance")
            for old in members:
                old.heartbeat()
                old.send_join()
            for old in members:
                old.receive_join()
            member.receive_join()
        members.append(member)
        leader = next(m for m in members if m.member_id == member.leader)
        assignments = {m.member_id: builders.assignment(topic, i) for i, m in enumerate(members)}
        for other in members:
            if other is not leader:
                other.send_sync()
        leader.sync(assignments)
        for other in members:
            if other is not leader:
                other.receive_sync()
    return members


class ConsumerMember:
    """A KIP-848 member (ConsumerGroupHeartbeat) that keeps its epoch and its assignment."""

    def __init__(self, ctx: ScenarioContext, group_id: str, name: str, *, version: int = 1,
                 topics: Sequence[str] = ("t",), instance_id: Optional[str] = None,
                 assignor: Optional[str] = None, rebalance_timeout_ms: int = 5_000) -> None:
        self.ctx = ctx
        self.group_id = group_id
        self.name = name
        self.version = version
        self.topics = list(topics)
        self.instance_id = instance_id
        self.assignor = assignor
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.connection = ctx.group_connection(group_id, client_id=name)
        self.member_id = ctx.new_member_id() if version >= 1 else ""
        self.member_epoch = 0
        self.assigned: Dict[uuid.UUID, List[int]] = {}

    def heartbeat(self, *, epoch: Optional[int] = None, full: bool = False, owned: Optional[Any] = None,
                  label: str = "", member_id: Optional[str] = None, view: Any = None,
                  **overrides: Any) -> Any:
        """Heartbeat; ``full`` sends the subscription and owned partitions (a join or a re-send),
        otherwise only what changed (nothing): Kafka's null-means-unchanged rule."""
        epoch = self.member_epoch if epoch is None else epoch
        joining = epoch == 0 or full
        fields: Dict[str, Any] = dict(
            instance_id=self.instance_id,
            rebalance_timeout_ms=self.rebalance_timeout_ms if joining else -1,
            topics=self.topics if joining else None,
            assignor=self.assignor if joining else None,
            owned=(self.assigned if owned is None else owned) if joining or owned is not None else None)
        fields.update(overrides)
        request = builders.consumer_heartbeat(
            self.version, self.group_id, self.member_id if member_id is None else member_id, epoch, **fields)
        # The label names what the step does, never an epoch the broker chose.
        role = {0: "join", -1: "leave", -2: "temporary leave"}.get(epoch, "heartbeat")
        answer = self.ctx.call(self.connection, request,
                               label or f"{self.name} ConsumerGroupHeartbeat v{self.version} {role}", view)
        if answer is not None and answer.error_code == 0:
            if answer.member_id:
                self.member_id = answer.member_id
            self.member_epoch = answer.member_epoch
            if answer.assignment is not None:
                self.assigned = {t.topic_id: sorted(t.partitions) for t in answer.assignment.topic_partitions}
        return answer

    def owned_count(self) -> int:
        return sum(len(p) for p in self.assigned.values())

    def leave(self, epoch: int = -1) -> Any:
        return self.heartbeat(epoch=epoch, owned=None)
