"""The member contract: what an adapter may call on either group protocol's member.

The classic :class:`~kgroup.core.member.classic.member.GroupMember` and the KIP-848
:class:`~kgroup.core.member.consumer.member.ConsumerProtocolMember` both satisfy
:class:`MemberContract`, so the runner, the heartbeat thread, the drop-in, the
in-memory fixture and the simulator drive either one through these names alone,
never by asking which class it is.  Kafka's consumer has the same split: one
``Consumer`` API over ``ClassicKafkaConsumer`` and ``AsyncKafkaConsumer``.

Time follows the library's timer convention (aioquic's): ``get_timer()`` is the
absolute instant at which ``outbound(now_ms)`` may have something new to do (None:
nothing until an input arrives).  ``outbound(now_ms)`` is the members' only
"do what is due" verb: firing a timer (a heartbeat, a retry, a session or poll
timeout) always ends in requests to send or none, so a separate ``handle_timer``
would be ``outbound`` under a second name.
"""
from __future__ import annotations

import enum
from typing import Mapping, Optional, Protocol, Sequence, Union, runtime_checkable

from kgroup.core.member.shared.events import Generation
from kgroup.core.member.shared.requests import Outbound
from kgroup.core.messages import OffsetAndMetadata
from kgroup.errors import ConfigError, KGroupError
from kgroup.values import TopicPartition

__all__ = ["MEMBER_CONTRACT_NAMES", "MemberContract", "MemberSettings", "check_group_id"]


class MemberSettings(Protocol):
    """The settings both members' configs have (adapters and the shared committer read them)."""

    @property
    def group_id(self) -> str: ...

    @property
    def group_instance_id(self) -> Optional[str]: ...

    @property
    def client_id(self) -> str: ...

    @property
    def enable_auto_commit(self) -> bool: ...

    @property
    def auto_commit_interval_ms(self) -> int: ...

    @property
    def retry_backoff_ms(self) -> int: ...


def check_group_id(group_id: object) -> None:
    """Both configs refuse a member without a group (kgroup's members are always group-managed)."""
    if not isinstance(group_id, str) or not group_id:
        raise ConfigError(f"group_id must be a non-empty string for group management, got {group_id!r}")


@runtime_checkable
class MemberContract(Protocol):
    """One consumer's membership of one group, whatever its group protocol (see the module doc)."""

    @property
    def config(self) -> MemberSettings: ...

    # -- what an adapter reads -----------------------------------------------------------

    @property
    def state(self) -> enum.Enum: ...

    @property
    def generation(self) -> Generation: ...

    @property
    def member_id(self) -> str: ...

    @property
    def assignment(self) -> frozenset: ...

    @property
    def subscription(self) -> frozenset: ...

    @property
    def coordinator_id(self) -> Optional[int]: ...

    @property
    def is_leader(self) -> bool: ...

    @property
    def rejoin_needed(self) -> bool: ...

    @property
    def settled(self) -> bool: ...

    @property
    def failed(self) -> bool: ...

    @property
    def closed(self) -> bool: ...

    @property
    def last_error(self) -> Optional[KGroupError]: ...

    def metadata_topics(self) -> frozenset: ...

    def has_in_flight(self) -> bool: ...

    def in_flight_tokens(self) -> frozenset: ...

    def has_events(self) -> bool: ...

    # -- the application's side (the polling thread) ---------------------------------

    def subscribe(self, topics: Sequence[str], now_ms: int) -> None: ...

    @property
    def subscription_pattern(self) -> Optional[str]: ...

    def subscribe_pattern(self, pattern: str, now_ms: int) -> None:
        """Subscribe to the topics matching ``pattern``: matched by the classic member against the
        metadata it is given, sent to the coordinator by the KIP-848 member (SubscribedTopicRegex)."""

    def unsubscribe(self, now_ms: int) -> None: ...

    def update_metadata(self, partitions_per_topic: Mapping[str, int], now_ms: int) -> None: ...

    def request_rejoin(self, reason: str) -> None: ...

    def on_app_poll(self, now_ms: int, positions: Optional[Mapping] = None) -> None: ...

    def commit_offsets(self, offsets: Mapping[TopicPartition, Union[int, OffsetAndMetadata]], now_ms: int,
                       deadline_ms: Optional[int] = None, generation: Optional[Generation] = None) -> int: ...

    def fetch_committed(self, partitions: Sequence[TopicPartition], now_ms: int) -> int: ...

    def close(self, now_ms: int, leave_group: Optional[bool] = None,
              positions: Optional[Mapping] = None) -> None: ...

    def take_events(self) -> list: ...

    # -- the protocol's side (any thread holding the adapter's lock) -----------------

    def outbound(self, now_ms: int) -> list[Outbound]: ...

    def on_response(self, token: int, response: object, now_ms: int) -> None: ...

    def on_transport_error(self, token: int, now_ms: int) -> None: ...

    def get_timer(self) -> Optional[int]: ...


#: The public names of the contract (a test checks both members define each of them).
MEMBER_CONTRACT_NAMES = frozenset(
    name for name in vars(MemberContract) if not name.startswith("_") and name not in ("mro",))
