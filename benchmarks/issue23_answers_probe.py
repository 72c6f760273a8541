"""What kgroup answers for the eight divergences of issue 23 (items 7-14), printed one line each.

Items 7-10 go over real loopback sockets to a 1-broker ``KafkaServer`` with kafka-python 3.0's
admin client and raw requests; items 11-14 drive the in-memory coordinator directly.  Run it
against any checkout to compare (the path form works for a checkout without this file)::

    PYTHONPATH=$PWD python benchmarks/issue23_answers_probe.py
    PYTHONPATH=/path/to/older/checkout python benchmarks/issue23_answers_probe.py
"""
from __future__ import annotations

import socket
import struct
import time
from typing import Any, Callable


def _line(item: str, what: str, answer: Callable[[], Any]) -> None:
    try:
        value = answer()
    except Exception as error:  # a probe reports what happened, whatever it was
        value = f"raised {type(error).__name__}: {error}"
    print(f"{item:>3}  {what}: {value}")


def _raw(address: str, request: Any) -> Any:
    """One request on a fresh socket, decoded with kafka-python's response class."""
    import sys
    host, port = address.split(",")[0].rsplit(":", 1)
    request.with_header(correlation_id=1, client_id="probe")
    body = bytes(request.encode(header=True))
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        data = b""
        while len(data) < size:
            data += sock.recv(size - len(data))
    module = sys.modules[type(request).__module__]
    response_cls = getattr(module, type(request).__name__.replace("Request", "Response"))
    return response_cls.decode(data, version=request.API_VERSION, header=True)


def wire_items() -> None:
    import kafka
    from kafka.protocol.admin import CreateTopicsRequest
    from kafka.protocol.consumer import OffsetCommitRequest
    from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
    from kafka.structs import OffsetAndMetadata, TopicPartition

    from kgroup.core.coordinator import GroupCoordinatorConfig
    from kgroup.server import KafkaServer

    config = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0)
    with KafkaServer(brokers=1, coordinator=config) as server:
        server.create_topic("t", partitions=2)
        bootstrap = server.bootstrap_servers
        time.sleep(1.0)  # the coordinators load their __consumer_offsets partitions (100 ms by default)
        admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
        try:
            commit_topic = OffsetCommitRequest.OffsetCommitRequestTopic
            commit_partition = commit_topic.OffsetCommitRequestPartition
            commit = OffsetCommitRequest(
                version=8, group_id="g", generation_id_or_member_epoch=-1, member_id="",
                group_instance_id=None, topics=[commit_topic(version=8, name=name, partitions=[
                    commit_partition(version=8, partition_index=p, committed_offset=5,
                                     committed_metadata="")])
                    for name, p in (("missing", 0), ("t", 7), ("t", 0))])
            _line("7", "OffsetCommit v8 missing-0 / t-7 / t-0", lambda: [
                (t.name, p.partition_index, p.error_code) for t in _raw(bootstrap, commit).topics
                for p in t.partitions])
            _line("7", "admin.alter_group_offsets(missing-0, t-1)", lambda: {
                f"{tp.topic}-{tp.partition}": error.__name__ for tp, error in admin.alter_group_offsets(
                    "g2", {TopicPartition("missing", 0): OffsetAndMetadata(5, "", None),
                           TopicPartition("t", 1): OffsetAndMetadata(5, "", None)}).items()})

            creatable = CreateTopicsRequest.CreatableTopic
            for validate_only in (False, True):
                config_entry = creatable.CreatableTopicConfig(version=7, name="dummy.doesntexist", value="x")
                topic = creatable(version=7, name="dummy", num_partitions=1, replication_factor=1,
                                  assignments=[], configs=[config_entry])
                create = CreateTopicsRequest(version=7, timeout_ms=5_000, validate_only=validate_only,
                                             topics=[topic])
                _line("8", f"CreateTopics dummy.doesntexist=x validate_only={validate_only}", lambda: [
                    (r.error_code, r.error_message) for r in _raw(bootstrap, create).topics])
            _line("8", "topic 'dummy' exists afterwards", lambda: "dummy" in admin.list_topics())

            metadata = MetadataRequest(
                version=10, topics=[MetadataRequest.MetadataRequestTopic(version=10, name="t")],
                allow_auto_topic_creation=False, include_cluster_authorized_operations=True,
                include_topic_authorized_operations=True)

            def operations():
                answer = _raw(bootstrap, metadata)
                return answer.topics[0].authorized_operations, answer.authorized_operations
            _line("9", "Metadata v10 topic / cluster authorized operations (bits)", operations)
            _line("9", "admin.describe_topics(['t']) authorized_operations",
                  lambda: admin.describe_topics(["t"])[0].get("authorized_operations"))

            versions = ApiVersionsRequest(version=3, client_software_name="p", client_software_version="1")
            _line("10", "ApiVersions lists OffsetDelete (47)",
                  lambda: any(k.api_key == 47 for k in _raw(bootstrap, versions).api_keys))
            _line("10", "admin.delete_group_offsets(g2: t-1, missing-0)", lambda: {
                f"{tp.topic}-{tp.partition}": error.__name__ for tp, error in admin.delete_group_offsets(
                    "g2", [TopicPartition("t", 1), TopicPartition("missing", 0)]).items()})
            _line("10", "admin.delete_group_offsets(no-such-group)", lambda: admin.delete_group_offsets(
                "no-such-group", [TopicPartition("t", 0)]))
        finally:
            admin.close()


