"""Regression tests for the kafka-python drop-in (items 25, 26, 27, 30, 33).

Each test names the stock kafka-python 3.0 / Java behaviour it pins.  No
broker: kgroup's ``ConsumerCoordinator`` runs on a fake kafka-python client
over kgroup's in-memory coordinator (``kafka_python_harness``), and ``KafkaConsumer``
is constructed with a pinned ``api_version`` against an unreachable
bootstrap address (kafka-python then opens no connection while building).
"""
from __future__ import annotations

import subprocess
import sys
import threading

import kafka.errors as Errors
import pytest
from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kafka.structs import OffsetAndMetadata, TopicPartition
from kafka_python_harness import RecordingListener, poll_until, poll_until_stable, subscribed_state

import kgroup.errors as kg
from kgroup.core import messages as m
from kgroup.core.member import MemberConfig
from kgroup.io.kafka_python.convert import error_code

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
UNREACHABLE = dict(bootstrap_servers="127.0.0.1:1", api_version=(2, 5, 0), request_timeout_ms=1_000)


def dropin_consumer(**configs):
    from kgroup.io.kafka_python.consumer import KafkaConsumer

    return KafkaConsumer(**dict(UNREACHABLE, **configs))


# -- 25: an application's own kafka-python assignor ------------------------------


class EverythingToFirst(AbstractPartitionAssignor):
    """A user's assignor: every partition to the lowest member id; records what kafka-python calls."""

    name = "everything-to-first"

    def __init__(self):
        self.assign_calls = []
        self.assignments = []

    def metadata(self, topics):
        return ConsumerProtocolSubscription(version=0, topics=sorted(topics), user_data=b"user-bytes")

    def assign(self, cluster, members):
        self.assign_calls.append({mb.member_id: mb.metadata.user_data for mb in members})
        first = min(mb.member_id for mb in members)
        topics = sorted({t for mb in members for t in mb.metadata.topics})
        everything = [(t, sorted(cluster.partitions_for_topic(t))) for t in topics]
        return {
            mb.member_id: ConsumerProtocolAssignment(
                0, everything if mb.member_id == first else [], b"for-" + mb.member_id.encode()[:4])
            for mb in members
        }

    def on_assignment(self, assignment, generation):
        self.assignments.append(
            (sorted(assignment.partitions()), bytes(assignment.user_data or b""), generation))


def test_user_assignor_class_is_accepted_like_stock():
    """Stock kafka-python instantiates any AbstractPartitionAssignor subclass it is given."""
    consumer = dropin_consumer(group_id="g", partition_assignment_strategy=[EverythingToFirst])
    consumer.close()


def test_user_assignor_runs_assign_metadata_and_on_assignment(make_coordinator):
    """kafka-python ConsumerCoordinator: metadata() on join, assign() when leading,
    on_assignment() after sync."""
    first, second = EverythingToFirst(), EverythingToFirst()
    a = make_coordinator(assignors=[first])
    b = make_coordinator(assignors=[second])
    poll_until_stable(a, b)
    poll_until(lambda: first.assignments and second.assignments
               and a.group_metadata().generation_id == b.group_metadata().generation_id,
               a, b, what="both assigned")
    assign_calls = first.assign_calls + second.assign_calls
    assert assign_calls and all(set(c.values()) == {b"user-bytes"} for c in assign_calls)
    owners = {c: set(c._subscription.assigned_partitions()) for c in (a, b)}
    winner = min((a, b), key=lambda c: c.group_metadata().member_id)
    assert owners[winner] == {T0, T1} and sum(len(p) for p in owners.values()) == 2
    generation = winner.group_metadata().generation_id
    for coordinator, assignor in ((a, first), (b, second)):
        partitions, user_data, gen = assignor.assignments[-1]
        assert set(partitions) == owners[coordinator] and gen == generation
        assert user_data == b"for-" + coordinator.group_metadata().member_id.encode()[:4]


def test_kafka_pythons_own_assignor_gets_on_assignment(make_coordinator):
    """Stock calls on_assignment on the chosen assignor, its own classes included
    (StickyPartitionAssignor keeps its state there)."""
    sticky = StickyPartitionAssignor()
    c = make_coordinator(assignors=[sticky])
    poll_until_stable(c)
    assert sorted(sticky.member_assignment) == [T0, T1]
    assert sticky.generation == c.group_metadata().generation_id


def test_failing_user_assignor_is_raised_from_poll(make_coordinator):
    """A leader whose assignor raises cannot complete the rebalance: raised from poll()
    (kgroup: the member fails for good, see docs "Departures from stock kafka-python")."""

    class Broken(EverythingToFirst):
        def assign(self, cluster, members):
            raise RuntimeError("assignor bug")

    c = make_coordinator(assignors=[Broken()])
    with pytest.raises(Errors.KafkaError, match="assignor bug") as info:
        poll_until(lambda: False, c, timeout_s=3.0)
    assert isinstance(info.value, kg.GroupMemberError)
    assert isinstance(info.value.__cause__, RuntimeError)


