"""The broker seam (kgroup.core.broker): request context on every request, typed errors, listeners.

Kafka passes a ``RequestContext`` (the request header's API version and client
id, and the connection's client address) with every request to the group
coordinator (``GroupCoordinatorService.joinGroup(context, ...)``); the classic
join records ``context.clientId()`` / ``context.clientAddress()`` per member
(DescribeGroups shows them) and branches on ``context.apiVersion()``.
FindCoordinator answers the coordinator's advertised endpoint
(``KafkaApis.handleFindCoordinatorRequest``).
"""
from __future__ import annotations

import attrs
import pytest

from kgroup.core import messages as m
from kgroup.core.broker import (BrokerBackend, BrokerUnreachable, InvalidRequestContextError, RequestContext,
                                UnsupportedRequestError, with_context)
from kgroup.core.cluster import ClusterStateMachine, ClusterConfig
from kgroup.core.cluster.group_hosting import GroupHosting, GroupHostingConfig
from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig
from kgroup.core.coordinator.standalone import StandaloneCoordinator
from kgroup.core.error_codes import ErrorCode as E
from kgroup.errors import ConfigError, KGroupError
from kgroup.io.inprocess import InProcessHub
from kgroup.io.transport import TransportError
from kgroup.io.clock import MockClock
from kgroup.testing import InMemoryKafka
from kgroup.values import TopicPartition

FAST = GroupCoordinatorConfig(group_min_session_timeout_ms=100, group_initial_rebalance_delay_ms=0)


def _hosting(**cluster_options):
    cluster = ClusterStateMachine(ClusterConfig(**cluster_options))
    return GroupHosting(cluster, GroupHostingConfig(offsets_topic_partitions=3, group_load_time_ms=0,
                                                    coordinator=FAST))


def _join(**fields):
    return m.JoinGroupRequest("g", session_timeout_ms=1000, rebalance_timeout_ms=1000,
                              protocols=(m.JoinGroupProtocol("range", b"x"),), **fields)


class _RecordingBackend:
    """A BrokerBackend that remembers each (request, context) and answers nothing."""

    def __init__(self) -> None:
        self.received: list = []

    def send(self, node_id, request_key, request, now_ms, context=None):
        self.received.append((request, context))
        return []

    def handle_timer(self, now_ms):
        return []

    def get_timer(self):
        return None


# -- the context ---------------------------------------------------------------------------


def test_every_in_process_request_carries_the_transports_context():
    backend = _RecordingBackend()
    hub = InProcessHub(backend, clock=MockClock(0), run_timers=False)
    transport = hub.transport(client_id="billing-consumer")
    requests = [m.FindCoordinatorRequest("g"), m.HeartbeatRequest("g", 1, "m"),
                m.SyncGroupRequest("g", 1, "m"), m.LeaveGroupRequest("g", (m.MemberIdentity("m"),)),
                m.OffsetFetchRequest("g"), m.ListGroupsRequest(), m.DescribeGroupsRequest(("g",))]
    for request in requests:
        transport.send(request)
    assert [r for r, _ in backend.received] == requests
    assert {context for _, context in backend.received} == {RequestContext("billing-consumer", "/127.0.0.1")}


def test_a_join_group_states_its_own_context():
    backend = _RecordingBackend()
    hub = InProcessHub(backend, clock=MockClock(0), run_timers=False)
    join = _join(client_id="c1", client_host="/10.0.0.9", api_version=5)
    hub.transport(client_id="ignored-for-join").send(join)
    [(_, context)] = backend.received
    assert context == RequestContext("c1", "/10.0.0.9", 5)


def test_the_coordinator_records_the_header_of_the_context_not_the_request_body():
    """A wire server builds the context from the request header: the member's client id/host come from it."""
    h = _hosting()
    node = h.coordinator_node("g")
    context = RequestContext("wire-client", "/192.0.2.7", api_version=3)
    answers = {}
    now_ms = 0
    # v3: no MEMBER_ID_REQUIRED round trip, the member is added at once; its answer waits for the HW.
    for delivery in h.send(node, "join", _join(), now_ms, context=context):
        answers[delivery.request_key] = delivery.response
    for _ in range(10):
        if "join" in answers:
            break
        now_ms = h.get_timer()
        answers.update({d.request_key: d.response for d in h.handle_timer(now_ms)})
    assert answers["join"].error_code is E.NONE
    answers.update({d.request_key: d.response
                    for d in h.send(node, "describe", m.DescribeGroupsRequest(("g",)), now_ms)})
    for _ in range(10):
        if "describe" in answers:
            break
        now_ms = h.get_timer()
        answers.update({d.request_key: d.response for d in h.handle_timer(now_ms)})
    [group] = answers["describe"].groups
    [member] = group.members
    assert (member.client_id, member.client_host) == ("wire-client", "/192.0.2.7")


