"""kgroup's errors as kafka-python's: what the drop-in raises toward the app.

Application code written for kafka-python catches ``kafka.errors`` classes
(``except kafka.errors.CommitFailedError``, ``except kafka.errors.KafkaError``,
``if exc.retriable``); code written for kgroup catches :mod:`kgroup.errors`.
Every error the drop-in hands to the app (raised, or passed to a commit
future or callback) is therefore an instance of a *dual* class defined here,
which derives from both: the kgroup class of the original error and the
kafka-python class stock kafka-python 3.0's coordinator raises in the same
situation.  :func:`to_kafka_error` builds it from a kgroup error, keeping the
message (``args``), ``error_code`` and every other attribute, ``__cause__``
and the traceback.

``str()`` of a dual error reads like kafka-python's (``"CommitFailedError:
..."``, ``"[Error 82] FencedInstanceIdError: ..."``): each dual class bears
the kafka-python class's name.  Like every ``kafka.errors.KafkaError``, a dual
error compares by class and ``args`` and is therefore unhashable.

The mapping (see ``docs/kafka_python.md``, "Errors"):

=====================================  ==============================================================
kgroup error                           kafka-python class (also)
=====================================  ==============================================================
CommitFailedError                      CommitFailedError; RebalanceInProgressError when the commit
                                       failed locally (or got REBALANCE_IN_PROGRESS) while the member
                                       is rejoining, as stock raises then
FencedInstanceIdError                  FencedInstanceIdError
RetriableCommitFailedError             the code's class (NotCoordinatorError,
                                       CoordinatorNotAvailableError, CoordinatorLoadInProgressError,
                                       RequestTimedOutError, UnstableOffsetCommitError), all
                                       retriable; KafkaTimeoutError from ``commit()``, which retried
                                       until its timeout (stock never surfaces those there either)
GroupMemberError                       the code's class (``kafka.errors.for_code``), else KafkaError
                                       (so KIP-848's UnsupportedAssignorError, GroupMaxSizeReachedError
                                       and UnreleasedInstanceIdError are kafka-python's classes too)
MemberClosedError                      IllegalStateError; plus the class of the fatal error when the
                                       member failed (e.g. FencedInstanceIdError)
ConfigError, UnknownAssignorError      KafkaConfigurationError
InvalidProtocolMetadata                KafkaProtocolError
IllegalStateTransition, ProtocolError  IllegalStateError
ClusterError                           the code's class, else KafkaError
TransportError                         KafkaConnectionError
ProducerFencedError                    ProducerFencedError
TransactionAbortableError              TransactionAbortableError
TransactionStateError                  IllegalStateError
ProducerTimeoutError                   KafkaTimeoutError
TransactionError                       the code's class, else KafkaError
any other KGroupError                  KafkaError
=====================================  ==============================================================
"""
from __future__ import annotations

import functools
import threading
from typing import Optional

import kafka.errors as Errors

import kgroup.errors as kg
from kgroup.core.error_codes import ErrorCode
from kgroup.io.transport import TransportError as _KgTransportError

__all__ = [
    "ClusterError",
    "CommitFailedError",
    "CommitTimeoutError",
    "ConfigError",
    "FencedInstanceIdError",
    "GroupMemberError",
    "IllegalStateTransition",
    "InvalidProtocolMetadata",
    "KGroupError",
    "MemberClosedError",
    "ProducerFencedError",
    "ProducerTimeoutError",
    "ProtocolError",
    "RebalanceInProgressError",
    "RetriableCommitFailedError",
    "TransactionAbortableError",
    "TransactionError",
    "TransactionStateError",
    "TransportError",
    "UnknownAssignorError",
    "to_kafka_error",
]


# -- dual classes: (kgroup class, kafka-python class) ---------------------------
# Each is named after its kafka-python class so str() reads like kafka-python's.


class KGroupError(kg.KGroupError, Errors.KafkaError):
    """Fallback for a kgroup error with no more specific kafka-python class."""


class CommitFailedError(kg.CommitFailedError, Errors.CommitFailedError):
    """The commit's generation is gone (kicked out, rebalanced): the partitions may have moved."""