# -- 26: listener calls once per rebalance, empty or not -------------------------


def test_eager_first_join_calls_revoked_with_nothing_then_assigned(make_coordinator):
    """kafka-python 3.0 ConsumerCoordinator._on_join_prepare (EAGER) calls on_partitions_revoked(set())."""
    listener = RecordingListener()
    c = make_coordinator(subscription=subscribed_state(listener=listener))
    poll_until_stable(c)
    assert listener.calls == [("revoked", set()), ("assigned", {T0, T1})]


def test_eager_member_assigned_nothing_still_hears_of_the_rebalance(make_coordinator):
    """Java onJoinComplete / kafka-python _on_join_complete: on_partitions_assigned even when empty."""
    listeners = [RecordingListener(), RecordingListener()]
    a, b = (make_coordinator(subscription=subscribed_state(listener=x), partitions={"t": 1})
            for x in listeners)
    poll_until(lambda: all(any(k == "assigned" for k, _ in x.calls) for x in listeners)
               and a.poll(timeout_ms=0) and b.poll(timeout_ms=0), a, b, what="both members assigned")
    last = [x.calls[-2:] for x in listeners]
    assert sorted(len(x[-1][1]) for x in last) == [0, 1]
    for calls in last:
        assert [kind for kind, _ in calls] == ["revoked", "assigned"]


def test_cooperative_member_assigned_nothing_gets_assigned_but_no_revoked(make_coordinator):
    """Java ConsumerCoordinator.onJoinComplete (COOPERATIVE): onPartitionsAssigned(added) even if empty;
    onPartitionsRevoked only for partitions taken away."""
    listener = RecordingListener()
    lone = make_coordinator(subscription=subscribed_state(listener=listener), partitions={"t": 1},
                            assignors=("cooperative-sticky",))
    other_listener = RecordingListener()
    other = make_coordinator(subscription=subscribed_state(listener=other_listener), partitions={"t": 1},
                             assignors=("cooperative-sticky",))
    poll_until(lambda: any(k == "assigned" for k, _ in listener.calls)
               and any(k == "assigned" for k, _ in other_listener.calls)
               and lone.poll(timeout_ms=0) and other.poll(timeout_ms=0), lone, other, what="both assigned")
    everything = listener.calls + other_listener.calls
    assert ("assigned", set()) in everything          # the member that got nothing heard of it
    assert all(parts for kind, parts in everything if kind == "revoked")   # never revoked(set())


# -- 27: authorization errors keep their class -----------------------------------


def _commit_answer(code):
    return lambda request: m.OffsetCommitResponse(
        [m.PartitionError(p.topic_partition, error_code(code)) for p in request.offsets])


@pytest.mark.parametrize("code, kafka_class", [(29, Errors.TopicAuthorizationFailedError),
                                               (30, Errors.GroupAuthorizationFailedError)])
def test_commit_authorization_failure_is_raised_as_stock(make_coordinator, code, kafka_class):
    """kafka-python ConsumerCoordinator._handle_offset_commit_response raises the code's class."""
    c = make_coordinator(answers={m.OffsetCommitRequest: _commit_answer(code)})
    poll_until_stable(c)
    with pytest.raises(kafka_class) as info:
        c.commit_offsets_sync({T0: OffsetAndMetadata(1, "", -1)})
    assert isinstance(info.value, kg.GroupMemberError) and not info.value.retriable


def test_find_coordinator_group_authorization_failure_is_raised_from_poll(make_coordinator):
    """Java FindCoordinatorResponseHandler / kafka-python: GroupAuthorizationFailedError,
    not endless retries."""
    c = make_coordinator(answers={
        m.FindCoordinatorRequest: lambda request: m.FindCoordinatorResponse(error_code(30), -1, "", -1)})
    with pytest.raises(Errors.GroupAuthorizationFailedError):
        poll_until(lambda: False, c, timeout_s=3.0)
    # The member is done; later calls keep the class the app catches for it.
    with pytest.raises(Errors.GroupAuthorizationFailedError):
        c.poll(timeout_ms=0)


def test_join_group_authorization_failure_is_raised_from_poll(make_coordinator):
    """Java JoinGroupResponseHandler: GROUP_AUTHORIZATION_FAILED → GroupAuthorizationException out of poll."""
    c = make_coordinator(answers={m.JoinGroupRequest: lambda request: m.JoinGroupResponse(
        error_code(30), -1, None, None, "", "", [])})
    with pytest.raises(Errors.GroupAuthorizationFailedError):
        poll_until(lambda: False, c, timeout_s=3.0)


