"""Typed errors of kgroup_spark.

Each derives from kgroup's :class:`~kgroup.errors.KGroupError` so an
application catches the library's failures in one place; option errors are
also ``ValueError`` and surface when the query starts, not after a hang.
"""

from __future__ import annotations

from kgroup.errors import ConfigError, KGroupError


class SourceOptionError(ConfigError):
    """A ``kgroup`` data source option is missing, unknown or malformed."""


class CoordinatorUnreachableError(KGroupError, ConnectionError):
    """No broker answered at the coordinator's bootstrap servers within the timeout."""


class OwnershipFencedError(KGroupError):
    """A read task lost the right to acknowledge: its member was fenced or its generation is gone.

    ``token`` names the attempt (group, slot, member id, generation, batch,
    attempt) whose commit the coordinator refused; nothing of it reached the
    source.
    """

    def __init__(self, token: "object", reason: str) -> None:
        super().__init__(f"{token} fenced: {reason}")
        self.token = token
        self.reason = reason


class BatchNotCoveredError(KGroupError, TimeoutError):
    """Some partitions of a batch were not read and committed by any reader in time."""