class RebalanceInProgressError(kg.CommitFailedError, Errors.RebalanceInProgressError):
    """A commit refused because the member is rejoining; poll() to finish the rebalance, then retry.

    Stock kafka-python raises ``RebalanceInProgressError`` (not
    ``CommitFailedError``) for a commit made while it rejoins.
    """


class FencedInstanceIdError(kg.FencedInstanceIdError, Errors.FencedInstanceIdError):
    """Another consumer took over this ``group_instance_id``; this one must stop."""


class RetriableCommitFailedError(kg.RetriableCommitFailedError, Errors.RetriableError):
    """A commit failed for a transient reason (usually refined by the code's class)."""


class CommitTimeoutError(kg.RetriableCommitFailedError, Errors.KafkaTimeoutError):
    """``commit()`` retried transient failures until its timeout, as stock does."""


# Read like kafka-python's in str() / repr(); importable as CommitTimeoutError.
CommitTimeoutError.__name__ = "KafkaTimeoutError"


class GroupMemberError(kg.GroupMemberError, Errors.KafkaError):
    """The coordinator refused the member for a reason it cannot recover from."""


class MemberClosedError(kg.MemberClosedError, Errors.IllegalStateError):
    """The member is closed or failed: this call cannot be served."""


class ConfigError(kg.ConfigError, Errors.KafkaConfigurationError):
    """A configuration value is invalid."""


class UnknownAssignorError(kg.UnknownAssignorError, Errors.KafkaConfigurationError):
    """No assignor has the requested name."""


class InvalidProtocolMetadata(kg.InvalidProtocolMetadata, Errors.KafkaProtocolError):
    """A peer's subscription or assignment bytes do not decode."""


class IllegalStateTransition(kg.IllegalStateTransition, Errors.IllegalStateError):
    """A state machine refused a transition (a kgroup bug)."""


class ProtocolError(kg.ProtocolError, Errors.IllegalStateError):
    """A request is not valid in the state it arrived in."""


class ClusterError(kg.ClusterError, Errors.KafkaError):
    """The in-memory cluster refused an operation."""


class TransportError(_KgTransportError, Errors.KafkaConnectionError):
    """A request could not be carried (the network client is closed or broke)."""


class TransactionError(kg.TransactionError, Errors.KafkaError):
    """A transactional producer's call failed (refined by the error's code when it has one)."""


class ProducerFencedError(kg.ProducerFencedError, Errors.ProducerFencedError):
    """Another producer with the same ``transactional.id`` took over: this one can only close."""


class TransactionAbortableError(kg.TransactionAbortableError, Errors.TransactionAbortableError):
    """The open transaction cannot commit: abort it and start again."""


class TransactionStateError(kg.TransactionStateError, Errors.IllegalStateError):
    """The call is not legal in the producer's transaction state."""


class ProducerTimeoutError(kg.ProducerTimeoutError, Errors.KafkaTimeoutError):
    """A blocking producer call did not finish within ``max_block_ms``."""


ProducerTimeoutError.__name__ = ProducerTimeoutError.__qualname__ = "KafkaTimeoutError"


#: Most specific kgroup class first: the first entry the error is an instance of wins.
_DUALS: tuple[tuple[type, type], ...] = (
    (kg.FencedInstanceIdError, FencedInstanceIdError),
    (kg.CommitFailedError, CommitFailedError),
    (kg.RetriableCommitFailedError, RetriableCommitFailedError),
    (kg.GroupMemberError, GroupMemberError),
    (kg.MemberClosedError, MemberClosedError),
    (kg.ConfigError, ConfigError),
    (kg.UnknownAssignorError, UnknownAssignorError),
    (kg.InvalidProtocolMetadata, InvalidProtocolMetadata),
    (kg.IllegalStateTransition, IllegalStateTransition),
    (kg.ProtocolError, ProtocolError),
    (kg.ClusterError, ClusterError),
    (_KgTransportError, TransportError),
    (kg.ProducerFencedError, ProducerFencedError),
    (kg.TransactionAbortableError, TransactionAbortableError),
    (kg.TransactionStateError, TransactionStateError),
    (kg.ProducerTimeoutError, ProducerTimeoutError),
    (kg.TransactionError, TransactionError),
    (kg.KGroupError, KGroupError),
)

