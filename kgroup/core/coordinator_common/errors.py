"""The error both group types raise when their bookkeeping would break."""
from __future__ import annotations

from kgroup.errors import KGroupError


class GroupInvariantViolation(KGroupError):
    """A change would break (or has broken) one of a group's bookkeeping invariants.

    Kafka raises IllegalStateException from ClassicGroup in the same places; here it is a
    typed error naming the group and the violated rule.
    """

    def __init__(self, group_id: str, violation: str) -> None:
        super().__init__(f"group {group_id!r}: {violation}")
        self.group_id = group_id
        self.violation = violation
