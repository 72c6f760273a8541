"""KIP-101: truncating to the HW on restart can lose an acknowledged message; leader epochs cannot."""
from kgroup.core.cluster import ClusterConfig, ClusterStateMachine


def _scenario(epoch_truncation: bool):
    c = ClusterStateMachine(ClusterConfig(broker_ids=(1, 2), leader_epoch_truncation=epoch_truncation,
                                          min_insync_replicas=2))
    c.create_topic("t", 1, assignments=[[1, 2]])  # A = 1 leads, B = 2 follows
    c.produce("t", 0, "m1")
    c.replicate(10)
    c.replicate(20)
    c.produce("t", 0, "m2")
    c.replicate(30)  # B fetches m2; the leader's HW becomes 2 and m2 is acknowledged
    acked = [a.payload for a in c.take_acks()]
    p = c.partition("t", 0)
    assert acked == ["m1", "m2"]
    assert p.logs[1].hw == 2 and p.logs[2].hw == 1  # B learns HW 2 only on its next fetch
    c.bounce_broker(2)  # B restarts
    c.kill_broker(1)    # ... and A dies before B fetches again
    assert p.leader == 2 and not p.last_unclean
    c.restart_broker(1)
    c.replicate(40)
    return p


def test_hw_truncation_loses_an_acknowledged_message():
    p = _scenario(epoch_truncation=False)
    assert [e.payload for e in p.logs[2].entries] == ["m1"]
    assert [e.payload for e in p.logs[1].entries] == ["m1"]  # A followed the new leader and lost m2


def test_leader_epoch_truncation_keeps_it():
    p = _scenario(epoch_truncation=True)
    assert [e.payload for e in p.logs[2].entries] == ["m1", "m2"]
    assert [e.payload for e in p.logs[1].entries] == ["m1", "m2"]


def test_divergent_follower_truncates_to_leader_epoch_boundary():
    # Old leader wrote m2 that nobody else got; after the new leader writes m3 at the same offset,
    # the old leader must drop m2 (divergent) and take m3.
    c = ClusterStateMachine(ClusterConfig(broker_ids=(1, 2)))
    c.create_topic("t", 1, assignments=[[1, 2]])
    c.produce("t", 0, "m1")
    c.replicate(10)
    c.produce("t", 0, "m2", acks_all=False)
    c.kill_broker(1)
    c.produce("t", 0, "m3")
    c.restart_broker(1)
    c.replicate(20)
    p = c.partition("t", 0)
    assert [e.payload for e in p.logs[1].entries] == ["m1", "m3"]
    assert p.logs[1].epoch_starts == p.logs[2].epoch_starts
