"""Kafka AbstractStickyAssignorTest rack-aware scenarios (testRackAwareAssignmentWith*Subscription).

Expected assignments are Java's, verbatim, unless marked ``exact=False``
(kgroup's general path balances with other moves than Java's; the checks
are then: same partition count per consumer, valid, balanced, no more rack
misalignment than Java's).  Java's ``preferRackAwareLogic`` switch (force
the rack-aware code path when every partition is on every rack) has no
kgroup counterpart: those cases expect the non-rack-aware result, which is
what kgroup gives.
"""
from __future__ import annotations

from functools import partial

import pytest

from assignors_kafka_kit import null_racks, racks, verify_rack_assignment

TOPICS = {"t1": 6, "t2": 7, "t3": 2}
ALL = ["t1", "t2", "t3"]
OWNED = ["t1-0, t1-1, t1-2, t1-3, t1-4", "t1-5, t2-0, t2-1, t2-2, t2-3", "t2-4, t2-5, t2-6, t3-0, t3-1"]


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
def test_rack_aware_assignment_with_uniform_subscription(name):
    """Kafka AbstractStickyAssignorTest.testRackAwareAssignmentWithUniformSubscription."""
    topics = [ALL] * 3
    check = partial(verify_rack_assignment, name, TOPICS)

    def uniform(rf, broker_racks, consumer_racks, expected, mismatches):
        # AbstractStickyAssignorTest.verifyUniformSubscription: fresh, then owning the result
        check(rf, broker_racks, consumer_racks, topics, None, expected, mismatches)
        check(rf, broker_racks, consumer_racks, topics, expected, expected, mismatches)

    non_rack = [
        "t1-0, t1-3, t2-0, t2-3, t2-6",
        "t1-1, t1-4, t2-1, t2-4, t3-0",
        "t1-2, t1-5, t2-2, t2-5, t3-1",
    ]
    uniform(3, null_racks(3), racks(3), non_rack, -1)
    uniform(3, racks(3), null_racks(3), non_rack, -1)
    uniform(3, racks(3), racks(3), non_rack, 0)
    uniform(4, racks(4), racks(3), non_rack, 0)
    uniform(3, racks(3), ["d", "e", "f"], non_rack, -1)
    uniform(3, racks(3), [None, "e", "f"], non_rack, -1)
    # Rack-aligned with a lower replication factor, brokers holding a subset of partitions.
    uniform(1, racks(3), racks(3), non_rack, 0)
    uniform(2, racks(3), racks(3), non_rack, 0)
    # One consumer on a rack with no partitions: misaligned to keep the balance.
    uniform(3, racks(2), racks(3), non_rack, 5)
    if name == "cooperative-sticky":
        # Misaligned owned partitions are revoked first (an intermediate round), even within quota.
        check(1, racks(3), racks(3), topics, OWNED, ["t1-0, t1-3", "t2-1", "t2-5, t3-1"], 0)
    else:
        check(1, racks(3), racks(3), topics, OWNED, non_rack, 0)
    # Stickiness is kept when racks match.
    check(3, racks(3), racks(3), topics, non_rack, non_rack, 0)


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
def test_rack_aware_assignment_with_non_equal_subscription(name):
    """Kafka AbstractStickyAssignorTest.testRackAwareAssignmentWithNonEqualSubscription."""
    topics = [ALL, ALL, ["t1", "t3"]]
    check = partial(verify_rack_assignment, name, TOPICS)

    def non_equal(rf, broker_racks, consumer_racks, expected, mismatches):
        # AbstractStickyAssignorTest.verifyNonEqualSubscription
        check(rf, broker_racks, consumer_racks, topics, None, expected, mismatches)
        check(rf, broker_racks, consumer_racks, topics, expected, expected, mismatches)

    non_rack = [
        "t1-5, t2-0, t2-2, t2-4, t2-6",
        "t1-3, t2-1, t2-3, t2-5, t3-0",
        "t1-0, t1-1, t1-2, t1-4, t3-1",
    ]
    non_equal(3, null_racks(3), racks(3), non_rack, -1)
    non_equal(3, racks(3), null_racks(3), non_rack, -1)
    non_equal(3, racks(3), racks(3), non_rack, 0)
    non_equal(4, racks(4), racks(3), non_rack, 0)
    non_equal(3, racks(3), ["d", "e", "f"], non_rack, -1)
    non_equal(3, racks(3), [None, "e", "f"], non_rack, -1)
    # Lower replication factor: best-effort alignment.  Fresh with rf=1, kgroup's
    # balancing picks other partitions than Java's, as well aligned.
    aligned = ["t1-3, t2-0, t2-2, t2-3, t2-6", "t1-4, t2-1, t2-4, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-5, t3-1"]
    check(1, racks(3), racks(3), topics, None, aligned, 4, exact=False)
    check(1, racks(3), racks(3), topics, aligned, aligned, 4)
    rf2 = ["t1-3, t2-0, t2-2, t2-5, t2-6", "t1-0, t2-1, t2-3, t2-4, t3-0", "t1-1, t1-2, t1-4, t1-5, t3-1"]
    non_equal(2, racks(3), racks(3), rf2, 0)
    # One consumer on a rack with no partitions.
    non_equal(3, racks(2), racks(3), non_rack, 5)
    if name == "sticky":
        # Misaligned owned partitions are given up and placed again, rack-local members first.
        check(1, racks(3), racks(3), topics, OWNED, aligned, 4, exact=False)
        # Every rack matches: Java's general balancing keeps other owned partitions than ours.
        check(3, racks(3), racks(3), topics, OWNED, non_rack, 0, exact=False)
    else:
        # Departure: in its general path kgroup's cooperative-sticky keeps rack-remote owned
        # partitions (Java revokes them: intermediate "t1-3", "t2-1", "t3-1", then 4
        # misaligned), so that every membership change settles in two rounds.
        kept = ["t1-0, t1-1, t1-2", "t2-0, t2-1, t2-2, t2-3", "t3-0, t3-1"]
        check(1, racks(3), racks(3), topics, OWNED, kept, 6)
        settled = [
            "t1-0, t1-1, t1-2, t2-5, t2-6",
            "t2-0, t2-1, t2-2, t2-3, t2-4",
            "t1-3, t1-4, t1-5, t3-0, t3-1",
        ]
        check(1, racks(3), racks(3), topics, kept, settled, 9)
        # Every rack matches.  Java's intermediate round keeps t1-2..4 of consumer0's
        # t1-0..4, kgroup keeps t1-0..2 (which owned partitions balancing gives up is a
        # tie-break); from Java's intermediate, kgroup's final round is Java's exactly.
        intermediate = ["t1-2, t1-3, t1-4", "t2-0, t2-1, t2-2, t2-3", "t3-0, t3-1"]
        final = [
            "t1-2, t1-3, t1-4, t2-4, t2-5",
            "t2-0, t2-1, t2-2, t2-3, t2-6",
            "t1-0, t1-1, t1-5, t3-0, t3-1",
        ]
        check(3, racks(3), racks(3), topics, OWNED, intermediate, 0, exact=False)
        check(3, racks(3), racks(3), topics, intermediate, final, 0)
