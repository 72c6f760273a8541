"""Property: over random joins, leaves, heartbeats, lost responses and clock jumps, no partition is
ever owned by two members at once in the coordinator's books (assigned or pending revocation,
checked by ``assert_invariants`` after every step), nor by two simulated clients that are members.
A client the coordinator fenced (session or rebalance timeout) may still believe it holds
partitions until its next heartbeat, as with Kafka; its commits are refused (the coordinator's own
offset check decides).

The simulated client behaves as Kafka's consumer: it holds exactly the last assignment it received
(revoking what left it at once), reports what it holds (fully, or not at all in an incremental
heartbeat), rejoins at epoch 0 after FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID, and gives its partitions
up as lost when it has not heard from the coordinator for a session timeout.
"""
from __future__ import annotations

from typing import Optional

import attrs
from consumer_group_harness import GROUP, Driver
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import OffsetAndMetadata, OffsetCommitRequest, PartitionOffsetCommit
from kgroup.values import TopicPartition

E = ErrorCode
SESSION_MS = 45_000
MEMBERS = [f"m{i}" for i in range(3)]


@attrs.define
class Client:
    member_id: str
    instance_id: str
    epoch: int = 0
    held: frozenset = frozenset()
    joined: bool = False
    last_heard_ms: int = 0


def _heartbeat(d: Driver, c: Client, full: bool, lose_response: bool, assignor: str, static: bool) -> None:
    if not c.joined:
        fields = dict(rebalance_timeout_ms=10_000, subscribed_topic_names=("a", "b"), topic_partitions=(),
                      server_assignor=assignor)
        response = d.heartbeat(c.member_id, 0, instance_id=c.instance_id if static else None, **fields)
    else:
        owned: Optional[frozenset] = c.held if full else None
        response = d.heartbeat(c.member_id, c.epoch, instance_id=c.instance_id if static else None,
                               topic_partitions=owned)
    if lose_response:
        return
    if response.error_code in (E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID, E.UNRELEASED_INSTANCE_ID,
                               E.FENCED_INSTANCE_ID):
        c.held, c.joined, c.epoch = frozenset(), False, 0  # on_partitions_lost, then rejoin
        return
    assert response.error_code is E.NONE, response
    c.joined, c.epoch, c.last_heard_ms = True, response.member_epoch, d.now_ms
    if response.assignment is not None:
        c.held = frozenset(response.assignment)


def _check_clients(d: Driver, clients: dict) -> None:
    for c in clients.values():
        if c.joined and d.now_ms - c.last_heard_ms >= SESSION_MS:
            c.held, c.joined, c.epoch = frozenset(), False, 0  # the client's own session expiry: lost
    group = d.coordinator.consumer_group(GROUP)
    members = group.members if group is not None else {}
    holder: dict[TopicPartition, str] = {}
    for c in clients.values():
        if c.member_id not in members:
            # A zombie (fenced by a timeout it has not noticed yet): whatever it holds, it cannot commit.
            for tp in c.held:
                offsets = (PartitionOffsetCommit(tp, OffsetAndMetadata(0)),)
                commit = OffsetCommitRequest(GROUP, offsets, c.epoch, c.member_id, api_version=9)
                fenced = (group is None
                          or group.validate_offset_commit(commit) is not E.NONE)
                assert fenced, f"zombie {c.member_id} can commit {tp}"
            continue
        for tp in c.held:
            assert tp not in holder, f"{tp} held by members {holder[tp]} and {c.member_id} at {d.now_ms}"
            holder[tp] = c.member_id


operation = st.one_of(
    st.tuples(st.just("heartbeat"), st.sampled_from(MEMBERS), st.booleans(), st.integers(0, 5)),
    st.tuples(st.just("heartbeat"), st.sampled_from(MEMBERS), st.booleans(), st.integers(0, 5)),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS), st.booleans(), st.just(0)),
    st.tuples(st.just("advance"), st.sampled_from([1_000, 5_000, 12_000, 46_000]), st.just(False),
              st.just(0)),
    st.tuples(st.just("grow"), st.sampled_from(["a", "b"]), st.just(False), st.just(0)),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(operation, min_size=1, max_size=60), st.sampled_from(["uniform", "range"]), st.booleans())
# The response asking m1 to revoke is lost; m1 must not lose its partitions before it reports them gone
# (a full heartbeat, then an incremental one that proves nothing).
@example([("heartbeat", "m1", False, 5), ("heartbeat", "m2", False, 5), ("heartbeat", "m1", False, 0),
          ("heartbeat", "m2", False, 5)], "uniform", False)
@example([("heartbeat", "m1", False, 5), ("heartbeat", "m2", False, 5), ("heartbeat", "m1", False, 0),
          ("heartbeat", "m1", False, 1), ("heartbeat", "m2", False, 5)], "uniform", False)
def test_no_partition_has_two_owners(operations, assignor, static):
    d = Driver({"a": 4, "b": 3}, GroupCoordinatorConfig())
    clients = {m: Client(m, f"instance-{m}") for m in MEMBERS}
    for kind, target, flag, roll in operations:
        if kind == "heartbeat":
            # roll 0: the response is lost on the way back; 1-2: incremental; else full.
            _heartbeat(d, clients[target], full=roll > 2, lose_response=roll == 0, assignor=assignor,
                       static=static)
        elif kind == "leave":
            c = clients[target]
            if c.joined:
                epoch = -2 if static and flag else -1
                d.heartbeat(c.member_id, epoch, instance_id=c.instance_id if static else None)
                # A member leaving gives its partitions up first (revoked, or lost).
                c.held, c.joined, c.epoch = frozenset(), False, 0
                if epoch == -2:
                    # A static member comes back under a new member id (a restarted process).
                    clients[target] = Client(f"{target}.{len(d.records)}", c.instance_id)
        elif kind == "advance":
            d.advance(target)
        else:
            d.topics[target] += 1
        _check_clients(d, clients)
    d.assert_replays()
