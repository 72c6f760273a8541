"""Assignor conformance kit: checks any assignor (ours or a plugin) can run.

Two ways to use it:

* ``check_assignor(assignor, seed=0)`` drives the assignor through seeded
  random groups and membership changes and raises :class:`ConformanceError`
  on the first violation (the message names the seed and round, so a
  failure replays exactly).  On success it returns a
  :class:`ConformanceReport` saying what was checked, so a pass is never
  vacuous.
* The individual checks (:func:`check_validity`, :func:`check_balance`,
  :func:`check_topic_balance`, :func:`check_stickiness`,
  :func:`check_cooperative_safety`, :func:`check_convergence`) take plain
  inputs and an assignment and can be called from a user's own tests.

Which checks apply depends on what the assignor promises
(:class:`AssignorProperties`).  They are resolved, first match wins, from:
keyword arguments to :func:`check_assignor`; a ``conformance_properties``
class attribute on the assignor; Kafka's built-in names (``range``:
per-topic balance; ``roundrobin``: balance with identical subscriptions;
``sticky`` and ``cooperative-sticky``: full balance and stickiness); else
validity only.  ``cooperative`` defaults to whether the assignor lists
``RebalanceProtocol.COOPERATIVE`` in ``supported_protocols``, because any
assignor used under that protocol must be cooperatively safe.
"""
from __future__ import annotations

import enum
import random
import types
from collections import Counter
from typing import Callable, Iterable, Mapping, Optional, Sequence

import attrs

from kgroup.assignors.base import Assignor, PartitionRacks, RebalanceProtocol
from kgroup.errors import ConfigError, KGroupError
from kgroup.values import Assignment, Subscription, TopicPartition

__all__ = [
    "ConformanceError",
    "Balance",
    "AssignorProperties",
    "ConformanceReport",
    "RandomGroup",
    "properties_of",
    "random_group",
    "check_validity",
    "check_balance",
    "check_topic_balance",
    "check_stickiness",
    "minimal_moves",
    "check_cooperative_safety",
    "check_convergence",
    "check_assignor",
]

# Report at most this many offending items in one message: enough to debug,
# short enough to read in a pytest failure.
_MAX_EXAMPLES = 5


class ConformanceError(KGroupError, AssertionError):
    """An assignment breaks a conformance rule.

    ``violation`` is a short stable code naming the rule (for example
    ``"duplicate-partition"``); the message explains the instance.
    """

    def __init__(self, violation: str, message: str) -> None:
        super().__init__(f"{violation}: {message}")
        self.violation = violation
        self.message = message


class Balance(enum.Enum):
    """How balanced an assignor promises to be."""

    #: No promise (validity only).
    NONE = "none"
    #: Per topic, members subscribed to it get counts differing by <= 1 (range).
    PER_TOPIC = "per-topic"
    #: With identical subscriptions, member sizes differ by <= 1 (round-robin).
    IDENTICAL = "identical"
    #: IDENTICAL, and for any subscriptions no partition could move from a
    #: member to one holding >= 2 fewer that subscribes to its topic (sticky).
    FULL = "full"


@attrs.frozen
class AssignorProperties:
    """What an assignor promises, and so which checks the kit runs."""

    balance: Balance = Balance.NONE
    #: A membership change moves only what balance needs (identical subscriptions).
    sticky: bool = False
    #: Safe under KIP-429: never hands a partition over in the round it is revoked.
    cooperative: bool = False


_KNOWN_PROPERTIES = {
    "range": AssignorProperties(balance=Balance.PER_TOPIC),
    "roundrobin": AssignorProperties(balance=Balance.IDENTICAL),
    "sticky": AssignorProperties(balance=Balance.FULL, sticky=True),
    "cooperative-sticky": AssignorProperties(balance=Balance.FULL, sticky=True, cooperative=True),
}


def properties_of(
    assignor: Assignor,
    *,
    balance: Optional[Balance] = None,
    sticky: Optional[bool] = None,
    cooperative: Optional[bool] = None,
) -> AssignorProperties:
    """Resolve the properties to check (see the module docstring for the order)."""
    declared = getattr(assignor, "conformance_properties", None)
    if not isinstance(declared, AssignorProperties):
        declared = _KNOWN_PROPERTIES.get(getattr(assignor, "name", ""))
    if declared is None:
        protocols = tuple(getattr(assignor, "supported_protocols", ()) or ())
        declared = AssignorProperties(cooperative=RebalanceProtocol.COOPERATIVE in protocols)
    return AssignorProperties(
        balance=declared.balance if balance is None else balance,
        sticky=declared.sticky if sticky is None else sticky,
        cooperative=declared.cooperative if cooperative is None else cooperative,
    )


