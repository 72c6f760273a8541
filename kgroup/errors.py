"""Typed errors raised by kgroup.

Every error a user can see derives from :class:`KGroupError`, so an
application can catch the library's failures in one place.  Errors that
stand for bad input also derive from the matching builtin (``ValueError``,
``KeyError``) so generic handlers keep working.
"""
from __future__ import annotations


class KGroupError(Exception):
    """Base class of every error raised by kgroup."""


class ConfigError(KGroupError, ValueError):
    """A configuration value is invalid or contradicts another one.

    Raised at construction time, never later.
    """


class InvalidProtocolMetadata(KGroupError, ValueError):
    """Bytes received from a peer are not a valid protocol blob.

    ``what`` names the structure being decoded (e.g. ``"subscription"``).
    """

    def __init__(self, what: str, reason: str) -> None:
        super().__init__(f"invalid {what}: {reason}")
        self.what = what
        self.reason = reason


class UnknownAssignorError(KGroupError, KeyError):
    """No assignor is registered under the requested name."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = sorted(known)
        super().__init__(name)

    def __str__(self) -> str:
        return f"unknown assignor {self.name!r}; known assignors: {', '.join(self.known)}"


class IllegalStateTransition(KGroupError):
    """A state machine was asked to move between two states its table forbids."""

    def __init__(self, machine: str, from_state: object, to_state: object) -> None:
        self.machine = machine
        self.from_state = from_state
        self.to_state = to_state
        super().__init__(f"{machine}: illegal transition from {state_display_name(from_state)}"
                         f" to {state_display_name(to_state)}")


class ProtocolError(KGroupError):
    """A request is not valid in the state it arrived in.

    Names both the state and the request so the cause is visible in logs.
    """

    def __init__(self, state: object, request: object, reason: str) -> None:
        self.state = state
        self.request = request
        self.reason = reason
        super().__init__(f"{type(request).__name__} in state {state_display_name(state)}: {reason}")


def state_display_name(state: object) -> str:
    """How errors and traces name a state: its ``display_name`` where the enum has one (Kafka's own
    name, e.g. GroupState's "PreparingRebalance"), else the enum member's name."""
    return getattr(state, "display_name", None) or getattr(state, "name", None) or str(state)


class GroupMemberError(KGroupError):
    """The coordinator answered a member with an error it cannot recover from.

    ``error_code`` is Kafka's code (a :class:`kgroup.core.error_codes.ErrorCode`).
    """

    def __init__(self, message: str, error_code: object = None) -> None:
        super().__init__(message)
        self.error_code = error_code


class FencedInstanceIdError(GroupMemberError):
    """Another consumer with the same ``group_instance_id`` took over: this one must stop."""


class CommitFailedError(GroupMemberError):
    """The commit cannot succeed: the member's generation is gone (rebalanced, expired)."""


class RetriableCommitFailedError(GroupMemberError):
    """The commit failed for a transient reason (coordinator moved or loading); retry it."""


class UnsupportedAssignorError(GroupMemberError):
    """The group coordinator has no server-side assignor of the name ``group_remote_assignor`` gives
    (ConsumerGroupHeartbeat's UNSUPPORTED_ASSIGNOR, KIP-848): fatal for the member."""


class GroupMaxSizeReachedError(GroupMemberError):
    """The group already has ``group.consumer.max.size`` members (GROUP_MAX_SIZE_REACHED): fatal."""


class UnreleasedInstanceIdError(GroupMemberError):
    """A static member's ``group_instance_id`` is still held by a member that has not left
    (UNRELEASED_INSTANCE_ID, KIP-848): fatal, as in Kafka's consumer."""


class MemberClosedError(KGroupError):
    """The group member was closed (or is fatal) and cannot do this any more."""


class ClusterError(KGroupError):
    """The in-memory cluster refused an operation; ``error_code`` is Kafka's code when one applies."""

    def __init__(self, message: str, error_code: object = None) -> None:
        super().__init__(message)
        self.error_code = error_code


class TransactionError(KGroupError):
    """A transactional producer's call failed; ``error_code`` is Kafka's code when one applies."""

    def __init__(self, message: str, error_code: object = None) -> None:
        super().__init__(message)
        self.error_code = error_code


class ProducerFencedError(TransactionError):
    """Another producer with the same ``transactional.id`` (or the coordinator, aborting a transaction
    past its timeout) bumped the producer epoch: this producer can only be closed (Kafka's
    ``ProducerFencedException``, PRODUCER_FENCED / INVALID_PRODUCER_EPOCH from the coordinator)."""


class TransactionAbortableError(TransactionError):
    """The open transaction cannot commit; ``abort_transaction()`` and start again (Kafka's abortable
    errors, e.g. ``InvalidProducerEpochException`` from a produce, KIP-588)."""


class TransactionStateError(TransactionError):
    """The call is not legal in the producer's transaction state (Kafka's ``IllegalStateException``:
    ``send`` outside a transaction, ``begin_transaction`` twice, ...)."""


class ProducerTimeoutError(TransactionError):
    """A blocking call did not finish within ``max_block_ms`` (Kafka's ``TimeoutException``)."""
