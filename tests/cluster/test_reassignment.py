from kgroup.core.cluster import ClusterStateMachine, ClusterConfig, ReplicaState


def test_seed_001_reassignment_table():
    c = ClusterStateMachine(ClusterConfig(broker_ids=(1, 2, 3, 4, 5, 6)))
    c.create_topic("t", 1, assignments=[[1, 2, 3]])
    for i in range(5):
        c.produce("t", 0, i)
    c.replicate(10)
    c.replicate(20)
    r = c.reassign_partition("t", 0, [4, 5, 6])
    epoch_after_start = c.partition("t", 0).leader_epoch
    c.replicate(30)
    c.replicate(40)
    seen = {s.step: (set(s.assigned), s.leader, set(s.isr)) for s in r.steps}
    all6 = {1, 2, 3, 4, 5, 6}
    assert seen[0] == ({1, 2, 3}, 1, {1, 2, 3})
    assert seen[2] == (all6, 1, {1, 2, 3})
    assert seen[4] == (all6, 1, all6)
    assert seen[7] == (all6, 4, all6)
    assert seen[8] == (all6, 4, {4, 5, 6})
    assert seen[10] == ({4, 5, 6}, 4, {4, 5, 6})
    assert [s.step for s in r.steps] == list(range(13))
    p = c.partition("t", 0)
    assert p.assigned == [4, 5, 6] and set(p.logs) == {4, 5, 6}
    assert p.leader_epoch == epoch_after_start + 1
    assert [e.payload for e in p.logs[4].entries] == [0, 1, 2, 3, 4]
    assert all(p.replica_states[b].state is ReplicaState.ONLINE for b in (4, 5, 6))
    assert not c.reassignments


def test_reassignment_waits_for_catch_up():
    c = ClusterStateMachine(ClusterConfig(broker_ids=(1, 2, 3, 4)))
    c.create_topic("t", 1, assignments=[[1, 2, 3]])
    c.slow_follower(4, 10_000)
    c.replicate(0)  # 4 fetches once now ...
    r = c.reassign_partition("t", 0, [2, 3, 4])
    c.produce("t", 0, "x")
    c.replicate(100)  # ... but not again for 10 s, so it lacks "x"
    assert not r.done and 4 not in c.partition("t", 0).isr
    c.slow_follower(4, None)
    c.replicate(200)
    assert r.done and c.partition("t", 0).leader == 2