def coordinator_items() -> None:
    from kgroup.assignors.server_base import ServerAssignor
    from kgroup.core.consumer_group.member import ConsumerGroupMember, MemberState
    from kgroup.core.consumer_group_messages import ConsumerGroupHeartbeatRequest
    from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig
    from kgroup.core.consumer_group.records import (
        ConsumerGroupMemberRecord, ConsumerGroupMetadataRecord, ConsumerGroupTargetAssignmentRecord,
    )
    from kgroup.values import TopicPartition

    class Failing(ServerAssignor):
        name = "failing"

        def assign(self, members, partitions_per_topic):
            raise RuntimeError("Assignment failed.")

    def join(coordinator, group_id="g", member_id="m1", **fields):
        fields.setdefault("subscribed_topic_names", ("foo",))
        request = ConsumerGroupHeartbeatRequest(group_id=group_id, member_id=member_id, member_epoch=0,
                                                rebalance_timeout_ms=5000, topic_partitions=(), **fields)
        return coordinator.handle(1, request, 0)

    config = GroupCoordinatorConfig(consumer_group_assignors=("failing",))
    coordinator = GroupCoordinator(config, topic_metadata={"foo": 3}.get,
                                   server_assignors={"failing": Failing()})

    def assignor_raises():
        try:
            result = join(coordinator)
            answer = result.deliveries[0].response
            outcome = f"{answer.error_code.name} ({answer.error_message})"
        except Exception as error:
            outcome = f"raised {type(error).__name__}"
        later = coordinator.handle_timer(0)
        try:
            coordinator.assert_invariants()
            invariants = "hold"
        except Exception as error:
            invariants = f"fail: {error}"
        return (f"{outcome}; groups {coordinator.group_ids()}; records written by the next call: "
                f"{len(later.records)}; invariants {invariants}")
    _line("11", "a server assignor that raises on a join", assignor_raises)

    blank_ids = (("GroupId '   '", dict(group_id="   ")), ("InstanceId '  '", dict(instance_id="  ")),
                 ("RackId ' '", dict(rack_id=" ")), ("MemberId '  '", dict(member_id="  ")))
    for label, fields in blank_ids:
        fresh = GroupCoordinator(topic_metadata={"foo": 3}.get)
        _line("12", f"join with {label}", lambda fresh=fresh, fields=fields: (
            lambda r: f"{r.deliveries[0].response.error_code.name}; groups {fresh.group_ids()!r}")(
                join(fresh, **fields)))

    foo0 = frozenset({TopicPartition("foo", 0)})
    unknown = ConsumerGroupMember("m1", member_epoch=10, previous_member_epoch=9, state=MemberState.UNKNOWN,
                                  subscribed_topic_names=("foo",), rebalance_timeout_ms=5000,
                                  assigned_partitions=foo0)
    loaded = GroupCoordinator.load([ConsumerGroupMetadataRecord("g", 11, 11, (("foo", 3),)),
                                    ConsumerGroupMemberRecord("g", unknown),
                                    ConsumerGroupTargetAssignmentRecord("g", "m1", foo0)],
                                   0, topic_metadata={"foo": 3}.get)

    def unknown_state():
        request = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m1", member_epoch=10,
                                                topic_partitions=(TopicPartition("foo", 0),))
        result = loaded.handle(1, request, 0)
        group = loaded.consumer_group("g")
        return (f"{result.deliveries[0].response.error_code.name}; member still in group: "
                f"{group is not None and 'm1' in group.members}; group epoch "
                f"{group.group_epoch if group else None}; records {len(result.records)}")
    _line("13", "heartbeat of a member in the UNKNOWN state owning foo-0", unknown_state)

    def replay():
        member = ConsumerGroupMember("member", subscribed_topic_names=("foo",))
        replayed = GroupCoordinator.load([ConsumerGroupMemberRecord("foo", member),
                                          ConsumerGroupTargetAssignmentRecord("bar", "m1", frozenset())], 0)
        return f"groups {sorted(replayed.group_ids())}"
    _line("14", "replay of a member record (foo) and a target record (bar) without headers", replay)


if __name__ == "__main__":
    wire_items()
    coordinator_items()
