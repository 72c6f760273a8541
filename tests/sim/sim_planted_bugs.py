"""Deliberately broken members, coordinators, assignors and applications, one a context manager.

Each reinstates one bug for its duration; the simulator's checker must name it
(``tests/sim/test_planted_bugs.py``).  A check no planted bug can trip is a defect.
"""
from __future__ import annotations

import contextlib

import attrs

from kgroup.assignors.range import RangeAssignor
from kgroup.assignors.sticky import StickyAssignor
from kgroup.core.cluster.group_hosting import GroupHosting
from kgroup.core.member.classic.assignment import Ownership
from kgroup.sim import app as sim_app
from kgroup.sim import simulator as sim_simulator


@contextlib.contextmanager
def _patched(owner, name, replacement):
    original = getattr(owner, name)
    setattr(owner, name, replacement)
    try:
        yield original
    finally:
        setattr(owner, name, original)


@contextlib.contextmanager
def assignor_double_assigns():
    """The range assignor also gives the first member's first partition to the second member."""
    original = RangeAssignor.assign

    def double(self, partitions_per_topic, subscriptions, partition_racks=None):
        out = original(self, partitions_per_topic, subscriptions, partition_racks)
        members = sorted(out)
        if len(members) >= 2 and out[members[0]].partitions:
            first = out[members[0]].partitions[0]
            second = out[members[1]]
            out[members[1]] = type(second)(partitions=sorted(set(second.partitions) | {first}),
                                           user_data=second.user_data)
        return out

    with _patched(RangeAssignor, "assign", double):
        yield


@contextlib.contextmanager
def assignor_forgets_a_partition():
    """The range assignor leaves the topic's last partition to nobody."""
    original = RangeAssignor.assign

    def forget(self, partitions_per_topic, subscriptions, partition_racks=None):
        out = original(self, partitions_per_topic, subscriptions, partition_racks)
        for member, assignment in out.items():
            kept = [tp for tp in assignment.partitions
                    if tp.partition != partitions_per_topic.get(tp.topic, 0) - 1]
            out[member] = type(assignment)(partitions=kept, user_data=assignment.user_data)
        return out

    with _patched(RangeAssignor, "assign", forget):
        yield


@contextlib.contextmanager
def commits_released_before_the_high_watermark():
    """The coordinator answers an offset commit before __consumer_offsets replicated it."""
    with _patched(GroupHosting, "_committed", lambda self, wait: True):
        yield


@contextlib.contextmanager
def eager_members_keep_partitions_through_the_join():
    """An eager member does not revoke before it rejoins (Java's onJoinPrepare skipped)."""
    original = Ownership.give_up_before_join

    def keep(self, subscription, protocol, generation):
        if generation.is_valid:
            return
        original(self, subscription, protocol, generation)

    with _patched(Ownership, "give_up_before_join", keep):
        yield


@contextlib.contextmanager
def revoked_commits_stamped_with_the_next_generation():
    """The application commits what it revoked only after the rebalance, stamped with the new
    generation (commits stamped with the current generation, not the one they were made in)."""
    original_take, original_poll = sim_app.ConsumerApp._take_events, sim_app.ConsumerApp.handle_timer

    def take(self, now):
        before = dict(self.committable())
        original_take(self, now)
        gone = {tp: p for tp, p in before.items() if tp not in self.positions}
        if gone:
            self.late_commits = {**getattr(self, "late_commits", {}), **gone}

    def poll(self, now):
        late = getattr(self, "late_commits", None)
        if late and self.member.state is sim_app.ClassicMemberState.STABLE:
            self.member.commit_offsets(late, now)
            self.late_commits = {}
        original_poll(self, now)

    def no_revoke_commit(self, offsets, now, sync):
        if sync and self.sync_token is None and offsets and set(offsets) - set(self.member.assignment):
            return  # the revocation commit: skipped, done late instead
        original_commit(self, offsets, now, sync)

    original_commit = sim_app.ConsumerApp.commit
    with _patched(sim_app.ConsumerApp, "_take_events", take), \
            _patched(sim_app.ConsumerApp, "handle_timer", poll), \
            _patched(sim_app.ConsumerApp, "commit", no_revoke_commit):
        yield


@contextlib.contextmanager
def new_owner_starts_from_the_beginning():
    """The application ignores the committed offset and starts every new partition at 0."""
    original = sim_app.ConsumerApp._resume

    def from_zero(self, event, now):
        original(self, attrs.evolve(event, offsets={tp: None for tp in event.offsets}), now)

    with _patched(sim_app.ConsumerApp, "_resume", from_zero):
        yield


@contextlib.contextmanager
def consumer_skips_a_record():
    """Every tenth batch, the application's position jumps one record past what it fetched."""
    original = sim_app.ConsumerApp._finish_batch

    def skip(self, now):
        batch = list(self.batch)
        original(self, now)
        self.skips = getattr(self, "skips", 0) + len(batch)
        if batch and self.skips >= 10:
            self.skips = 0
            tp, _first, end = batch[-1]
            if self.positions.get(tp) == end:
                self.positions[tp] = end + 1

    with _patched(sim_app.ConsumerApp, "_finish_batch", skip):
        yield


@contextlib.contextmanager
def commits_before_processing():
    """The application commits what it fetched before processing it; a crash loses the batch."""
    original = sim_app.ConsumerApp._fetch

    def fetch_and_commit(self, now):
        count = original(self, now)
        if self.batch:
            self.member.commit_offsets({tp: end for tp, _first, end in self.batch}, now)
        return count

    with _patched(sim_app.ConsumerApp, "_fetch", fetch_and_commit):
        yield


@contextlib.contextmanager
def static_member_restarts_with_a_new_instance_id():
    """A restarted static member comes back with a new group.instance.id: a new member to the group."""
    original = sim_simulator._Simulation.instance_id_of

    def fresh(self, name):
        self.starts = getattr(self, "starts", {})
        self.starts[name] = self.starts.get(name, -1) + 1
        instance_id = original(self, name)
        return instance_id if not self.starts[name] else f"{instance_id}-restart-{self.starts[name]}"

    with _patched(sim_simulator._Simulation, "instance_id_of", fresh):
        yield


@contextlib.contextmanager
def sticky_assignor_shuffles():
    """The sticky assignor computes its balanced assignment, then hands each member's list to the next
    member (sizes, so balance, unchanged): every rebalance moves partitions between members that stay."""
    original = StickyAssignor.assign

    def shuffle(self, partitions_per_topic, subscriptions, partition_racks=None):
        out = original(self, partitions_per_topic, subscriptions, partition_racks)
        members = sorted(out)
        return {member: out[members[(i + 1) % len(members)]] for i, member in enumerate(members)}

    with _patched(StickyAssignor, "assign", shuffle):
        yield


@contextlib.contextmanager
def commits_rewind_now_and_then():
    """Every fifth commit of an application names offsets a few records back (a commit that moves
    the group's position backwards without an explicit reset)."""
    original_commit = sim_app.ConsumerApp.commit
    calls = {"n": 0}

    def rewinding(self, offsets, now, sync):
        calls["n"] += 1
        if calls["n"] % 5 == 0 and offsets:
            offsets = {tp: max(0, offset - 3) for tp, offset in offsets.items()}
        original_commit(self, offsets, now, sync)

    with _patched(sim_app.ConsumerApp, "commit", rewinding):
        yield
