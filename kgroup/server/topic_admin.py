"""Topic ids and the topic admin APIs (CreateTopics, DeleteTopics, CreatePartitions) on the cluster.

Kafka's ``ReplicationControlManager`` is the reference for the error each case answers.  Moved out
of :mod:`kgroup.server.data_plane` (issue 25: one class per concern, none past 400 lines).
"""
from __future__ import annotations

import itertools
import re
import uuid
from collections import Counter
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from kafka.protocol.admin import CreatePartitionsResponse, CreateTopicsResponse, DeleteTopicsResponse

from kgroup.core.cluster.offsets_topic import GROUP_METADATA_TOPIC
from kgroup.core.cluster.state_machine import ClusterStateMachine
from kgroup.core.error_codes import ErrorCode
from kgroup.errors import ClusterError, ConfigError
from kgroup.server.config import ServerConfig
from kgroup.server.topic_configs import topic_config_error

__all__ = ["MAX_PARTITIONS_PER_REQUEST", "NIL_UUID", "TopicAdmin", "is_valid_topic_name"]

E = ErrorCode
_LEGAL_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
NIL_UUID = uuid.UUID(int=0)
#: Kafka's ReplicationControlManager.MAX_PARTITIONS_PER_BATCH: the most partitions one CreateTopics
#: (or, here, CreatePartitions) request may add; more is refused with POLICY_VIOLATION.
MAX_PARTITIONS_PER_REQUEST = 10_000
_TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."


def is_valid_topic_name(name: str) -> bool:
    """Kafka's Topic.validate: 1 to 249 of ``[a-zA-Z0-9._-]``, and neither "." nor ".."."""
    return bool(_LEGAL_TOPIC_NAME.match(name)) and name not in (".", "..")


def _has_collision_chars(name: str) -> bool:
    """Kafka's Topic.hasCollisionChars: '.' and '_' map to the same metric name."""
    return "." in name or "_" in name


def _collision_key(name: str) -> str:
    """Kafka's Topic.unifyCollisionChars: names with the same key collide."""
    return name.replace(".", "_")


