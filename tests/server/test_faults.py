"""Every fault-injection control of KafkaServer, each shown through what a stock client sees
(kafka-python's KafkaProducer / KafkaConsumer / KafkaAdminClient, or a raw socket), and
the request trace a test asserts on.

No test relies on lucky timing: waits poll a condition up to a generous deadline, and time
assertions are lower bounds that follow from the fault (a delay cannot answer early, a
dropped request must hit the client's own request timeout).

Group consumers are polled with a long timeout (POLL_MS): kafka-python 3.0.12 has a race
where a JoinGroup/SyncGroup round trip that outlives the poll() that started it completes
without re-enabling the member's heartbeats (``join_group_async`` leaves the loop because
``need_rejoin()`` turned False, skipping the "joined" block), so a consumer polled with
50 ms timeouts sometimes stopped heartbeating for good and was expired by the coordinator.
"""
from __future__ import annotations

import socket
import time
from collections import defaultdict
from typing import Callable, Dict, List, Optional

import kafka
import kafka.errors
import pytest
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.structs import TopicPartition

from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.server import KafkaServer, RequestTraceEntry
from kgroup.server.apis import SUPPORTED_VERSIONS
from kgroup.core.error_codes import ErrorCode
from kgroup.io.clock import MockClock

REBALANCE_IN_PROGRESS = 27
#: poll() timeout for group consumers (see the module docstring); poll returns early with records.
POLL_MS = 500
NOT_LEADER_OR_FOLLOWER = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
NOT_COORDINATOR = 16


