"""The member with kgroup's real ConsumerProtocol bytes and assignors against the coordinator."""
import pytest

pytest.importorskip("kgroup.wire.consumer_protocol")

from kgroup.assignors import get_assignor  # noqa: E402

from member_fakes import InProcessGroup as Group  # noqa: E402

REAL_CODEC = True


@pytest.mark.parametrize("name", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_real_assignor_and_codec_balance_a_group(name):
    g = Group(lambda: get_assignor(name))
    for member in "abc":
        g.add(member)
    g.run_until_settled()
    assert g.sizes() == [2, 2, 2]
    assert not g.ownership.violations