def test_with_context_stamps_join_group_and_leaves_other_requests_alone():
    join = _join(client_id="body", api_version=9)
    stamped = with_context(join, RequestContext("header", "/h", 4))
    assert (stamped.client_id, stamped.client_host, stamped.api_version) == ("header", "/h", 4)
    assert with_context(join, RequestContext("header", "/h")).api_version == 9  # None: the request's own
    assert with_context(join, None) is join
    heartbeat = m.HeartbeatRequest("g", 1, "m")
    assert with_context(heartbeat, RequestContext("header")) is heartbeat
    assert with_context(join, RequestContext.of(join)) is join


@pytest.mark.parametrize("fields", [dict(client_id=None), dict(client_host=7), dict(api_version=-1),
                                    dict(api_version="9")])
def test_a_malformed_context_is_a_typed_error(fields):
    with pytest.raises(InvalidRequestContextError) as caught:
        RequestContext(**fields)
    assert isinstance(caught.value, KGroupError) and isinstance(caught.value, ValueError)


def test_an_unsupported_request_is_a_typed_error_that_the_hub_answers():
    h = _hosting()
    with pytest.raises(UnsupportedRequestError) as caught:
        h.send(h.coordinator_node("g"), "k", object(), 0)
    assert isinstance(caught.value, TypeError)  # what GroupHosting raised before the seam had its own error


def test_backends_implement_the_seam():
    def conforms(backend: BrokerBackend) -> bool:
        return all(callable(getattr(backend, name)) for name in ("send", "handle_timer", "get_timer"))

    assert conforms(_hosting())
    assert conforms(StandaloneCoordinator(GroupCoordinator(FAST)))


def test_unreachable_broker_answers_come_from_the_seam_and_the_hub_turns_them_into_transport_errors():
    kafka = InMemoryKafka(3, clock=MockClock(0), offsets_partitions=3, group_load_time_ms=0)
    transport = kafka.transport()
    transport.send(m.HeartbeatRequest("g", 1, "m"), node_id=99)
    [completion] = transport.poll(0)
    assert isinstance(completion.result, TransportError) and "99" in str(completion.result)
    [delivery] = kafka.hosting.send(99, "k", m.HeartbeatRequest("g", 1, "m"), 0)
    assert delivery.response == BrokerUnreachable(99)


# -- listener addresses ----------------------------------------------------------------------


def test_find_coordinator_answers_the_configured_listener():
    h = _hosting(listeners={1: ("kafka-a.example", 19092), 2: ("kafka-b.example", 29092),
                            3: ("kafka-c.example", 39092)})
    [delivery] = h.send(None, "k", m.FindCoordinatorRequest("g"), 0)
    leader = h.coordinator_node("g")
    assert delivery.response.node_id == leader
    assert (delivery.response.host, delivery.response.port) == h.cluster.config.listener(leader)
    assert delivery.response.host.startswith("kafka-") and delivery.response.port == leader * 10000 + 9092


def test_brokers_without_a_listener_keep_the_default_address():
    h = _hosting(listeners={1: ("only-one", 1)})
    assert h.cluster.config.listener(2) == ("broker-2", 9092)
    [delivery] = _hosting().send(None, "k", m.FindCoordinatorRequest("g"), 0)
    assert delivery.response.host == f"broker-{delivery.response.node_id}" and delivery.response.port == 9092


def test_in_memory_kafka_takes_listeners():
    kafka = InMemoryKafka(2, clock=MockClock(0), offsets_partitions=3, group_load_time_ms=0,
                          listeners={1: ("a", 1111), 2: ("b", 2222)})
    assert kafka.cluster.config.listener(1) == ("a", 1111)
    assert kafka.cluster.config.listeners == ((1, ("a", 1111)), (2, ("b", 2222)))
    hash(kafka.cluster.config)  # the frozen config stays hashable


@pytest.mark.parametrize("listeners", [{1: ("", 9092)}, {1: ("h", 70000)}, {"1": ("h", 1)}, {1: "h:1"}, [1]])
def test_bad_listeners_are_config_errors(listeners):
    with pytest.raises(ConfigError):
        ClusterConfig(listeners=listeners)


def test_standalone_coordinator_answers_its_listener():
    backend = StandaloneCoordinator(GroupCoordinator(FAST), node_id=4, listener=("coord.local", 9093))
    [delivery] = backend.send(None, "k", m.FindCoordinatorRequest("g"), 0)
    assert attrs.astuple(delivery.response)[1:] == (4, "coord.local", 9093)
    default = StandaloneCoordinator(GroupCoordinator(FAST))
    [delivery] = default.send(None, "k", m.FindCoordinatorRequest("g"), 0)
    assert (delivery.response.host, delivery.response.port) == ("in-process", 0)


def test_topic_partition_values_are_kgroups_own_class():
    """Subscriptions and assignments hold kgroup's TopicPartition, even given kafka-python's or tuples."""
    from kafka.structs import TopicPartition as KafkaTopicPartition

    from kgroup.values import Assignment, Subscription

    sub = Subscription(["t"], owned_partitions=[KafkaTopicPartition("t", 0), ("t", 1)])
    assert [type(tp) for tp in sub.owned_partitions] == [TopicPartition, TopicPartition]
    assert Assignment([KafkaTopicPartition("t", 2)]).partitions == (TopicPartition("t", 2),)
