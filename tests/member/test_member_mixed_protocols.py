"""Kafka's documented eager -> cooperative upgrade path, with kgroup's real codec and assignors.

Members configured with ``("cooperative-sticky", "range")`` are EAGER (range
is eager-only, so Java's ConsumerCoordinator picks the protocol every
configured assignor supports), yet the group selects cooperative-sticky.  An
eager member revokes everything before it rejoins and so claims nothing
(Java sends the emptied assignment as owned partitions); if it claimed its
last assignment, cooperative-sticky would withhold those partitions for a
revocation round that no eager member ever starts (issue 9, item 1).
"""
import pytest

from kgroup.assignors import RebalanceProtocol, get_assignor
from kgroup.core import messages as m
from kgroup.core.member import MemberConfig
from kgroup.values import TopicPartition
from kgroup.wire.consumer_protocol import decode_subscription
from kgroup.wire.sticky_user_data import decode_sticky_user_data

from member_fakes import Harness, InProcessGroup

REAL_CODEC = True
UPGRADE_PATH = ("cooperative-sticky", "range")


def upgrade_path_assignors():
    return tuple(get_assignor(name) for name in UPGRADE_PATH)


def test_members_listing_cooperative_sticky_and_range_are_eager():
    config = MemberConfig(group_id="g", assignors=upgrade_path_assignors())
    assert config.protocol is RebalanceProtocol.EAGER


def test_eager_member_claims_no_owned_partitions_but_keeps_its_sticky_hint():
    h = Harness(assignors=(get_assignor("sticky"),))
    h.join([TopicPartition("t", 0), TopicPartition("t", 1)], generation=3)
    h.member.request_rejoin("test")
    h.member.on_app_poll(h.now)
    h.member.take_events()
    h.member.on_app_poll(h.now)
    [join] = [r for r in h.pump() if isinstance(r, m.JoinGroupRequest)]
    subscription = decode_subscription(join.protocols[0].metadata)
    assert subscription.owned_partitions == ()
    owned, generation = decode_sticky_user_data(subscription.user_data)
    assert sorted(owned) == [TopicPartition("t", 0), TopicPartition("t", 1)] and generation == 3


@pytest.mark.parametrize("joiners", [2, 3])
def test_upgrade_path_group_converges_with_every_partition_owned(joiners):
    g = InProcessGroup(upgrade_path_assignors)
    g.add("a")
    g.run_until_settled()
    for name in "bcd"[:joiners - 1]:
        g.add(name)
        g.run_until_settled()
    assert sum(g.sizes()) == 6 and max(g.sizes()) - min(g.sizes()) <= 1
    assert not g.ownership.violations
    leaving = g.runners.pop("a")
    leaving.member.close(g.clock.now_ms)
    g.ownership.apply("a", leaving.member.take_events())
    leaving.step(0)
    g.run_until_settled()
    assert sum(g.sizes()) == 6 and not g.ownership.violations


def test_mixed_eager_and_cooperative_members_converge():
    """One member already upgraded (cooperative-sticky only), one still on the upgrade path."""
    g = InProcessGroup(upgrade_path_assignors)
    g.add("eager")
    g.run_until_settled()
    g.assignor_factory = lambda: (get_assignor("cooperative-sticky"),)
    g.add("cooperative")
    g.run_until_settled()
    assert g.sizes() == [3, 3] and not g.ownership.violations
