"""The client compatibility matrix: stock clients and kgroup's drop-in in consumer groups on the wire server.

Each cell runs real consumers - kafka-python 3.0, kgroup's ``KafkaConsumer`` (a drop-in for
kafka-python's), confluent-kafka 2.16 (librdkafka, classic group protocol), aiokafka 0.14 and
Apache Kafka's own Java ``KafkaConsumer`` (kafka-clients of the pinned reference version,
``kgroup.testing.apache_kafka.KAFKA_VERSION``) - as child processes (``server_client_worker.py`` or
``java/JavaClientWorker.java``, driven by the ``client_matrix`` fixture in ``conftest.py``)
against a 3-broker :class:`kgroup.server.KafkaServer`.  A crash is a SIGKILL:
the kernel closes the member's sockets and no LeaveGroup is sent, so the coordinator only
learns of it when the session times out (6 s, Kafka's group.min.session.timeout.ms).

Every test asserts the same delivery properties at the end, each a bound that holds on any
run: every record is handed out (with its key and headers, one key in one partition);
a record is handed out again only if no commit past it had succeeded before (duplicates only
inside the uncommitted window); and the rebalance listeners never show a partition owned by
two members at the same instant.
"""
from __future__ import annotations

import pytest

from kgroup.core.coordinator import GroupCoordinatorConfig

KINDS = ("kafka-python", "kgroup", "confluent", "aiokafka")
#: kgroup's KafkaConsumer, stock kafka-python and confluent-kafka in one group.
MIXED = ("kgroup", "kafka-python", "confluent")
#: Apache Kafka's Java consumer with stock kafka-python and confluent-kafka in one group.
MIXED_JAVA = ("java", "kafka-python", "confluent")
#: A static member's session timeout: a bounce (process exit and restart, a few seconds on a busy
#: machine) must fit in it with room to spare.
STATIC_SESSION_TIMEOUT_MS = 30_000

AIOKAFKA_NOT_COOPERATIVE = (
    "aiokafka 0.14 implements only the eager rebalance protocol (no cooperative-sticky assignor, no "
    "incremental rebalance in its coordinator), against any Kafka")


def _cells(kinds):
    return [pytest.param((kind,) * 3, id=kind) for kind in kinds] + [pytest.param(MIXED, id="mixed")]


#: The Java cells (a JVM per member, a second or two each on two cores): three Java members, and
#: Java in a mixed group.
JAVA_CELLS = [pytest.param(("java",) * 3, id="java"), pytest.param(MIXED_JAVA, id="mixed-java")]


def _revoked_count(members, since):
    """Partitions the members' listeners revoked (or lost) after ``since`` (a monotonic time)."""
    return sum(len(e["p"]) for m in members for e in m.listener_events()
               if e["e"] in ("revoked", "lost") and e["t"] > since)


def _finish(matrix, group, topic, members, request):
    """Let the survivors catch up and close, then check the committed offsets and the delivery properties.

    The redeliveries and kafka-python's lost joins go to the test's user_properties (in a JUnit
    report with ``-o junit_family=legacy``)."""
    matrix.wait_caught_up(topic, group)
    for member in members:
        if member.alive:
            member.close()
    matrix.assert_one_clock()
    matrix.assert_every_record_consumed()
    duplicates = matrix.ledger.assert_duplicates_only_uncommitted()
    matrix.ledger.assert_no_partition_owned_twice()
    # Every survivor committed what it consumed before leaving: the group's offsets are the log ends.
    assert matrix.committed(group, topic) == matrix.end_offsets(topic)
    request.node.user_properties += [("redelivered", duplicates), ("lost_joins", matrix.lost_joins(0.0))]