class TopicAdmin:
    """Topic ids (deterministic, so a run replays) and topic creation, deletion and growth.

    ``topic_gone`` is told the name of every topic created or deleted here, so caches keyed by
    topic name (the Metadata answer's) drop what they hold for it."""

    def __init__(self, cluster: ClusterStateMachine, config: ServerConfig,
                 topic_gone: Callable[[str], None]) -> None:
        self.cluster = cluster
        self.config = config
        self._topic_gone = topic_gone
        self._topic_ids: Dict[str, uuid.UUID] = {}
        #: The reverse of ``_topic_ids`` (stale names are checked against it on lookup).
        self._names_by_id: Dict[uuid.UUID, List[str]] = {}
        self._creations = itertools.count()
        #: The configs a CreateTopics request set, by topic name, with the partition list they were
        #: set for: a topic deleted and made again behind this class's back (the cluster's own API)
        #: has a new list, so it does not inherit them.
        self._configs: Dict[str, Tuple[object, Dict[str, str]]] = {}

    # -- topic configs -------------------------------------------------------------------------

    def topic_configs(self, name: str) -> Mapping[str, str]:
        """The configs ``name`` was created with (Kafka's topic overrides); empty for none."""
        held = self._configs.get(name)
        if held is None or held[0] is not self.cluster.topics.get(name):
            return {}
        return held[1]

    def max_message_bytes(self, name: str) -> int:
        """The largest batch a Produce may append to ``name``: its ``max.message.bytes`` override,
        else the broker's ``message.max.bytes`` (Kafka's LogConfig default)."""
        override = self.topic_configs(name).get("max.message.bytes")
        return self.config.max_message_bytes if override is None else int(override)

    # -- topic ids ---------------------------------------------------------------------------

    def topic_id(self, name: str) -> uuid.UUID:
        """The topic's id; deterministic (a name and its creation count), so a run replays."""
        found = self._topic_ids.get(name)
        if found is None:
            found = uuid.uuid5(uuid.NAMESPACE_URL, f"kgroup:{name}:{next(self._creations)}")
            self._topic_ids[name] = found
            self._names_by_id.setdefault(found, []).append(name)
        return found

    def topic_name(self, topic_id: uuid.UUID) -> Optional[str]:
        """The name of the live topic with ``topic_id`` (None for an id no live topic has)."""
        if len(self._topic_ids) < len(self.cluster.topics):
            for name in self.cluster.topics:  # topics created behind the data plane's back get ids
                self.topic_id(name)
        for name in self._names_by_id.get(topic_id, ()):
            if name in self.cluster.topics and self._topic_ids.get(name) == topic_id:
                return name
        return None

    # -- creation ----------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int, replication_factor: Optional[int] = None,
                     assignments: Optional[List[List[int]]] = None, validate_only: bool = False) -> ErrorCode:
        code, _, _ = self._create(name, partitions, replication_factor, assignments, validate_only,
                                  self._names_by_collision_key())
        return code

    def _create(self, name: str, partitions: int, replication_factor: Optional[int],
                assignments: Optional[List[List[int]]], validate_only: bool,
                existing_by_collision_key: Dict[str, str]) -> Tuple[ErrorCode, int, int]:
        """Create (or, validate_only, only check) one topic: (error, partition count, replication
        factor), the figures Kafka's CreatableTopicResult carries, validate_only included
        (ReplicationControlManager.createTopic fills them before it knows whether records are kept)."""
        refused = (E.INVALID_TOPIC_EXCEPTION, -1, -1)
        if not is_valid_topic_name(name):
            return refused
        if name in self.cluster.topics:
            return E.TOPIC_ALREADY_EXISTS, -1, -1
        if _collision_key(name) in existing_by_collision_key:
            return refused  # Topic.hasCollision: would share metric names with the existing topic
        if assignments:
            brokers = set(self.cluster.brokers)
            if any(not a or len(set(a)) != len(a) or not set(a) <= brokers for a in assignments) \
                    or len({len(a) for a in assignments}) != 1:
                return E.INVALID_REPLICA_ASSIGNMENT, -1, -1
            count, rf = len(assignments), len(assignments[0])
        else:
            if partitions < 1:
                return E.INVALID_PARTITIONS, -1, -1
            # None or -1 (CreateTopics v4+, KIP-464): the broker's default replication factor.
            default_rf = min(self.config.default_replication_factor, len(self.cluster.brokers))
            rf = default_rf if replication_factor in (None, -1) else replication_factor
            if rf < 1 or rf > len(self.cluster.brokers):
                return E.INVALID_REPLICATION_FACTOR, -1, -1
            count = partitions
        if validate_only:
            return E.NONE, count, rf
        try:
            self.cluster.create_topic(name, count, rf, assignments)
        except (ClusterError, ConfigError):
            return E.INVALID_REPLICATION_FACTOR, -1, -1
        self._topic_ids.pop(name, None)
        self._topic_gone(name)
        self.topic_id(name)
        created = self.cluster.topics[name]
        return E.NONE, len(created), len(created[0].assigned)

    def _names_by_collision_key(self) -> Dict[str, str]:
        """Existing topic names whose '.' and '_' make them collide with another name (Kafka's
        ReplicationControlManager.topicsWithCollisionChars), by their unified form."""
        return {_collision_key(name): name for name in self.cluster.topics if _has_collision_chars(name)}

    def create_topics(self, request: Any, version: int) -> Any:
        result_cls = CreateTopicsResponse.CreatableTopicResult
        # ControllerApis.createTopics: a name the request gives twice is dropped from it and answered
        # once, INVALID_REQUEST, after the other topics' results.
        name_counts = Counter(t.name for t in request.topics)
        topics = [t for t in request.topics if name_counts[t.name] == 1]
        duplicates = [result_cls(version=version, name=name, error_code=E.INVALID_REQUEST,
                                 error_message="Duplicate topic name.", topic_id=NIL_UUID, num_partitions=-1,
                                 replication_factor=-1, configs=[])
                      for name, count in name_counts.items() if count > 1]
        results = []
        if self._requested_partitions(topics) > MAX_PARTITIONS_PER_REQUEST:
            # Kafka refuses the whole request before looking at any topic (ReplicationControlManager).
            return CreateTopicsResponse(version=version, throttle_time_ms=0, topics=[
                result_cls(version=version, name=t.name, error_code=E.POLICY_VIOLATION,
                           error_message=_TOO_MANY_PARTITIONS, topic_id=NIL_UUID, num_partitions=-1,
                           replication_factor=-1, configs=[])
                for t in topics] + duplicates)
        # The topics as they were before this request: Kafka checks collisions against them only.
        existing_by_collision_key = self._names_by_collision_key()
        for t in topics:
            assignments = [list(a.broker_ids) for a in sorted(t.assignments, key=lambda a: a.partition_index)]
            partitions = t.num_partitions if t.num_partitions > 0 else self.config.default_partitions
            rf = t.replication_factor if t.replication_factor > 0 else None
            message = None
            count, replicas = -1, -1
            # ReplicationControlManager.createTopics: configs are checked after the name and before
            # anything else (kgroup.server.topic_configs).
            config_error = topic_config_error((c.name, c.value) for c in t.configs)
            if config_error is not None and self._creatable(t.name, existing_by_collision_key):
                code, message = E.INVALID_CONFIG, config_error
            elif assignments and (t.num_partitions != -1 or t.replication_factor != -1):
                code = E.INVALID_REQUEST  # Kafka: assignments exclude explicit counts
            elif sorted(a.partition_index for a in t.assignments) != list(range(len(assignments))):
                code = E.INVALID_REPLICA_ASSIGNMENT  # Kafka: "a consecutive 0-based integer sequence"
            elif t.num_partitions == 0 or t.num_partitions < -1:
                code = E.INVALID_PARTITIONS
            elif t.replication_factor == 0 or t.replication_factor < -1:
                code = E.INVALID_REPLICATION_FACTOR
            else:
                code, count, replicas = self._create(t.name, partitions, rf, assignments or None,
                                                     bool(request.validate_only), existing_by_collision_key)
                if code is E.NONE and not request.validate_only and t.configs:
                    # Values were checked above (a null value is INVALID_CONFIG), so each is a str.
                    self._configs[t.name] = (self.cluster.topics[t.name],
                                             {c.name: str(c.value) for c in t.configs})
                colliding = existing_by_collision_key.get(_collision_key(t.name))
                if code is E.INVALID_TOPIC_EXCEPTION and colliding is not None:
                    message = f"Topic '{t.name}' collides with existing topic: {colliding}"
            created_now = code is E.NONE and not request.validate_only
            results.append(result_cls(version=version, name=t.name, error_code=code, error_message=message,
                                      topic_id=self.topic_id(t.name) if created_now else NIL_UUID,
                                      num_partitions=count, replication_factor=replicas, configs=[]))
        return CreateTopicsResponse(version=version, throttle_time_ms=0, topics=results + duplicates)

    def _creatable(self, name: str, existing_by_collision_key: Dict[str, str]) -> bool:
        """A legal name no topic has yet nor collides with (the checks Kafka makes before it looks at
        configs)."""
        legal = bool(_LEGAL_TOPIC_NAME.match(name)) and name not in (".", "..")
        return (legal and name not in self.cluster.topics
                and _collision_key(name) not in existing_by_collision_key)

    def _requested_partitions(self, topics: Any) -> int:
        """Partitions a CreateTopics request asks for in all (Kafka's validateTotalNumberOfPartitions)."""
        total = 0
        for t in topics:
            if t.assignments:
                total += len(t.assignments)
            elif t.num_partitions == -1:
                total += self.config.default_partitions
            elif t.num_partitions > 0:
                total += t.num_partitions
        return total

    # -- deletion and growth -------------------------------------------------------------------

    def delete_topics(self, request: Any, version: int) -> Any:
        result_cls = DeleteTopicsResponse.DeletableTopicResult
        if version >= 6:
            wanted = [(t.name, t.topic_id) for t in request.topics]
        else:
            wanted = [(name, None) for name in request.topic_names]
        results = []
        for name, topic_id in wanted:
            if name is None and topic_id not in (None, NIL_UUID):
                name = self.topic_name(topic_id)
                if name is None:
                    results.append(result_cls(version=version, name=None, topic_id=topic_id,
                                              error_code=E.UNKNOWN_TOPIC_ID))
                    continue
            if name == GROUP_METADATA_TOPIC:
                code = E.INVALID_TOPIC_EXCEPTION  # Kafka refuses to delete an internal topic
            elif name not in self.cluster.topics:
                code = E.UNKNOWN_TOPIC_OR_PARTITION
            else:
                topic_id = self.topic_id(name)
                self.cluster.delete_topic(name)
                self._topic_ids.pop(name, None)
                self._configs.pop(name, None)
                self._topic_gone(name)
                code = E.NONE
            results.append(result_cls(version=version, name=name, topic_id=topic_id or NIL_UUID,
                                      error_code=code))
        return DeleteTopicsResponse(version=version, throttle_time_ms=0, responses=results)

    def create_partitions(self, request: Any, version: int) -> Any:
        result_cls = CreatePartitionsResponse.CreatePartitionsTopicResult
        results = []
        added = 0
        for t in request.topics:
            current = self.cluster.topics.get(t.name)
            message = None
            if current is None:
                code = E.UNKNOWN_TOPIC_OR_PARTITION
            elif t.count <= len(current):
                code = E.INVALID_PARTITIONS
                message = f"topic has {len(current)} partitions; the new count must be larger"
            elif added + t.count - len(current) > MAX_PARTITIONS_PER_REQUEST:
                code = E.POLICY_VIOLATION
                message = _TOO_MANY_PARTITIONS
            elif t.assignments is not None:
                code = E.INVALID_REPLICA_ASSIGNMENT
                message = "kgroup's server places new partitions itself; leave assignments null"
            else:
                code = E.NONE
                added += t.count - len(current)
                if not request.validate_only:
                    self.cluster.add_partitions(t.name, t.count - len(current))
            results.append(result_cls(version=version, name=t.name, error_code=code, error_message=message))
        return CreatePartitionsResponse(version=version, throttle_time_ms=0, results=results)
