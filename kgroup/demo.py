"""kgroup's demo: assign a realistic group with every strategy, then fail over its coordinator.

Run ``python -m kgroup.demo`` or ``kgroup demo``.  Twelve consumers on three racks (four of
them static, two with a different subscription) share four topics; each
strategy assigns them fresh, then one consumer leaves and one joins.  For
each strategy it prints per-member partition counts, balance, how many
partitions changed owner, how many are on a replica's rack, and for
cooperative-sticky the two rounds of each rebalance.  Then a consumer group
runs on the in-memory cluster, on a mock clock, while the broker hosting its
coordinator dies (``kgroup.demo_failover``).
"""
from __future__ import annotations

import argparse
import sys
from typing import Mapping, Optional, Sequence, TextIO

import attrs

from kgroup.assignors import Assignor, RebalanceProtocol, get_assignor
from kgroup.testing.conformance import check_validity
from kgroup.values import NO_GENERATION, Assignment, Subscription

STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")
RACKS = ("rack-a", "rack-b", "rack-c")
PARTITIONS_PER_TOPIC = {"orders": 24, "payments": 12, "clicks": 48, "audit": 6}
LEAVER = "consumer-05"
JOINER = "consumer-13"
JOINER_SUBSCRIPTION = Subscription(topics=("orders", "payments", "clicks"), rack_id=RACKS[0])

Owned = dict[str, tuple]


def demo_group() -> tuple[dict[str, int], dict[str, Subscription], dict]:
    """The group: partitions per topic, subscriptions, and each partition's replica racks."""
    subscriptions = {}
    for i in range(1, 13):
        # Two auditors read only audit and payments; everyone else the main topics.
        topics = ("audit", "payments") if i > 10 else ("orders", "payments", "clicks")
        subscriptions[f"consumer-{i:02d}"] = Subscription(
            topics=topics,
            group_instance_id=f"host-{i:02d}" if i <= 4 else None,
            rack_id=RACKS[(i - 1) % len(RACKS)],
        )
    # Replication factor 2: partition p has replicas on racks p and p+1 (mod 3).
    partition_racks = {
        topic: [frozenset({RACKS[p % 3], RACKS[(p + 1) % 3]}) for p in range(count)]
        for topic, count in PARTITIONS_PER_TOPIC.items()
    }
    return dict(PARTITIONS_PER_TOPIC), subscriptions, partition_racks


@attrs.frozen
class Rebalance:
    """One rebalance's outcome: the final assignment and, if cooperative, round one's."""

    final: Owned
    first_round: Optional[Owned]
    #: Partitions that changed owner while the previous owner stayed in the group.
    moved: int
    #: The generation in which ``final`` was handed out.
    generation_id: int


def _owned(assignment: Mapping[str, Assignment]) -> Owned:
    return {member: tuple(a.partitions) for member, a in assignment.items()}


def _claiming(subscriptions: Mapping[str, Subscription], owned: Owned, generation_id: int) -> dict:
    """Subscriptions as members send them on rejoin: each claims what it owns."""
    return {
        member: attrs.evolve(sub, owned_partitions=owned[member], generation_id=generation_id)
        if member in owned
        else sub
        for member, sub in subscriptions.items()
    }


def _moved(previous: Owned, final: Owned) -> int:
    owner = {tp: member for member, tps in final.items() for tp in tps}
    return sum(1 for member, tps in previous.items() if member in final
               for tp in tps if owner.get(tp) != member)


def rebalance(
    assignor: Assignor,
    partitions_per_topic,
    subscriptions,
    partition_racks,
    previous: Optional[Rebalance] = None,
) -> Rebalance:
    """Run one rebalance as a group would: two rounds under COOPERATIVE."""
    owned = previous.final if previous else {}
    generation_id = previous.generation_id if previous else NO_GENERATION
    claims = _claiming(subscriptions, owned, generation_id)
    first = assignor.assign(partitions_per_topic, claims, partition_racks)
    generation_id = max(generation_id, 0) + 1
    if RebalanceProtocol.COOPERATIVE not in assignor.supported_protocols:
        check_validity(partitions_per_topic, claims, first)
        return Rebalance(_owned(first), None, _moved(owned, _owned(first)), generation_id)
    # Round two: members revoked what round one withheld and claim the rest.
    second_claims = _claiming(subscriptions, _owned(first), generation_id)
    second = assignor.assign(partitions_per_topic, second_claims, partition_racks)
    check_validity(partitions_per_topic, second_claims, second)
    return Rebalance(_owned(second), _owned(first), _moved(owned, _owned(second)), generation_id + 1)


