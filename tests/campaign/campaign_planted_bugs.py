"""Deliberately broken members for showing that each campaign check can fail.

Each context manager reinstates, for its duration, one bug that issue 9's
fault campaign found in kgroup's member (the fixes are in
``kgroup/core/member``); the campaign must report it.
"""
from __future__ import annotations

import contextlib

import attrs

from kgroup.core.member.shared import commits
from kgroup.core.member.classic.member import GroupMember
from kgroup.values import Subscription


@contextlib.contextmanager
def eager_members_claim_their_last_assignment():
    """Issue 9 item 1: an eager member reports its last assignment as owned partitions."""
    original = GroupMember._subscription_value

    def claims_last_assignment(self, assignor) -> Subscription:
        value = original(self, assignor)
        if value.owned_partitions or not self._last_assignment[0]:
            return value
        return attrs.evolve(value, owned_partitions=sorted(self._last_assignment[0]))

    GroupMember._subscription_value = claims_last_assignment
    try:
        yield
    finally:
        GroupMember._subscription_value = original


@contextlib.contextmanager
def retries_unordered():
    """Issue 9 item 2: a retry is re-sent with its original offsets, unordered against newer commits."""
    absorb, due = commits.CommitBook._absorb, commits.CommitBook.due

    def never_absorb(self, newer, older):
        return None

    def due_ignoring_in_flight(self, now_ms):
        return [c for c in self._waiting() if c.not_before_ms <= now_ms]

    commits.CommitBook._absorb = never_absorb
    commits.CommitBook.due = due_ignoring_in_flight
    try:
        yield
    finally:
        commits.CommitBook._absorb = absorb
        commits.CommitBook.due = due