def wait_until(condition: Callable[[], bool], timeout_s: float = 15.0,
               step: Optional[Callable[[], None]] = None) -> bool:
    """Poll ``condition`` (running ``step`` between checks, e.g. a consumer poll) until it holds."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        if step is not None:
            step()
        else:
            time.sleep(0.01)
    return condition()


def producer(server: KafkaServer, client_id: str, **options) -> kafka.KafkaProducer:
    options.setdefault("retry_backoff_ms", 50)
    options.setdefault("request_timeout_ms", 5_000)
    return kafka.KafkaProducer(bootstrap_servers=server.bootstrap_servers, client_id=client_id, **options)


def consumer(server: KafkaServer, client_id: str, group_id: str, *topics: str,
             **options) -> kafka.KafkaConsumer:
    options.setdefault("auto_offset_reset", "earliest")
    options.setdefault("enable_auto_commit", False)
    return kafka.KafkaConsumer(*topics, bootstrap_servers=server.bootstrap_servers, client_id=client_id,
                               group_id=group_id, heartbeat_interval_ms=100, session_timeout_ms=6_000,
                               retry_backoff_ms=50, **options)


def joined(server: KafkaServer, c: kafka.KafkaConsumer, client_id: str, timeout_s: float = 15.0) -> None:
    """Wait until the consumer has partitions and its group has settled: two good heartbeats
    since its last SyncGroup (kafka-python's leader may assign before it has the topic's
    metadata, and then rejoins once more on its own)."""
    def settled() -> bool:
        trace = server.trace(client_id=client_id)
        syncs = [i for i, e in enumerate(trace) if e.api == "SyncGroup" and e.error_code == 0]
        beats = [e for e in trace[syncs[-1]:] if e.api == "Heartbeat" and e.error_code == 0] if syncs else []
        return bool(c.assignment()) and len(beats) >= 2

    assert wait_until(settled, timeout_s, lambda: c.poll(POLL_MS)), (
        "the consumer never settled in its group: " + ", ".join(
            f"{e.api}@{e.node_id}:{e.error_codes or ''}{e.outcome if e.outcome != 'answered' else ''}"
            for e in server.trace(client_id=client_id) if e.api not in ("Fetch", "Metadata")))


def after(entries: List[RequestTraceEntry], first: RequestTraceEntry) -> List[RequestTraceEntry]:
    return entries[entries.index(first) + 1:]


def all_metadata() -> MetadataRequest:
    return MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False)


def raw_versions() -> ApiVersionsRequest:
    return ApiVersionsRequest(version=3, client_software_name="raw", client_software_version="1")


@pytest.fixture
def closing():
    """Register clients to close after the test, whatever happens."""
    clients: list = []
    yield clients.append
    for client in reversed(clients):
        try:
            client.close(timeout=2) if isinstance(client, kafka.KafkaProducer) else client.close()
        except Exception:
            pass


# -- fail_next ------------------------------------------------------------------------------------


def test_failed_heartbeat_makes_the_consumer_rejoin(server, closing):
    """fail_next("Heartbeat", REBALANCE_IN_PROGRESS): the member rejoins (a new JoinGroup and
    SyncGroup after the failed heartbeat) and gets its partitions back."""
    server.create_topic("t", 3)
    c = consumer(server, "c1", "g", "t")
    closing(c)
    joined(server, c, c.config['client_id'])
    server.fail_next("Heartbeat", REBALANCE_IN_PROGRESS)

    def rejoined() -> bool:
        trace = server.trace(client_id="c1")
        failed = [e for e in trace if e.api == "Heartbeat" and e.error_codes == (REBALANCE_IN_PROGRESS,)]
        return bool(failed) and any(e.api == "SyncGroup" and e.error_code == 0
                                    for e in after(trace, failed[0]))

    assert wait_until(rejoined, step=lambda: c.poll(POLL_MS))
    trace = server.trace(client_id="c1")
    (failed,) = [e for e in trace if e.fault is not None]
    assert failed.fault == "fail with error 27" and failed.outcome == "answered" and failed.group_id == "g"
    rejoin = [e.api for e in after(trace, failed) if e.api in ("JoinGroup", "SyncGroup")]
    assert rejoin[:2] == ["JoinGroup", "SyncGroup"]
    assert wait_until(lambda: len(c.assignment()) == 3, step=lambda: c.poll(POLL_MS))
    assert server.group_state("g") == "Stable"


def test_failed_produce_is_retried_and_lands_once(server, closing):
    """fail_next("Produce", NOT_LEADER_OR_FOLLOWER): the producer refreshes metadata, retries and
    succeeds; the trace shows the error, then the success; the record is in the log once."""
    server.create_topic("t", 1)
    p = producer(server, "p1")
    closing(p)
    p.send("t", b"warm-up").get(10)
    server.fail_next("Produce", NOT_LEADER_OR_FOLLOWER)
    metadata = p.send("t", b"retried").get(10)
    produces = server.trace(api="Produce", client_id="p1")[1:]
    assert [e.error_codes for e in produces] == [(NOT_LEADER_OR_FOLLOWER,), ()]
    assert produces[0].fault == "fail with error 6"
    assert produces[0].correlation_id < produces[1].correlation_id
    assert metadata.offset == 1   # the failed attempt appended nothing


def test_fail_next_for_one_client_id_leaves_other_clients_alone(server, closing):
    server.create_topic("t", 1)
    target, bystander = producer(server, "target"), producer(server, "bystander")
    closing(target)
    closing(bystander)
    server.fail_next("Produce", NOT_LEADER_OR_FOLLOWER, count=2, client_id="target")
    bystander.send("t", b"b").get(10)
    target.send("t", b"t").get(10)
    bystander.send("t", b"b2").get(10)
    assert [e.error_codes for e in server.trace(api="Produce", client_id="target")] == [
        (NOT_LEADER_OR_FOLLOWER,), (NOT_LEADER_OR_FOLLOWER,), ()]
    assert [e.error_codes for e in server.trace(api="Produce", client_id="bystander")] == [(), ()]


def test_fail_next_for_one_group_leaves_other_groups_alone(server, closing):
    """group_id filter: only the member of "g1" is told to rebalance; the member of "g2",
    heartbeating to the server all along, never rejoins."""
    server.create_topic("t", 2)
    one, two = consumer(server, "c-one", "g1", "t"), consumer(server, "c-two", "g2", "t")
    closing(one)
    closing(two)
    joined(server, one, "c-one")
    joined(server, two, "c-two")
    server.fail_next("Heartbeat", REBALANCE_IN_PROGRESS, group_id="g1")
    fault_set = len(server.trace())

    def both_polled() -> None:
        one.poll(POLL_MS // 2)
        two.poll(POLL_MS // 2)

    def done() -> bool:
        recent = server.trace()[fault_set:]
        rejoined = any(e.api == "SyncGroup" and e.group_id == "g1" and e.error_code == 0 for e in recent)
        two_beats = [e for e in recent if e.api == "Heartbeat" and e.group_id == "g2"]
        return rejoined and len(two_beats) >= 3

    assert wait_until(done, step=both_polled)
    recent = server.trace()[fault_set:]
    assert [e.group_id for e in recent if e.error_codes == (REBALANCE_IN_PROGRESS,)] == ["g1"]
    assert [e for e in recent if e.group_id == "g2" and e.api in ("JoinGroup", "SyncGroup")] == []
    assert all(e.error_code == 0 for e in recent if e.group_id == "g2")


def test_failed_offset_commit_sends_the_consumer_to_find_its_coordinator(server, closing):
    """fail_next("OffsetCommit", NOT_COORDINATOR): the commit is retried after a FindCoordinator."""
    server.create_topic("t", 1)
    p = producer(server, "p")
    closing(p)
    p.send("t", b"x").get(10)
    c = consumer(server, "committer", "g", "t")
    closing(c)
    joined(server, c, c.config['client_id'])
    server.fail_next("OffsetCommit", NOT_COORDINATOR)
    c.commit({TopicPartition("t", 0): kafka.OffsetAndMetadata(1, "", -1)})
    trace = server.trace(client_id="committer")
    commits = [e for e in trace if e.api == "OffsetCommit"]
    assert [e.error_codes for e in commits] == [(NOT_COORDINATOR,), ()]
    assert "FindCoordinator" in [e.api for e in trace[trace.index(commits[0]):trace.index(commits[1])]]
    admin = kafka.KafkaAdminClient(bootstrap_servers=server.bootstrap_servers)
    closing(admin)
    assert admin.list_group_offsets("g")["g"][TopicPartition("t", 0)].offset == 1


# -- delay -----------------------------------------------------------------------------------------


def test_delayed_answers_take_at_least_the_delay(server, raw_client):
    server.delay(300, api="Metadata", count=2)
    client = raw_client(server.listener(1))
    for _ in range(2):
        started = time.monotonic()
        assert client.request(all_metadata()).brokers
        assert time.monotonic() - started >= 0.299   # the server's clock is whole milliseconds
    client.request(all_metadata())
    delayed = server.trace(api="Metadata")
    assert [e.fault for e in delayed] == ["delay 300 ms", "delay 300 ms", None]
    assert [e.answered_ms - e.received_ms for e in delayed[:2]] == [300, 300]


def test_delay_slows_a_stock_client(server, closing):
    admin = kafka.KafkaAdminClient(bootstrap_servers=server.bootstrap_servers, client_id="slowed")
    closing(admin)
    admin.list_topics()
    server.delay(400, api="Metadata", client_id="slowed")
    started = time.monotonic()
    admin.list_topics()
    assert time.monotonic() - started >= 0.399
    assert server.trace(api="Metadata", client_id="slowed")[-1].fault == "delay 400 ms"


def test_delay_on_a_mock_clock_answers_exactly_when_time_has_moved(raw_client):
    """With clock=MockClock() a delayed answer leaves only through advance()."""
    with KafkaServer(brokers=1, clock=MockClock(0),
                     coordinator=GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0)) as server:
        server.delay(500, api="ApiVersions", count=1)
        client = raw_client(server.listener(1))
        correlation_id = client.send(raw_versions())
        with pytest.raises(socket.timeout):
            client.recv_frame(timeout_s=0.2)
        server.advance(499)
        with pytest.raises(socket.timeout):
            client.recv_frame(timeout_s=0.2)
        server.advance(1)
        frame = client.recv_frame(timeout_s=5.0)
        assert frame is not None
        (entry,) = server.trace()
        assert (entry.correlation_id, entry.received_ms, entry.answered_ms) == (correlation_id, 0, 500)


def test_removed_and_cleared_rules_stop_applying(server, raw_client):
    client = raw_client(server.listener(1))
    rule = server.delay(100, api="ApiVersions")   # every ApiVersions until removed
    client.request(raw_versions())
    client.request(raw_versions())
    server.remove_fault(rule)
    client.request(raw_versions())
    server.fail_next("ApiVersions", 35, count=None)
    server.clear_faults()
    assert client.request(raw_versions()).error_code == 0
    assert [e.fault for e in server.trace()] == ["delay 100 ms", "delay 100 ms", None, None]


def test_fault_controls_refuse_nonsense(server):
    from kgroup.errors import ConfigError
    with pytest.raises(ConfigError):
        server.fail_next("Heartbeat", 0)
    with pytest.raises(ConfigError):
        server.fail_next("NoSuchApi", 27)
    with pytest.raises(ConfigError):
        server.drop_next("Produce", count=0)
    with pytest.raises(ConfigError):
        server.delay(-1)
    assert server.trace() == []


# -- drop_next, close_on_next, blackhole ------------------------------------------------------------


def test_dropped_request_times_out_in_the_client_which_retries(server, closing):
    """drop_next("Produce"): no answer, so the producer's request times out after its own
    request_timeout_ms; it reconnects and the retry lands (once)."""
    server.create_topic("t", 1)
    p = producer(server, "p", request_timeout_ms=1_000)
    closing(p)
    p.send("t", b"warm-up").get(10)
    server.drop_next("Produce")
    started = time.monotonic()
    metadata = p.send("t", b"dropped-then-retried").get(20)
    assert time.monotonic() - started >= 0.95
    produces = server.trace(api="Produce", client_id="p")[1:]
    assert [(e.outcome, e.fault) for e in produces] == [("dropped", "drop"), ("answered", None)]
    assert produces[0].answered_ms is None
    assert produces[0].connection_id != produces[1].connection_id   # the client gave up on that connection
    assert metadata.offset == 1


def test_dropped_request_on_a_raw_connection_gets_no_answer(server, raw_client):
    server.drop_next("ApiVersions")
    client = raw_client(server.listener(1))
    client.send(raw_versions())
    with pytest.raises(socket.timeout):
        client.recv_frame(timeout_s=0.5)
    assert not client.is_closed_by_server(0.05)   # the connection stays open, like a hung broker
    assert server.trace()[-1].outcome == "dropped"


def test_close_on_next_closes_the_connection_and_the_client_reconnects(server, closing, raw_client):
    server.create_topic("t", 1)
    p = producer(server, "p")
    closing(p)
    p.send("t", b"warm-up").get(10)
    server.close_on_next("Produce")
    assert p.send("t", b"closed-then-retried").get(10).offset == 1
    produces = server.trace(api="Produce", client_id="p")[1:]
    assert [(e.outcome, e.fault) for e in produces] == [("closed", "close"), ("answered", None)]
    assert produces[0].connection_id != produces[1].connection_id
    new_connection = [e.api for e in server.trace(client_id="p")
                      if e.connection_id == produces[1].connection_id]
    assert new_connection[0] == "ApiVersions"   # a fresh handshake
    server.close_on_next("ApiVersions")
    client = raw_client(server.listener(1))
    client.send(raw_versions())
    assert client.recv_frame(timeout_s=5.0) is None


def test_blackhole_swallows_one_client_until_healed(server, closing):
    server.create_topic("t", 1)
    victim, bystander = producer(server, "victim", request_timeout_ms=1_000), producer(server, "bystander")
    closing(victim)
    closing(bystander)
    victim.send("t", b"warm-up").get(10)
    server.blackhole("victim")
    mark = len(server.trace())
    pending = victim.send("t", b"held")
    with pytest.raises(kafka.errors.KafkaTimeoutError):
        pending.get(1.5)   # the producer's request times out after 1 s and its retry is swallowed too
    assert bystander.send("t", b"other").get(10).offset == 1   # everyone else is served

    def victim_requests() -> list:
        return [e for e in server.trace()[mark:] if e.client_id == "victim"]

    # It gives up on the connection after its 1 s request timeout, reconnects, and is swallowed again.
    assert wait_until(lambda: len({e.connection_id for e in victim_requests()}) >= 2)
    assert {(e.outcome, e.fault) for e in victim_requests()} == {("dropped", "drop")}
    server.heal_client("victim")
    assert pending.get(20).offset == 2
    assert server.trace(client_id="victim")[-1].outcome == "answered"


# -- close_connections --------------------------------------------------------------------------------


def test_close_connections_of_a_client(server, closing):
    server.create_topic("t", 1)
    p = producer(server, "p")
    closing(p)
    p.send("t", b"a").get(10)
    before = {e.connection_id for e in server.trace(client_id="p")}
    # At least one, at most every connection it used (kafka-python closes its bootstrap one itself).
    assert 1 <= server.close_connections(client_id="p") <= len(before)
    assert server.close_connections(client_id="p") == 0   # all gone
    assert server.close_connections(client_id="nobody") == 0
    assert p.send("t", b"b").get(10).offset == 1
    fresh = [e for e in server.trace(client_id="p") if e.connection_id not in before]
    assert fresh and fresh[0].api == "ApiVersions"


def test_close_connections_to_a_broker(server, raw_client):
    one, two = raw_client(server.listener(1)), raw_client(server.listener(2))
    one.request(raw_versions())
    two.request(raw_versions())
    assert server.close_connections(node_id=1) == 1
    assert one.is_closed_by_server(5.0)
    assert two.request(raw_versions()).error_code == 0
    again = raw_client(server.listener(1))   # the listener itself is fine
    assert again.request(raw_versions()).error_code == 0


# -- brokers -------------------------------------------------------------------------------------------


def test_kill_broker_refuses_connections_and_clients_fail_over(server, raw_client, closing):
    """kill_broker(leader of t-0 and coordinator of the group): its listener refuses, its open
    connections drop, the producer moves to the new leader, the consumer finds the new
    coordinator, and nothing acknowledged or committed is lost."""
    server.create_topic("t", 1)
    victim_node = server.partition_leader("t", 0)
    group = next(g for g in (f"g{i}" for i in range(1_000)) if server.coordinator_node(g) == victim_node)
    p = producer(server, "p")
    closing(p)
    for i in range(5):
        p.send("t", b"before-%d" % i)
    p.flush(10)
    c = consumer(server, "c", group, "t")
    closing(c)
    seen: Dict[bytes, int] = defaultdict(int)

    def consume() -> None:
        for records in c.poll(POLL_MS).values():
            for record in records:
                seen[record.value] += 1

    assert wait_until(lambda: len(seen) == 5, step=consume)
    c.commit()
    open_connection = raw_client(server.listener(victim_node))
    open_connection.request(raw_versions())
    mark = len(server.trace())

    server.kill_broker(victim_node)
    assert open_connection.is_closed_by_server(5.0)
    host, port = server.listener(victim_node).rsplit(":", 1)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, int(port)), timeout=2).close()
    assert server.coordinator_node(group) not in (None, victim_node)
    for i in range(5):
        p.send("t", b"after-%d" % i)
    p.flush(20)
    assert wait_until(lambda: len(seen) == 10, step=consume)
    c.commit()
    assert all(count == 1 for count in seen.values())
    recent = server.trace()[mark:]
    assert not any(e.node_id == victim_node for e in recent)
    new_coordinator = server.coordinator_node(group)
    assert any(e.api == "FindCoordinator" and e.client_id == "c" for e in recent)
    assert any(e.api == "OffsetCommit" and e.node_id == new_coordinator and e.error_code == 0 for e in recent)
    admin = kafka.KafkaAdminClient(bootstrap_servers=server.bootstrap_servers)
    closing(admin)
    assert admin.list_group_offsets(group)[group][TopicPartition("t", 0)].offset == 10


def test_restart_broker_listens_again_on_the_same_port(server, raw_client):
    address = server.listener(2)
    server.kill_broker(2)
    host, port = address.rsplit(":", 1)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, int(port)), timeout=2).close()
    survivor = raw_client(server.listener(1))
    metadata = MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False)
    assert sorted(b.node_id for b in survivor.request(metadata).brokers) == [1, 3]
    server.restart_broker(2)
    assert server.listener(2) == address
    client = raw_client(address)
    assert client.request(raw_versions()).error_code == 0
    assert sorted(b.node_id for b in survivor.request(metadata).brokers) == [1, 2, 3]


def test_isolated_broker_closes_what_reaches_it_and_clients_move_on(server, raw_client, closing):
    server.create_topic("t", 1)
    leader = server.partition_leader("t", 0)
    p = producer(server, "p")
    closing(p)
    p.send("t", b"before").get(10)
    server.isolate_broker(leader)
    cut_off = raw_client(server.listener(leader))   # TCP still connects: the process is up
    cut_off.send(raw_versions())
    assert cut_off.recv_frame(timeout_s=5.0) is None   # but the request is not answered
    assert server.partition_leader("t", 0) != leader
    assert p.send("t", b"during").get(20).offset == 1
    survivor = raw_client(server.listener(server.partition_leader("t", 0)))
    brokers = survivor.request(all_metadata()).brokers
    assert leader not in [b.node_id for b in brokers]
    server.heal_broker(leader)
    healed = raw_client(server.listener(leader))
    assert healed.request(raw_versions()).error_code == 0


# -- trace -----------------------------------------------------------------------------------------------


def test_trace_records_every_request_and_answer(server, closing):
    server.create_topic("t", 2)
    p = producer(server, "trace-p")
    closing(p)
    for i in range(4):
        p.send("t", b"%d" % i)
    p.flush(10)
    c = consumer(server, "trace-c", "trace-g", "t")
    closing(c)
    got: list = []
    assert wait_until(lambda: len(got) >= 4, step=lambda: [got.extend(r) for r in c.poll(POLL_MS).values()])
    server.fail_next("Metadata", 3, client_id="trace-p")
    p.partitions_for("brand-new")  # its first Metadata request fails, a retry auto-creates the topic
    trace = server.trace()
    assert {e.client_id for e in trace} >= {"trace-p", "trace-c"}
    apis = {e.api for e in trace}
    assert {"ApiVersions", "Metadata", "Produce", "FindCoordinator", "JoinGroup", "SyncGroup",
            "Fetch"} <= apis
    per_connection: Dict[int, List[int]] = defaultdict(list)
    for e in trace:
        low, high = SUPPORTED_VERSIONS[next(k for k in SUPPORTED_VERSIONS if k.name == e.api)]
        if e.outcome == "unsupported version":   # kafka-python opens with ApiVersions v4 (KIP-511)
            assert (e.api, e.api_version, e.error_codes) == ("ApiVersions", 4, (35,))
        else:
            assert low <= e.api_version <= high
        per_connection[e.connection_id].append(e.correlation_id)
        assert e.node_id in (1, 2, 3)
        if e.answered_ms is not None:
            assert e.received_ms <= e.answered_ms
        if e.outcome == "answered":
            assert e.answered_ms is not None
    for correlation_ids in per_connection.values():
        assert correlation_ids == sorted(set(correlation_ids)), "correlation ids increase per connection"
    (failed,) = [e for e in server.trace(api="Metadata", client_id="trace-p") if e.fault]
    assert (failed.fault, failed.error_codes, failed.error_code) == ("fail with error 3", (3,), 3)
    assert all(e.group_id == "trace-g" for e in trace if e.api in ("JoinGroup", "SyncGroup", "Heartbeat"))
    produced = [e for e in trace if e.api == "Produce" and e.client_id == "trace-p"]
    assert server.trace(api="produce", client_id="trace-p") == produced
    server.clear_trace()
    assert [e for e in server.trace() if e.client_id == "trace-p"] == []


def test_acks_0_producer_keeps_its_connection_usable(server, closing):
    """Regression: an acks=0 produce (no response) used to leave its connection busy forever,
    so a kafka-python acks=0 producer delivered only its first batch."""
    server.create_topic("t", 1)
    p = producer(server, "fire-and-forget", acks=0)
    closing(p)
    for i in range(5):
        p.send("t", b"%d" % i)
        p.flush(10)
    assert wait_until(lambda: len(server.trace(api="Produce", client_id="fire-and-forget")) == 5)
    assert {e.outcome for e in server.trace(api="Produce")} == {"no response (acks=0)"}
    c = kafka.KafkaConsumer(bootstrap_servers=server.bootstrap_servers, auto_offset_reset="earliest")
    closing(c)
    c.assign([TopicPartition("t", 0)])
    values: list = []
    assert wait_until(lambda: len(values) >= 5,
                      step=lambda: [values.extend(r.value for r in rs) for rs in c.poll(50).values()])
    assert values == [b"%d" % i for i in range(5)]


def test_a_fault_kind_is_an_enum_and_a_bad_one_is_a_config_error():
    from kgroup.errors import ConfigError
    from kgroup.server.faults import FaultAction, WireFaultKind

    assert FaultAction("delay", delay_ms=5).kind is WireFaultKind.DELAY
    assert FaultAction(WireFaultKind.FAIL, error_code=27).describe() == "fail with error 27"
    with pytest.raises(ConfigError, match="must be one of fail, delay, drop, close, got 'explode'"):
        FaultAction("explode")