@pytest.mark.parametrize("kinds", _cells(KINDS) + JAVA_CELLS)
def test_a_member_leaves_and_one_crashes_the_rest_take_over(client_matrix, kinds, request):
    """Three members consume with commits; one leaves (LeaveGroup), one is SIGKILLed mid-stream.

    Ported from Kafka's ``OffsetValidationTest.test_consumer_bounce`` / ``test_consumer_failure``
    (tests/kafkatest/tests/client/consumer_test.py: clean and hard shutdowns, "we may have
    duplicates in a hard failure") and ``ConsumerBounceTest``: the survivors take every
    partition over and every record is consumed, duplicates only above the last commit.
    """
    m = client_matrix
    topic, group = "orders", "billing"
    m.create_topic(kinds[0], topic)
    m.produce(kinds[0], topic, 0, 400)
    leaver, survivor, crasher = members = [m.start(kind, topic, group) for kind in kinds]
    m.wait_settled(group, members, "three members to share the partitions")

    leaver.close()
    assert m.server.trace("LeaveGroup", client_id=leaver.client_id), "a dynamic member leaves on close"
    m.wait_settled(group, [survivor, crasher], "the two others to take the leaver's partitions over")

    m.produce(kinds[0], topic, 400, 300)
    # Crash mid-stream: once the crasher has started on the new records (it owns half the partitions).
    second_batch = {f"v{i:04d}" for i in range(400, 700)}

    def crasher_started() -> bool:
        deliveries = m.ledger.deliveries()
        return (any(d[1] == crasher.name and d[5] in second_batch for d in deliveries)
                or second_batch <= {d[5] for d in deliveries})
    m.wait_until(crasher_started, "the crasher to consume some of the new records", group_id=group)
    crasher.crash()
    m.produce(kinds[0], topic, 700, 300)
    # The crasher's partitions stall until its session (6 s) expires; then the survivor takes them.
    m.wait_consumed(1000, group_id=group)
    m.wait_settled(group, [survivor], "the survivor to own every partition")
    assert not m.server.trace("LeaveGroup", client_id=crasher.client_id), "a SIGKILLed member sends nothing"
    _finish(m, group, topic, members, request)


@pytest.mark.parametrize("kind", KINDS + ("java",))
def test_static_member_bounce_within_session_timeout_is_no_rebalance(client_matrix, kind, request):
    """Static members (group.instance.id): a follower and then the leader restart; no new generation.

    Ported from Kafka's ``OffsetValidationTest.test_static_consumer_bounce``
    (tests/kafkatest/tests/client/consumer_test.py: "under static membership, the live consumer
    shall not revoke any current running partitions") and KIP-345: a static member closes
    without LeaveGroup, and rejoining under its instance id within the session timeout gets
    its old assignment back without a rebalance.  The leader's bounce also needs KIP-814
    (JoinGroup's skip_assignment).
    """
    m = client_matrix
    topic, group = "orders", "billing"
    m.create_topic(kind, topic)
    m.produce(kind, topic, 0, 300)
    members = [m.start(kind, topic, group, instance_id=f"instance-{i}", name=f"m{i}-{kind}",
                       session_timeout_ms=STATIC_SESSION_TIMEOUT_MS) for i in range(3)]
    m.wait_settled(group, members, "three static members to share the partitions")
    m.wait_consumed(300, group_id=group)
    m.wait_quiet(group)
    before = m.group(group)
    by_instance = {f"instance-{i}": x for i, x in enumerate(members)}
    leader_instance = before["leader"][0]
    follower_instance = min(i for i in by_instance if i != leader_instance)
    produced = 300
    for instance in (follower_instance, leader_instance):
        bounced = by_instance[instance]
        others = [x for x in members if x is not bounced]
        heard = {x.name: len(x.listener_events()) for x in others}
        owned, since = bounced.owned, m.now()
        bounced.close()
        assert not m.server.trace("LeaveGroup", client_id=bounced.client_id), "static members close silently"
        restarted = m.start(kind, topic, group, instance_id=instance, name=f"{bounced.name}-again",
                            session_timeout_ms=STATIC_SESSION_TIMEOUT_MS)
        members = others + [restarted]
        by_instance[instance] = restarted
        m.wait_until(lambda: restarted.owned == owned, f"{instance} to get its partitions back",
                     group_id=group)
        m.wait_quiet(group)
        after, lost = m.group(group), m.lost_joins(since)
        # A lost join (kafka-python's own race, see server_client_worker) makes a rejoining leader start one.
        assert after["generation"] - before["generation"] <= lost, "a static bounce started a rebalance"
        if not lost:
            assert {x.name: len(x.listener_events()) for x in others} == heard, "the others were disturbed"
        before = after
        assert sorted(i for i, _ in after["members"].values()) == ["instance-0", "instance-1", "instance-2"]
        m.produce(kind, topic, produced, 100)
        produced += 100
        m.wait_consumed(produced, group_id=group)
    _finish(m, group, topic, members, request)