#: Dual classes whose kafka-python class is refined by the error's ``error_code``.
_BY_CODE = (RetriableCommitFailedError, GroupMemberError, ClusterError, TransactionError)

_lock = threading.Lock()
_combined: dict[tuple[type, type], type] = {}


@functools.lru_cache(maxsize=None)
def kafka_class_for_code(code: int) -> type:
    """kafka-python's class for a Kafka error code (one class per unknown code, cached)."""
    return Errors.for_code(int(code))


def _combine(base: type, extra: type, name: Optional[str] = None) -> type:
    """A class deriving from ``base`` and ``extra``, named after ``extra`` (cached)."""
    if issubclass(base, extra):
        return base
    key = (base, extra)
    with _lock:
        cls = _combined.get(key)
        if cls is None:
            name = name or extra.__name__
            cls = type(name, (base, extra), {
                "__module__": __name__,
                "__qualname__": name,
                "__doc__": extra.__doc__ or base.__doc__,
            })
            _combined[key] = cls
    return cls


def _code_of(error: BaseException) -> Optional[int]:
    """The Kafka error code the error carries (an ``ErrorCode`` or a plain int), if any."""
    code = getattr(error, "error_code", None)
    try:
        return None if code is None else int(code)
    except (TypeError, ValueError):
        return None


def kafka_class(error: BaseException, *, rebalancing: bool = False, timed_out: bool = False,
                fatal: Optional[BaseException] = None) -> type:
    """The dual class :func:`to_kafka_error` gives ``error`` (see there for the flags)."""
    dual = next(d for k, d in _DUALS if isinstance(error, k))
    code = _code_of(error)
    if dual is CommitFailedError and rebalancing and code in (None, ErrorCode.REBALANCE_IN_PROGRESS):
        dual = RebalanceInProgressError
    elif dual is RetriableCommitFailedError and timed_out:
        dual = CommitTimeoutError
    elif dual in _BY_CODE and code is not None and code != ErrorCode.NONE:
        dual = _combine(dual, kafka_class_for_code(code))
    elif (dual is MemberClosedError and isinstance(fatal, kg.KGroupError)
          and not isinstance(fatal, kg.MemberClosedError)):
        fatal_kafka = kafka_class(fatal)
        # The most specific kafka-python class of the fatal error, e.g. FencedInstanceIdError.
        extra = next(c for c in fatal_kafka.__mro__ if issubclass(c, Errors.KafkaError)
                     and c.__module__ == Errors.__name__)
        dual = _combine(dual, extra)
    if not issubclass(dual, type(error)):
        # A subclass of a mapped kgroup class (e.g. a test helper's error):
        # keep its own class among the bases too.
        name = type(error).__name__ if dual is KGroupError else dual.__name__
        dual = _combine(type(error), dual, name)
    return dual


def to_kafka_error(error: BaseException, *, rebalancing: bool = False, timed_out: bool = False,
                   fatal: Optional[BaseException] = None) -> BaseException:
    """``error`` as an instance of its dual class (kgroup's class and kafka-python's).

    Anything that is not a :class:`kgroup.errors.KGroupError`, or is already a
    ``kafka.errors.KafkaError`` (a dual error, or kafka-python's own), is
    returned unchanged.  The copy keeps ``args`` (the message), every
    attribute (``error_code``, ...), ``__cause__``, ``__context__`` and the
    traceback.

    ``rebalancing``: the member is rejoining (a commit refused for lack of a
    generation is then ``RebalanceInProgressError``, as in stock).
    ``timed_out``: the error ends a blocking call that retried transient
    failures until its timeout (``KafkaTimeoutError``, as in stock).
    ``fatal``: the error that made the member fail, for ``MemberClosedError``.
    """
    if not isinstance(error, kg.KGroupError) or isinstance(error, Errors.KafkaError):
        return error
    cls = kafka_class(error, rebalancing=rebalancing, timed_out=timed_out, fatal=fatal)
    dual = cls.__new__(cls, *error.args)
    dual.args = error.args
    dual.__dict__.update(error.__dict__)
    dual.__cause__ = error.__cause__
    dual.__context__ = error.__context__
    dual.__suppress_context__ = error.__suppress_context__
    dual.__traceback__ = error.__traceback__
    return dual
