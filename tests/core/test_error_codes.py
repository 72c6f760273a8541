"""kgroup has one error vocabulary, ``ErrorCode``, numbered and named as Kafka's ``Errors`` enum."""
from __future__ import annotations

import pathlib

import kafka.errors

from kgroup.core.error_codes import ErrorCode

# kafka-python names its error classes differently from Kafka's enum constants; these are the
# classes of the codes whose names differ, to check the numbers against a second source.
_KAFKA_PYTHON_CLASS = {
    ErrorCode.CORRUPT_MESSAGE: kafka.errors.CorruptRecordError,
    ErrorCode.LEADER_NOT_AVAILABLE: kafka.errors.LeaderNotAvailableError,
    ErrorCode.MESSAGE_TOO_LARGE: kafka.errors.MessageSizeTooLargeError,
    ErrorCode.INVALID_REQUIRED_ACKS: kafka.errors.InvalidRequiredAcksError,
    ErrorCode.INVALID_TIMESTAMP: kafka.errors.InvalidTimestampError,
    ErrorCode.INVALID_REPLICA_ASSIGNMENT: kafka.errors.InvalidReplicationAssignmentError,
    ErrorCode.INVALID_CONFIG: kafka.errors.InvalidConfigurationError,
    ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT: kafka.errors.UnsupportedForMessageFormatError,
    ErrorCode.POLICY_VIOLATION: kafka.errors.PolicyViolationError,
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER: kafka.errors.OutOfOrderSequenceNumberError,
    ErrorCode.INVALID_PRODUCER_EPOCH: kafka.errors.InvalidProducerEpochError,
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: kafka.errors.TransactionalIdAuthorizationFailedError,
    ErrorCode.UNSUPPORTED_COMPRESSION_TYPE: kafka.errors.UnsupportedCompressionTypeError,
    ErrorCode.INVALID_RECORD: kafka.errors.InvalidRecordError,
    ErrorCode.UNKNOWN_TOPIC_ID: kafka.errors.UnknownTopicIdError,
    ErrorCode.MISMATCHED_ENDPOINT_TYPE: kafka.errors.MismatchedEndpointTypeError,
    ErrorCode.UNSUPPORTED_ENDPOINT_TYPE: kafka.errors.UnsupportedEndpointTypeError,
}


def test_the_data_plane_and_admin_codes_are_kafkas_numbers():
    for code, kafka_python_class in _KAFKA_PYTHON_CLASS.items():
        assert kafka.errors.for_code(int(code)) is kafka_python_class, code.name


def test_there_is_one_error_enum_in_the_library():
    """Issue 25 point 6: the server's second enum (WireError) repeated 16 of its codes; one is left."""
    root = pathlib.Path(__file__).resolve().parents[2]
    enums = [path.relative_to(root).as_posix()
             for package in ("kgroup", "kgroup_spark") for path in (root / package).rglob("*.py")
             if "Error(enum.IntEnum)" in path.read_text() or "ErrorCode(enum.IntEnum)" in path.read_text()]
    assert enums == ["kgroup/core/error_codes.py"]