def test_offset_fetch_group_authorization_failure_is_raised(make_coordinator):
    """kafka-python _handle_offset_fetch_response: GroupAuthorizationFailedError."""
    c = make_coordinator(answers={
        m.OffsetFetchRequest: lambda request: m.OffsetFetchResponse(error_code(30), [])})
    with pytest.raises(Errors.GroupAuthorizationFailedError):
        c.fetch_committed_offsets([T0], timeout_ms=3_000)


#: Every code Kafka's group APIs answer with (FindCoordinator, JoinGroup, SyncGroup,
#: Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch in Kafka's Errors / message specs).
GROUP_API_CODES = [3, 7, 12, 14, 15, 16, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 35, 42, 69, 79, 81, 82, 88]


@pytest.mark.parametrize("code", GROUP_API_CODES)
def test_every_group_api_error_code_keeps_kafka_pythons_class(code):
    from kgroup.io.kafka_python.errors import to_kafka_error

    named = error_code(code)
    assert named == code                         # not folded into UNKNOWN_SERVER_ERROR
    dual = to_kafka_error(kg.GroupMemberError("failed", named))
    assert isinstance(dual, Errors.for_code(code))


# -- 30: manual assignment with a group_id commits as a simple consumer ------------


def test_manual_assignment_commits_with_no_generation_and_reads_it_back(make_coordinator):
    """Java ConsumerCoordinator.sendOffsetCommitRequest: without auto-assigned partitions the commit
    carries Generation.NO_GENERATION (-1, "") and no instance id; the coordinator accepts it for an
    Empty group (Kafka GroupMetadataManagerTest.testCommitOffsetInEmptyGroup's simple-consumer case)."""
    from kafka.consumer.subscription_state import SubscriptionState

    state = SubscriptionState()
    state.assign_from_user([T0])
    c = make_coordinator(subscription=state, group_instance_id="static-1")
    assert c.poll(timeout_ms=0) is True          # nothing to join
    c.commit_offsets_sync({T0: OffsetAndMetadata(7, "meta", -1)})
    commits = [r for r in c.transport.sent if isinstance(r, m.OffsetCommitRequest)]
    assert [(r.generation_id, r.member_id, r.group_instance_id) for r in commits] == [(-1, "", None)]
    assert c.fetch_committed_offsets([T0])[T0].offset == 7


# -- 33: configuration errors at construction ------------------------------------

BAD_SETTINGS = [
    ("partition_assignment_strategy", None),
    ("partition_assignment_strategy", "sticky"),
    ("group_id", 123),
    ("group_instance_id", 7),
    ("session_timeout_ms", 6000.5),
]


@pytest.mark.parametrize("option, value", BAD_SETTINGS)
def test_bad_setting_is_a_configuration_error_and_leaves_no_thread(option, value):
    before = set(threading.enumerate())
    with pytest.raises(Errors.KafkaConfigurationError) as info:
        dropin_consumer(**{"group_id": "g", option: value})
    assert isinstance(info.value, kg.ConfigError)
    assert option in str(info.value) and repr(value) in str(info.value)  # the option and the whole value
    assert set(threading.enumerate()) == before


@pytest.mark.parametrize("option, value", [
    ("assignors", None), ("group_id", 123), ("group_instance_id", 7), ("session_timeout_ms", 6000.5),
    ("heartbeat_interval_ms", True), ("rack_id", 3), ("assignors", [object()]), ("assignors", ["nope"]),
])
def test_member_config_rejects_wrong_types_naming_the_option(option, value):
    settings = {"group_id": "g", option: value}
    with pytest.raises(kg.ConfigError, match=option.split("_")[0]):
        MemberConfig(**settings)


@pytest.mark.parametrize("call", ["commit", "commit_async", "committed"])
def test_offset_calls_after_close_raise_like_poll(call):
    """Stock poll() after close raises IllegalStateError('KafkaConsumer is closed')."""
    consumer = dropin_consumer(group_id="g")
    consumer.close()
    args = (T0,) if call == "committed" else ()
    with pytest.raises(Errors.IllegalStateError, match="closed") as info:
        getattr(consumer, call)(*args)
    assert isinstance(info.value, kg.MemberClosedError)
    with pytest.raises(Errors.IllegalStateError, match="closed"):
        consumer.poll()


def test_demo_help_prints_usage_and_exits_zero():
    result = subprocess.run([sys.executable, "-m", "kgroup.demo", "--help"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0
    assert result.stdout.startswith("usage:") and "kgroup demo:" not in result.stdout