@pytest.mark.parametrize("kinds", _cells(KINDS) + JAVA_CELLS)
def test_cooperative_sticky_converges_in_two_rounds(client_matrix, kinds, request):
    """Members join one by one, then one leaves, with cooperative-sticky (KIP-429).

    After each join the group converges in at most two generations (KIP-429: the round that
    revokes, then the round that hands the revoked partitions out), and a leave in one; only the
    partitions that move are revoked (``PlaintextConsumerTest.testMultiConsumerStickyAssignor``:
    "one partition from each of the early consumers will move", the minimal movement), and the
    listeners' ownership intervals never overlap (``AssignmentValidationTest.test_valid_assignment``
    in tests/kafkatest/tests/client/consumer_test.py starts members one by one and checks that
    "each partition is assigned to exactly one consumer instance").  One more generation is
    allowed per SyncGroup a rejoining leader pre-empted (``ClientMatrix.preempted_syncs``: Kafka's
    classic coordinator does the same) and per join kafka-python lost to its own race
    (``server_client_worker._report_lost_joins``); both are rare and counted from what happened.
    """
    if "aiokafka" in kinds:
        pytest.skip(AIOKAFKA_NOT_COOPERATIVE)
    m = client_matrix
    topic, group = "orders", "billing"
    m.create_topic(kinds[0], topic)
    m.produce(kinds[0], topic, 0, 300)
    members = [m.start(kinds[0], topic, group, strategy="cooperative-sticky")]
    m.wait_settled(group, members, "the first member to own everything")
    # Generations are counted between quiet points: Stable in one generation for a second.
    generation = m.wait_quiet(group)
    # Each joiner takes its share: 3 partitions move to the second member, 2 to the third.
    for kind, moved in zip(kinds[1:], (3, 2)):
        since = m.now()
        members.append(m.start(kind, topic, group, strategy="cooperative-sticky"))
        m.wait_settled(group, members, f"{len(members)} members to converge")
        converged = m.wait_quiet(group)
        rounds, generation = converged - generation, converged
        request.node.user_properties.append((f"rounds_to_{len(members)}_members", rounds))
        extra = m.lost_joins(since) + m.preempted_syncs(since)
        assert 1 <= rounds <= 2 + extra, f"{rounds} rebalances to converge after a join"
        assert _revoked_count(members, since) == moved, "cooperative-sticky revoked more than what moved"
    leaver, since = members.pop(0), m.now()
    leaver.close()
    m.wait_settled(group, members, "the others to take the leaver's partitions")
    rounds = m.wait_quiet(group) - generation
    extra = m.lost_joins(since) + m.preempted_syncs(since)
    assert 1 <= rounds <= 2 + extra, f"{rounds} rebalances to converge after a leave"
    assert _revoked_count(members, since) == 0, "a leave revoked partitions of the survivors"
    m.produce(kinds[0], topic, 300, 300)
    m.wait_consumed(600, group_id=group)
    _finish(m, group, topic, members + [leaver], request)