def _rack_local(owned: Owned, subscriptions, partition_racks) -> int:
    return sum(
        1
        for member, tps in owned.items()
        for tp in tps
        if subscriptions[member].rack_id in partition_racks[tp.topic][tp.partition]
    )


def _counts(owned: Owned) -> str:
    sizes = [len(tps) for tps in owned.values()]
    return f"min {min(sizes)} max {max(sizes)} balance {max(sizes) - min(sizes)}"


def _rounds(step: Rebalance, previous: Owned) -> str:
    if step.first_round is None:
        return ""
    assigned_first = sum(len(tps) for tps in step.first_round.values())
    revoked = sum(len(set(previous.get(m, ())) - set(tps)) for m, tps in step.first_round.items())
    assigned_second = sum(len(tps) for tps in step.final.values())
    return (
        f"\n    round 1: {assigned_first} assigned, {revoked} revoked and withheld;"
        f" round 2: {assigned_second} assigned"
    )


def run_strategy(name: str, out: TextIO) -> dict[str, tuple]:
    """Print one strategy's section; returns member -> (fresh, after leave, after join) counts."""
    partitions_per_topic, subscriptions, partition_racks = demo_group()
    assignor = get_assignor(name)
    total = sum(partitions_per_topic.values())

    fresh = rebalance(assignor, partitions_per_topic, subscriptions, partition_racks)
    after_leave_subs = {m: s for m, s in subscriptions.items() if m != LEAVER}
    leave = rebalance(assignor, partitions_per_topic, after_leave_subs, partition_racks, fresh)
    after_join_subs = dict(after_leave_subs, **{JOINER: JOINER_SUBSCRIPTION})
    join = rebalance(assignor, partitions_per_topic, after_join_subs, partition_racks, leave)

    protocols = "/".join(p.name for p in assignor.supported_protocols)
    out.write(f"\n[{name}] ({protocols})\n")
    out.write(
        f"  fresh:  {_counts(fresh.final)}; "
        f"rack-local {_rack_local(fresh.final, subscriptions, partition_racks)}/{total}"
        f"{_rounds(fresh, {})}\n"
    )
    out.write(
        f"  leave:  {LEAVER} held {len(fresh.final[LEAVER])}; moved {leave.moved}; {_counts(leave.final)}; "
        f"rack-local {_rack_local(leave.final, after_leave_subs, partition_racks)}/{total}"
        f"{_rounds(leave, fresh.final)}\n"
    )
    out.write(
        f"  join:   {JOINER} got {len(join.final[JOINER])}; moved {join.moved}; {_counts(join.final)}; "
        f"rack-local {_rack_local(join.final, after_join_subs, partition_racks)}/{total}"
        f"{_rounds(join, leave.final)}\n"
    )
    members = sorted(set(subscriptions) | {JOINER})
    return {
        m: tuple(len(step.final[m]) if m in step.final else None for step in (fresh, leave, join))
        for m in members
    }


def _member_table(subscriptions, counts: dict[str, dict]) -> str:
    header = ["member", "rack", "static", "topics"] + [f"{s} fresh>leave>join" for s in counts]
    rows = [header]
    extra = {JOINER: JOINER_SUBSCRIPTION}
    for member in sorted(set(subscriptions) | set(extra)):
        sub = subscriptions.get(member) or extra[member]
        cells = [member, sub.rack_id or "-", sub.group_instance_id or "-", ",".join(sub.topics)]
        for per_member in counts.values():
            cells.append(">".join("-" if c is None else str(c) for c in per_member[member]))
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def _argument_parser() -> argparse.ArgumentParser:
    summary, _, details = (__doc__ or "").partition("\n\n")
    return argparse.ArgumentParser(prog="python -m kgroup.demo", description=summary, epilog=details,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def main(out: TextIO = sys.stdout, argv: Sequence[str] = ()) -> int:
    """Run the demo; ``argv`` are command-line arguments (``--help`` prints usage and exits 0)."""
    _argument_parser().parse_args(list(argv))
    partitions_per_topic, subscriptions, _ = demo_group()
    out.write(
        f"kgroup demo: {len(subscriptions)} consumers on {len(RACKS)} racks, "
        f"topics {', '.join(f'{t}[{n}]' for t, n in partitions_per_topic.items())} "
        f"= {sum(partitions_per_topic.values())} partitions\n"
        f"then {LEAVER} leaves and {JOINER} joins. "
        "'moved' counts partitions taken from a consumer that stayed.\n"
    )
    counts = {name: run_strategy(name, out) for name in STRATEGIES}
    out.write("\npartitions per member (fresh>after leave>after join):\n")
    out.write(_member_table(subscriptions, counts) + "\n")
    from kgroup.demo_failover import run_failover

    run_failover(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(argv=sys.argv[1:]))
