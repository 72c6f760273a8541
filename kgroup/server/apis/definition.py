"""What one served Kafka API declares, and the answers a broker-side handler may give.

Each module of :mod:`kgroup.server.apis` defines one :class:`ServedApi` (franz-go kfake's layout:
one file per API key): its key, the versions served, kafka-python's request and response classes,
its error answer (Kafka's ``AbstractRequest.getErrorResponse``) and either

- a broker-side ``handle(data, node_id, request, version)`` that reads or changes the data plane and
  returns the response struct, or one of the waits below; or
- a :class:`GroupCodec` for a group API the coordinators answer: request struct -> core requests,
  core answers -> response struct.  Its error answer follows from the codec and the core's error
  table (:mod:`kgroup.core.error_responses`), so a broker refusing a group request answers exactly
  what a coordinator refusing it would.
"""
from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Callable, Generator, List, Optional, Protocol, Tuple

import attrs
from kafka.protocol.api_key import ApiKey

from kgroup.core import error_responses
from kgroup.core.error_codes import ErrorCode

if TYPE_CHECKING:
    from kgroup.server.data_plane import DataPlane, ProduceWait

__all__ = [
    "AwaitAppends", "AwaitData", "GroupCodec", "InSlices", "NO_RESPONSE", "NO_TOPIC_IDS", "ServedApi",
    "TopicIds", "broker_api", "group_api",
]


class TopicIds(Protocol):
    """Topic name <-> topic id, and which partitions exist, as the cluster knows them."""

    def topic_id(self, name: str) -> uuid.UUID: ...

    def topic_name(self, topic_id: uuid.UUID) -> Optional[str]: ...

    def has_partition(self, topic: str, partition: int) -> bool: ...


class _NoTopicIds:
    """For error answers: every id is unknown, and every partition a request names is answered
    (with the error) as it stands."""

    def topic_id(self, name: str) -> uuid.UUID:
        return uuid.UUID(int=0)

    def topic_name(self, topic_id: uuid.UUID) -> Optional[str]:
        return None

    def has_partition(self, topic: str, partition: int) -> bool:
        return True


NO_TOPIC_IDS: TopicIds = _NoTopicIds()


# -- what a broker-side handler answers besides a response struct ---------------------------------

@attrs.frozen
class AwaitAppends:
    """Produce (acks=1 or all): ``response`` is sent once every wait resolved (each patches its
    partition's result) or ``timeout_ms`` passed (REQUEST_TIMED_OUT for what is still waiting)."""

    response: Any
    waits: List["ProduceWait"]
    timeout_ms: int


@attrs.frozen
class AwaitData:
    """Fetch: ``read()`` (response, bytes read, whether a partition erred) is answered once it erred,
    holds ``min_bytes`` or ``max_wait_ms`` passed; it is re-read only when ``state()`` changed."""

    max_wait_ms: int
    min_bytes: int
    read: Callable[[], Tuple[Any, int, bool]]
    state: Callable[[], Any]


@attrs.frozen
class InSlices:
    """An answer computed a slice at a time (each ``next`` a few milliseconds), other clients served in
    between; the generator's return value is the response."""

    steps: Generator[None, None, Any]


class _NoResponse:
    """Produce with acks=0: Kafka sends nothing back; the connection reads its next request."""

    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE = _NoResponse()

#: A broker-side handler: (data plane, broker the request reached, request struct, version) -> the
#: response struct, or AwaitAppends / AwaitData / InSlices / NO_RESPONSE.
Handler = Callable[["DataPlane", int, Any, int], Any]
#: (request struct, version, error code) -> the response struct answering every part with the code.
ErrorAnswer = Callable[[Any, int, int], Any]


@attrs.frozen
class GroupCodec:
    """A group API between kafka-python structs and the core's messages (broker side; the client's
    mirror image is :mod:`kgroup.io.kafka_python.convert`).  Version-dependent layouts are settled
    here, so the coordinator sees one shape per API."""

    #: (request struct, version, topics) -> the core requests it stands for: several for batched
    #: versions, none when the broker answers alone (an OffsetCommit of partitions that do not exist).
    to_core: Callable[[Any, int, TopicIds], List[object]]
    #: (core answers, version, request struct, topics) -> the response struct.
    to_struct: Callable[[List[Any], int, Any, TopicIds], Any]

    def error_answer(self, request: Any, version: int, code: int) -> Any:
        answers = [error_responses.for_request(core, ErrorCode(code))
                   for core in self.to_core(request, version, NO_TOPIC_IDS)]
        return self.to_struct(answers, version, request, NO_TOPIC_IDS)


@attrs.frozen
class ServedApi:
    key: ApiKey
    #: (oldest, newest) version served: from the oldest Kafka 4 still serves to the newest whose
    #: semantics kgroup implements.
    versions: Tuple[int, int]
    request_class: Any
    response_class: Any
    error_answer: ErrorAnswer
    handle: Optional[Handler] = None
    group: Optional[GroupCodec] = None

    def __attrs_post_init__(self) -> None:
        if (self.handle is None) == (self.group is None):
            raise ValueError(f"{self.key.name}: a served API has a broker handler or a group codec, not both")
        low, high = self.versions
        if not 0 <= low <= high <= self.request_class.max_version:
            raise ValueError(f"{self.key.name}: versions {self.versions} beyond the request class's "
                             f"v0-v{self.request_class.max_version}")

    def supports(self, version: int) -> bool:
        low, high = self.versions
        return low <= version <= high


def broker_api(key: ApiKey, versions: Tuple[int, int], request_class: Any, response_class: Any,
               handle: Handler, error_answer: ErrorAnswer) -> ServedApi:
    """An API the broker answers itself (data plane, topic admin, cluster metadata)."""
    return ServedApi(key, versions, request_class, response_class, error_answer, handle=handle)


def group_api(key: ApiKey, versions: Tuple[int, int], request_class: Any, response_class: Any,
              to_core: Callable[[Any, int, TopicIds], List[object]],
              to_struct: Callable[[List[Any], int, Any, TopicIds], Any]) -> ServedApi:
    """An API the group coordinators answer, through its codec."""
    codec = GroupCodec(to_core, to_struct)
    return ServedApi(key, versions, request_class, response_class, codec.error_answer, group=codec)