@pytest.mark.parametrize("kind", KINDS)
def test_coordinator_broker_killed_mid_stream(client_matrix, kind, request):
    """The group coordinator's broker dies while three members consume and commit.

    Ported from Kafka's ``BaseConsumerTest.testCoordinatorFailover`` and
    ``OffsetValidationTest.test_broker_failure`` (tests/kafkatest/tests/client/consumer_test.py):
    the members find the new coordinator, which loaded the group and its offsets from the
    replicated ``__consumer_offsets``; every commit acknowledged before the kill is still
    there, and the group keeps consuming and committing there.
    """
    m = client_matrix
    topic, group = "orders", "billing"
    m.create_topic(kind, topic)
    m.produce(kind, topic, 0, 500)
    members = [m.start(kind, topic, group) for _ in range(3)]
    m.wait_settled(group, members, "three members to share the partitions")
    m.wait_until(lambda: all(m.ledger.events(x.name, "committed") for x in members),
                 "every member to commit", group_id=group)
    generation = m.wait_quiet(group)
    acked = m.acked_commits()
    old = m.server.coordinator_node(group)
    killed_at = m.now()
    m.server.kill_broker(old)
    m.wait_until(lambda: m.server.coordinator_node(group) not in (None, old) and m.group(group) is not None,
                 "a new coordinator to load the group")
    new = m.server.coordinator_node(group)
    committed = m.committed(group, topic)
    assert all(committed.get(p, -1) >= offset for p, offset in acked.items()), (acked, committed)
    # Every partition gets new records (the 40 keys cover all six), so every member has work left.
    m.produce(kind, topic, 500, 500)
    m.wait_consumed(1000, group_id=group)
    # The members keep committing, on the new coordinator.
    m.wait_until(lambda: all(any(e["t"] > killed_at for e in m.ledger.events(x.name, "committed"))
                             for x in members), "every member to commit after the failover", group_id=group)
    commits_on_new = {e.client_id for e in m.server.trace("OffsetCommit")
                      if e.node_id == new and not e.error_code}
    assert {x.client_id for x in members} <= commits_on_new
    # Kafka's test_broker_failure: "Broker failure should not cause a rebalance".
    assert m.wait_quiet(group) - generation <= m.lost_joins(killed_at)
    _finish(m, group, topic, members, request)


#: KIP-848 groups: a short broker heartbeat interval (Kafka's group.consumer.heartbeat.interval.ms)
#: so each handover takes a few hundred ms; the session stays far above a busy machine's pauses.
CONSUMER_PROTOCOL = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0,
                                           consumer_group_heartbeat_interval_ms=200,
                                           consumer_group_session_timeout_ms=10_000)


def _contiguous(partitions) -> bool:
    return not partitions or max(partitions) - min(partitions) + 1 == len(partitions)


@pytest.mark.kafka_broker(brokers=3, coordinator=CONSUMER_PROTOCOL)
@pytest.mark.parametrize("assignor, kinds", [
    pytest.param("uniform", ("java",) * 3, id="uniform-java"),
    pytest.param("range", ("java", "confluent", "kgroup"), id="range-mixed-java"),
])
def test_consumer_protocol_members_join_and_leave(kafka_broker, broker_client_matrix, assignor, kinds,
                                                  request):
    """``group.protocol=consumer`` (KIP-848): members join one by one, then the first leaves.

    Every member asks for the server assignor ``assignor`` (``group.remote.assignor``) and the
    coordinator uses it (ConsumerGroupDescribe's assignor name); ``range`` hands each member one
    contiguous range (Kafka's server-side ``RangeAssignor``).  The handovers are KIP-848's
    incremental ones (revoke, then assign), so the listeners never show a partition owned twice;
    the delivery checks are the classic cells' (``_finish``).
    """
    m = broker_client_matrix
    topic, group = "orders", "billing"
    m.create_topic(kinds[0], topic)
    m.produce(kinds[0], topic, 0, 300)
    members = []
    for kind in kinds:
        members.append(m.start(kind, topic, group, group_protocol="consumer", server_assignor=assignor))
        m.wait_settled(group, members, f"{len(members)} members to share the partitions")
        if len(members) == 1:
            # Every partition committed before the first handover: confluent-kafka 2.16 can rewind a
            # partition it started from auto.offset.reset (see test_kip848_confluent_scenario).
            m.wait_caught_up(topic, group)
        described = kafka_broker.describe_consumer_group(group)
        assert described.assignor_name == assignor
        if assignor == "range":
            assert all(_contiguous(x.owned) for x in members), [sorted(x.owned) for x in members]
    m.produce(kinds[0], topic, 300, 300)
    for member in members:  # every client spoke KIP-848, none fell back to the classic protocol
        assert m.server.trace("ConsumerGroupHeartbeat", client_id=member.client_id), member.name
        assert not m.server.trace("JoinGroup", client_id=member.client_id), member.name
    leaver = members.pop(0)
    leaver.close()
    # close() leaves with a heartbeat at epoch -1 and waits for its answer: the coordinator has
    # already removed the member (it does not wait for the session to expire).
    remaining = {x.client_id for x in kafka_broker.describe_consumer_group(group).members}
    assert remaining == {x.client_id for x in members}
    m.wait_settled(group, members, "the others to take the leaver's partitions")
    m.wait_consumed(600, group_id=group)
    _finish(m, group, topic, members + [leaver], request)
