"""The normaliser and the step comparison of kgroup.broker_conformance."""
from __future__ import annotations

import uuid

from kafka.protocol.admin import DescribeGroupsResponse
from kafka.protocol.consumer import JoinGroupResponse
from kafka.protocol.metadata import FindCoordinatorResponse

from kgroup.broker_conformance.normalise import Normaliser, canonical
from kgroup.broker_conformance.runner import compare_steps
from kgroup.wire.kafka_python import ConsumerGroupHeartbeatResponseStruct


def _join_response(member_id: str, leader: str, members) -> JoinGroupResponse:
    member = JoinGroupResponse.JoinGroupResponseMember
    return JoinGroupResponse(
        version=7, throttle_time_ms=25, error_code=0, generation_id=3, protocol_type="consumer",
        protocol_name="range", leader=leader, member_id=member_id,
        members=[member(version=7, member_id=m, group_instance_id=None, metadata=b"\x01") for m in members])


def test_member_ids_are_numbered_receiver_first_and_throttle_dropped():
    normaliser = Normaliser("abcd")
    follower = _join_response("c-2222", "c-1111", [])
    leader = _join_response("c-1111", "c-1111", ["c-2222", "c-1111"])
    assert normaliser.normalise(follower)["member_id"] == "m1"
    assert normaliser.normalise(follower)["leader"] == "m2"
    second = normaliser.normalise(leader)
    assert second["member_id"] == "m2"
    assert [m["member_id"] for m in second["members"]] == ["m1", "m2"], "lists compare as sorted multisets"
    assert "throttle_time_ms" not in second
    assert second["generation_id"] == 3 and second["protocol_name"] == "range"


def test_run_token_hosts_nodes_and_error_messages_are_replaced():
    normaliser = Normaliser("abcd")
    found = FindCoordinatorResponse(version=3, throttle_time_ms=0, error_code=0, error_message="free text",
                                    node_id=7, host="10.0.0.1", port=9092)
    assert normaliser.normalise(found) == {"error_code": 0, "node_id": "node", "host": "host", "port": "port"}
    missing = FindCoordinatorResponse(version=3, throttle_time_ms=0, error_code=15, error_message=None,
                                      node_id=-1, host="", port=-1)
    assert normaliser.normalise(missing)["node_id"] == -1, "-1 (none) is kept"
    group = DescribeGroupsResponse.DescribedGroup
    described = DescribeGroupsResponse(version=1, throttle_time_ms=0, groups=[group(
        version=1, error_code=0, group_id="cf-abcd-g", group_state="Stable", protocol_type="consumer",
        protocol_data="range", members=[], authorized_operations=-2147483648)])
    value = normaliser.normalise(described)
    assert value["groups"][0]["group_id"] == "cf-RUN-g"


def test_token_inside_bytes_and_topic_ids():
    normaliser = Normaliser("abcd")
    topic_id = uuid.uuid4()
    normaliser.learn_topic_id(topic_id, "cf-abcd-t")
    assignment = ConsumerGroupHeartbeatResponseStruct.Assignment
    answer = ConsumerGroupHeartbeatResponseStruct(
        version=1, throttle_time_ms=0, error_code=0, error_message=None, member_id="x", member_epoch=4,
        heartbeat_interval_ms=500, assignment=assignment(version=1, topic_partitions=[
            assignment.TopicPartitions(version=1, topic_id=topic_id, partitions=[2, 0]),
            assignment.TopicPartitions(version=1, topic_id=uuid.uuid4(), partitions=[1])]))
    value = normaliser.normalise(answer)
    assert value["member_id"] == "m1" and value["member_epoch"] == 4
    assert value["assignment"]["topic_partitions"] == [
        {"topic_id": "id:cf-RUN-t", "partitions": [0, 2]}, {"topic_id": "uuid", "partitions": [1]}]
    assert normaliser._value(b"xxabcdyy", None) == b"xxRUNyy".hex()


def test_compare_steps_names_each_difference():
    expected = [["A JoinGroup v5", {"error_code": 79, "members": []}], ["A Heartbeat v4", {"error_code": 0}]]
    assert compare_steps(expected, [list(s) for s in expected]) == []
    actual = [["A JoinGroup v5", {"error_code": 0, "members": []}]]
    diffs = compare_steps(expected, actual)
    assert diffs[0] == "step 1 A JoinGroup v5: .error_code: expected 79, got 0"
    assert diffs[1].startswith("step 2 A Heartbeat v4: missing")
    assert compare_steps(None, actual) == ["not in the recording"]
    assert compare_steps([["x", 1]], [["y", 1]]) == ["step 1: expected 'x', got 'y'"]
    assert canonical({"b": 1, "a": [1]}) == '{"a":[1],"b":1}'


def test_transaction_markers_lose_their_clock_and_start_times_become_placeholders():
    """A fetched marker is ["control", offset, outcome] (its timestamp is the broker's clock, its
    value the coordinator epoch); DescribeTransactions' start time is "ts" when set, -1 kept."""
    from kafka.protocol.admin.transactions import DescribeTransactionsResponse

    from kgroup.broker_conformance.builders import record_batch
    from kgroup.broker_conformance.normalise import records_of
    from kgroup.server.control_batches import end_txn_marker_batch

    data = record_batch(2, 500)
    for timestamp_ms, coordinator_epoch in ((1_000, 0), (987_654, 7)):
        marker = end_txn_marker_batch(42, 0, False, coordinator_epoch, timestamp_ms).data
        assert records_of(data + marker) == [[0, 500, "6b30", "7630"], [1, 501, "6b31", "7631"],
                                             ["control", 0, "abort"]]
    state = DescribeTransactionsResponse.TransactionState
    answer = DescribeTransactionsResponse(version=0, throttle_time_ms=0, transaction_states=[
        state(version=0, error_code=0, transactional_id="cf-abcd-tx", transaction_state="Ongoing",
              transaction_timeout_ms=60_000, transaction_start_time_ms=1_700_000_000_000, producer_id=5,
              producer_epoch=0, topics=[]),
        state(version=0, error_code=0, transactional_id="cf-abcd-tx2", transaction_state="Empty",
              transaction_timeout_ms=60_000, transaction_start_time_ms=-1, producer_id=6, producer_epoch=0,
              topics=[])])
    values = Normaliser("abcd").normalise(answer)["transaction_states"]
    seen = sorted((v["transactional_id"], v["transaction_start_time_ms"], v["producer_id"]) for v in values)
    assert seen == [("cf-RUN-tx", "ts", "pid"), ("cf-RUN-tx2", -1, "pid")]