# ---------------------------------------------------------------------------
# Helpers shared by the checks.


def _examples(items: Iterable) -> str:
    items = list(items)
    shown = ", ".join(str(item) for item in items[:_MAX_EXAMPLES])
    more = len(items) - _MAX_EXAMPLES
    return shown + (f" (and {more} more)" if more > 0 else "")


def _fmt_tp(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def _effective_topics(partitions_per_topic: Mapping[str, int], subscription: Subscription) -> frozenset:
    """Subscribed topics that exist: a deleted topic cannot be assigned."""
    return frozenset(t for t in subscription.topics if t in partitions_per_topic)


def _sizes(assignment: Mapping[str, Assignment]) -> dict[str, int]:
    return {member: len(a.partitions) for member, a in assignment.items()}


def _owner_map(assignment: Mapping[str, Assignment]) -> dict[TopicPartition, str]:
    return {tp: member for member, a in assignment.items() for tp in a.partitions}


def _subscriptions_identical(partitions_per_topic, subscriptions) -> bool:
    return len({_effective_topics(partitions_per_topic, s) for s in subscriptions.values()}) <= 1


def claimed_owners(subscriptions: Mapping[str, Subscription]) -> dict[TopicPartition, frozenset]:
    """Each claimed partition's current owners: the claimants at the highest generation.

    A claim made in an older generation than another claim on the same
    partition is stale (that member was fenced), as in Kafka's sticky
    assignors.  Several claimants tie only if they claim in one generation.
    """
    best: dict[TopicPartition, tuple[int, set]] = {}
    for member, sub in subscriptions.items():
        for tp in sub.owned_partitions:
            current = best.get(tp)
            if current is None or sub.generation_id > current[0]:
                best[tp] = (sub.generation_id, {member})
            elif sub.generation_id == current[0]:
                current[1].add(member)
    return {tp: frozenset(members) for tp, (_, members) in best.items()}


# ---------------------------------------------------------------------------
# Individual checks.


def check_validity(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    assignment: Mapping[str, Assignment],
    *,
    may_be_unassigned: Iterable[TopicPartition] = (),
) -> None:
    """Raise :class:`ConformanceError` unless ``assignment`` is a valid answer.

    Valid: one :class:`Assignment` for every member and no one else; every
    assigned partition exists, belongs to a topic its member subscribes to,
    and is assigned once; every partition of a subscribed topic is
    assigned.  ``may_be_unassigned`` lists partitions allowed to stay
    unassigned (a cooperative first round withholds those being revoked).
    """
    if not isinstance(assignment, Mapping):
        raise ConformanceError("malformed-result",
                               f"assign() returned {type(assignment).__name__}, not a mapping")
    missing = sorted(set(subscriptions) - set(assignment))
    if missing:
        raise ConformanceError("missing-member", f"no assignment for member(s) {_examples(missing)}")
    unknown = sorted(set(assignment) - set(subscriptions))
    if unknown:
        raise ConformanceError("unknown-member", f"assignment for non-member(s) {_examples(unknown)}")
    malformed = sorted(m for m, a in assignment.items() if not isinstance(a, Assignment))
    if malformed:
        raise ConformanceError("malformed-result",
                               f"member(s) {_examples(malformed)} got no kgroup Assignment")

    owners: dict[TopicPartition, list] = {}
    for member in sorted(assignment):
        topics = frozenset(subscriptions[member].topics)
        for tp in assignment[member].partitions:
            count = partitions_per_topic.get(tp.topic)
            if count is None or not 0 <= tp.partition < count:
                raise ConformanceError(
                    "unknown-partition", f"member {member!r} got {_fmt_tp(tp)}, which does not exist"
                )
            if tp.topic not in topics:
                raise ConformanceError(
                    "unsubscribed-topic",
                    f"member {member!r} got {_fmt_tp(tp)} but subscribes only to {sorted(topics)}",
                )
            owners.setdefault(tp, []).append(member)
    duplicated = sorted((tp, ms) for tp, ms in owners.items() if len(ms) > 1)
    if duplicated:
        raise ConformanceError(
            "duplicate-partition",
            "assigned more than once: " + _examples(f"{_fmt_tp(tp)} to {ms}" for tp, ms in duplicated),
        )

    allowed = frozenset(may_be_unassigned)
    subscribed = set().union(*(_effective_topics(partitions_per_topic, s) for s in subscriptions.values()))
    unassigned = [
        TopicPartition(topic, p)
        for topic in sorted(subscribed)
        for p in range(partitions_per_topic[topic])
        if TopicPartition(topic, p) not in owners and TopicPartition(topic, p) not in allowed
    ]
    if unassigned:
        raise ConformanceError(
            "unassigned-partition",
            f"{len(unassigned)} subscribed partition(s) assigned to nobody: "
            + _examples(_fmt_tp(tp) for tp in unassigned),
        )


def check_balance(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    assignment: Mapping[str, Assignment],
) -> None:
    """Raise :class:`ConformanceError` unless ``assignment`` is balanced.

    With identical subscriptions (counting only topics that exist) member
    sizes must differ by at most one (``"imbalance"``).  Otherwise the
    bound is the one subscriptions allow: no member may hold two or more
    partitions more than a member that subscribes to the topic of one of
    them, since moving that partition would balance better
    (``"movable-imbalance"``).  Assumes ``assignment`` is valid.
    """
    sizes = _sizes(assignment)
    if not sizes:
        return
    if _subscriptions_identical(partitions_per_topic, subscriptions):
        lightest = min(sizes, key=lambda m: (sizes[m], m))
        heaviest = max(sizes, key=lambda m: (sizes[m], m))
        if sizes[heaviest] - sizes[lightest] > 1:
            raise ConformanceError(
                "imbalance",
                f"identical subscriptions but {heaviest!r} has {sizes[heaviest]} partitions "
                f"and {lightest!r} has {sizes[lightest]}",
            )
        return
    # For each topic, the heaviest member holding one of its partitions: a
    # lighter subscriber could take that partition.  Linear in the input.
    heaviest_holder: dict[str, str] = {}
    for member, a in assignment.items():
        for tp in a.partitions:
            holder = heaviest_holder.get(tp.topic)
            if holder is None or sizes[member] > sizes[holder]:
                heaviest_holder[tp.topic] = member
    for member in sorted(sizes):
        for topic in sorted(_effective_topics(partitions_per_topic, subscriptions[member])):
            holder = heaviest_holder.get(topic)
            if holder is not None and sizes[holder] - sizes[member] >= 2:
                raise ConformanceError(
                    "movable-imbalance",
                    f"{holder!r} holds {sizes[holder]} partitions, including one of topic {topic!r}, "
                    f"while {member!r}, subscribed to {topic!r}, holds only {sizes[member]}",
                )


def check_topic_balance(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    assignment: Mapping[str, Assignment],
) -> None:
    """Per topic, subscribers' counts of its partitions differ by <= 1 (range's promise)."""
    per_topic: dict[str, Counter] = {}
    for member, sub in subscriptions.items():
        for topic in _effective_topics(partitions_per_topic, sub):
            per_topic.setdefault(topic, Counter())[member] += 0
    for member, a in assignment.items():
        for tp in a.partitions:
            per_topic.setdefault(tp.topic, Counter())[member] += 1
    for topic in sorted(per_topic):
        counts = per_topic[topic]
        lightest = min(counts, key=lambda m: (counts[m], m))
        heaviest = max(counts, key=lambda m: (counts[m], m))
        if counts[heaviest] - counts[lightest] > 1:
            raise ConformanceError(
                "topic-imbalance",
                f"topic {topic!r}: {heaviest!r} has {counts[heaviest]} of its partitions "
                f"and {lightest!r} has {counts[lightest]}",
            )


def minimal_moves(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    previous: Mapping[str, Iterable[TopicPartition]],
) -> int:
    """Fewest partitions that must leave a current owner for a balanced result.

    For identical subscriptions: with P partitions and M members, a balanced
    assignment gives ``P % M`` members ``P // M + 1`` partitions and the rest
    ``P // M``.  Giving the larger quotas to the members that own most keeps
    the most; each member then gives up what it owns beyond its quota.
    Partitions whose previous owner has left are not moves.
    """
    if not subscriptions:
        return 0
    topics = _effective_topics(partitions_per_topic, next(iter(subscriptions.values())))
    total = sum(partitions_per_topic[t] for t in topics)
    floor_quota, extra = divmod(total, len(subscriptions))
    kept = sorted(
        (sum(1 for tp in previous.get(m, ()) if tp.topic in topics) for m in subscriptions),
        reverse=True,
    )
    return sum(max(0, owned - (floor_quota + (1 if i < extra else 0))) for i, owned in enumerate(kept))


def check_stickiness(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    previous: Mapping[str, Assignment],
    current: Mapping[str, Assignment],
) -> int:
    """Raise :class:`ConformanceError` if more partitions moved than balance needs.

    ``previous`` is the assignment before a membership change and
    ``current`` the one after it; a move is a partition whose previous
    owner is still a member and that now belongs to someone else.  The
    bound is :func:`minimal_moves`: 0 when a member leaves (only the
    leaver's partitions move), the newcomer's quota when one joins.
    Defined for identical subscriptions only (else :class:`ConfigError`).
    Returns the number of moves.
    """
    if not _subscriptions_identical(partitions_per_topic, subscriptions):
        raise ConfigError("check_stickiness is defined for identical subscriptions only")
    prev = {m: a.partitions for m, a in previous.items() if m in subscriptions}
    new_owner = _owner_map(current)
    moves = sorted(
        (tp, member, new_owner.get(tp))
        for member, partitions in prev.items()
        for tp in partitions
        if new_owner.get(tp) != member
    )
    bound = minimal_moves(partitions_per_topic, subscriptions, prev)
    if len(moves) > bound:
        raise ConformanceError(
            "excess-movement",
            f"{len(moves)} partition(s) changed owner but balance needs only {bound}: "
            + _examples(f"{_fmt_tp(tp)} {old!r}->{new!r}" for tp, old, new in moves),
        )
    return len(moves)


def check_cooperative_safety(
    subscriptions: Mapping[str, Subscription],
    assignment: Mapping[str, Assignment],
) -> None:
    """No partition goes to a new owner in the round its current owner gives it up.

    Current owners come from the subscriptions' ``owned_partitions``
    (highest generation wins, see :func:`claimed_owners`); a partition
    owned by one member may be assigned only to that member or to nobody.
    """
    owners = claimed_owners(subscriptions)
    unsafe = sorted(
        (tp, member, owners[tp])
        for member, a in assignment.items()
        for tp in a.partitions
        if tp in owners and member not in owners[tp]
    )
    if unsafe:
        raise ConformanceError(
            "cooperative-unsafe",
            "assigned while still owned by another member: "
            + _examples(f"{_fmt_tp(tp)} to {m!r} (owned by {sorted(o)})" for tp, m, o in unsafe),
        )


def check_convergence(first: Mapping[str, Assignment], second: Mapping[str, Assignment]) -> None:
    """The second cooperative round revokes nothing, so no third round is needed."""
    second_parts = {m: frozenset(a.partitions) for m, a in second.items()}
    revoked = sorted(
        (tp, member)
        for member, a in first.items()
        if member in second_parts
        for tp in a.partitions
        if tp not in second_parts[member]
    )
    if revoked:
        raise ConformanceError(
            "not-converged",
            "the second cooperative round still revokes "
            + _examples(f"{_fmt_tp(tp)} from {m!r}" for tp, m in revoked),
        )


# ---------------------------------------------------------------------------
# Random groups.

_RACKS = ("rack-a", "rack-b", "rack-c")


@attrs.frozen
class RandomGroup:
    """One generated rebalance input."""

    partitions_per_topic: Mapping[str, int]
    subscriptions: Mapping[str, Subscription]
    partition_racks: Optional[PartitionRacks]
    identical: bool


def _member_id(rng: random.Random, index: int) -> str:
    # A random suffix, so the order of member ids is not the creation order.
    return f"consumer-{rng.getrandbits(24):06x}-{index}"


def _random_topics(rng: random.Random, topics: list) -> list:
    return rng.sample(topics, rng.randint(1, len(topics)))


def random_group(
    rng: random.Random,
    *,
    max_members: int = 10,
    max_topics: int = 4,
    max_partitions: int = 12,
    identical: Optional[bool] = None,
    racks: bool = False,
) -> RandomGroup:
    """A random group: topics, members (some static, some with a rack), subscriptions.

    ``identical=None`` picks identical or differing subscriptions at random.
    Differing groups may include members subscribed to nothing and topics
    that do not exist (deleted).  No member owns anything yet.
    """
    topics = [f"topic-{chr(ord('a') + i)}" for i in range(rng.randint(1, max_topics))]
    partitions_per_topic = {t: rng.randint(1, max_partitions) for t in topics}
    if identical is None:
        identical = rng.random() < 0.5
    shared = _random_topics(rng, topics)
    subscriptions = {}
    for index in range(rng.randint(1, max_members)):
        if identical:
            member_topics = list(shared)
        else:
            member_topics = [] if rng.random() < 0.1 else _random_topics(rng, topics)
            if rng.random() < 0.15:
                member_topics.append("deleted-topic")
        subscriptions[_member_id(rng, index)] = Subscription(
            topics=member_topics,
            group_instance_id=f"instance-{index}" if rng.random() < 0.3 else None,
            rack_id=rng.choice(_RACKS) if racks else None,
        )
    partition_racks = None
    if racks:
        partition_racks = {
            t: [frozenset(rng.sample(_RACKS, rng.randint(1, 2))) for _ in range(n)]
            for t, n in partitions_per_topic.items()
        }
    return RandomGroup(partitions_per_topic, subscriptions, partition_racks, identical)


# ---------------------------------------------------------------------------
# The driver.


@attrs.frozen
class ConformanceReport:
    """What :func:`check_assignor` checked; every count > 0 means the check ran."""

    assignor: str
    seed: int
    rounds: int
    properties: AssignorProperties
    #: check name -> how many assignments it passed.
    checks: Mapping[str, int]
    #: Partitions moved by membership changes in stickiness checks (all passed).
    moves_checked: int


class _Driver:
    """Runs one assignor through the scenarios and counts the checks."""

    def __init__(self, assignor: Assignor, props: AssignorProperties) -> None:
        self.assignor = assignor
        self.props = props
        self.checks: Counter = Counter()
        self.moves = 0
        self.step = ""

    def _run(self, name: str, check: Callable, *args, **kwargs):
        try:
            result = check(*args, **kwargs)
        except ConformanceError as error:
            raise ConformanceError(error.violation, f"{error.message} [{name} check, {self.step}]") from error
        self.checks[name] += 1
        return result

    def assign(self, group: RandomGroup, subscriptions, racks=None) -> dict:
        # Read-only views: an assignor must not mutate its input.
        return self.assignor.assign(
            types.MappingProxyType(dict(group.partitions_per_topic)),
            types.MappingProxyType(dict(subscriptions)),
            racks,
        )

    def check_result(self, group, subscriptions, assignment, *, may_be_unassigned=()) -> None:
        pp = group.partitions_per_topic
        self._run("validity", check_validity, pp, subscriptions, assignment,
                  may_be_unassigned=may_be_unassigned)
        if may_be_unassigned:
            return  # a cooperative first round need not be balanced yet
        balance = self.props.balance
        if balance is Balance.FULL or (
            balance is Balance.IDENTICAL and _subscriptions_identical(pp, subscriptions)
        ):
            self._run("balance", check_balance, pp, subscriptions, assignment)
        elif balance is Balance.PER_TOPIC:
            self._run("topic-balance", check_topic_balance, pp, subscriptions, assignment)

    def subscription(self, sub: Subscription, owned: Iterable[TopicPartition],
                     generation_id: int) -> Subscription:
        owned = tuple(owned)
        user_data = self.assignor.subscription_user_data(sub.topics, owned, generation_id)
        return attrs.evolve(sub, owned_partitions=owned, generation_id=generation_id, user_data=user_data)

    def rebalance(self, group, subscriptions, generation_id: int):
        """One rebalance in ``generation_id`` (two rounds when cooperative).

        Returns the final assignment and the generation it was given in.
        """
        first = self.assign(group, subscriptions)
        if not self.props.cooperative:
            self.check_result(group, subscriptions, first)
            return first, generation_id
        self._run("cooperative-safety", check_cooperative_safety, subscriptions, first)
        withheld = set(claimed_owners(subscriptions)) - set(_owner_map(first))
        self.check_result(group, subscriptions, first, may_be_unassigned=withheld)
        # Members revoke what they lost and rejoin owning exactly round one's result.
        second_subs = {m: self.subscription(s, first[m].partitions, generation_id)
                       for m, s in subscriptions.items()}
        second = self.assign(group, second_subs)
        self._run("cooperative-safety", check_cooperative_safety, second_subs, second)
        # Before validity: withholding an owned partition again is a revocation
        # that needs a third round, and that is the violation to name.
        self._run("convergence", check_convergence, first, second)
        self.check_result(group, second_subs, second)
        return second, generation_id + 1


def check_assignor(
    assignor: Assignor,
    *,
    seed: int = 0,
    rounds: int = 25,
    changes_per_round: int = 3,
    max_members: int = 10,
    max_topics: int = 4,
    max_partitions: int = 12,
    identical: Optional[bool] = None,
    balance: Optional[Balance] = None,
    sticky: Optional[bool] = None,
    cooperative: Optional[bool] = None,
) -> ConformanceReport:
    """Run every applicable check over ``rounds`` seeded random groups.

    Each round: a fresh assignment; a fresh rack-aware assignment of a
    group with racks (validity and balance); then ``changes_per_round``
    random membership changes (a member leaves or joins), each
    rebalanced with the members' owned partitions and generation, checking
    validity, balance, stickiness (identical subscriptions) and, for
    cooperative assignors, both rounds' safety and convergence.
    ``identical=True`` limits groups to identical subscriptions (for an
    assignor that promises nothing else), ``False`` to differing ones.  Raises
    :class:`ConformanceError` naming the seed, round and step on the first
    violation.
    """
    props = properties_of(assignor, balance=balance, sticky=sticky, cooperative=cooperative)
    driver = _Driver(assignor, props)
    rng = random.Random(seed)

    def draw_group(racks: bool = False) -> RandomGroup:
        return random_group(rng, identical=identical, racks=racks, max_members=max_members,
                            max_topics=max_topics, max_partitions=max_partitions)

    for round_index in range(rounds):
        where = f"seed={seed} round={round_index}"

        racked = draw_group(racks=True)
        driver.step = f"{where}, fresh rack-aware assignment"
        racked_assignment = driver.assign(racked, racked.subscriptions, racked.partition_racks)
        driver.check_result(racked, racked.subscriptions, racked_assignment)

        group = draw_group()
        subscriptions = dict(group.subscriptions)
        driver.step = f"{where}, fresh assignment of {len(subscriptions)} members"
        current, generation_id = driver.rebalance(group, subscriptions, 1)
        next_index = len(subscriptions)
        for _ in range(changes_per_round):
            members = sorted(subscriptions)
            if len(members) > 1 and rng.random() < 0.5:
                changed = rng.choice(members)
                del subscriptions[changed]
                change = f"member {changed!r} left"
            else:
                changed = _member_id(rng, next_index)
                next_index += 1
                topics: Sequence[str]
                if group.identical:
                    topics = subscriptions[members[0]].topics
                else:
                    topics = _random_topics(rng, sorted(group.partitions_per_topic))
                subscriptions[changed] = Subscription(topics=topics)
                change = f"member {changed!r} joined"
            # Everyone who was assigned in the last generation claims it.
            subscriptions = {
                m: driver.subscription(s, current[m].partitions, generation_id) if m in current else s
                for m, s in subscriptions.items()
            }
            driver.step = f"{where}, {change} (now {len(subscriptions)} members)"
            previous = current
            current, generation_id = driver.rebalance(group, subscriptions, generation_id + 1)
            if props.sticky and group.identical:
                driver.moves += driver._run(
                    "stickiness", check_stickiness, group.partitions_per_topic, subscriptions, previous,
                    current,
                )
    return ConformanceReport(
        assignor=getattr(assignor, "name", type(assignor).__name__),
        seed=seed,
        rounds=rounds,
        properties=props,
        checks=dict(driver.checks),
        moves_checked=driver.moves,
    )
