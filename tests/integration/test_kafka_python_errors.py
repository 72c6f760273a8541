"""Errors the drop-in hands to the app are kafka-python's classes and kgroup's.

Three layers:

- the mapping itself (``kgroup.io.kafka_python.errors``), for every kgroup
  error class, no broker;
- kgroup's ``ConsumerCoordinator`` on a fake kafka-python client whose
  transport is kgroup's in-memory group coordinator (no broker): commit
  after eviction, async commit futures and callbacks, a commit while the
  member rejoins, fencing of a static member (which Tansu cannot do);
- ``kgroup.KafkaConsumer`` on Tansu (marker ``broker``): ``commit()`` after
  the member was evicted raises what ``except kafka.errors.CommitFailedError``
  catches, as stock kafka-python does in the same run.
"""
from __future__ import annotations

import inspect
import pickle
import time
import types

import kafka.errors as Errors
import pytest
from kafka.cluster import ClusterMetadata
from kafka.consumer.subscription_state import SubscriptionState
from kafka.structs import OffsetAndMetadata, TopicPartition

import kgroup.errors as kg
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member import CommitCompleted, ClassicMemberState
from kgroup.io.kafka_python import errors as kerr
from kgroup.io.transport import TransportError

# -- the mapping -------------------------------------------------------------

#: (kgroup error, kafka-python class it must also be, retriable)
CASES = [
    (kg.CommitFailedError("commit failed (ILLEGAL_GENERATION)", ErrorCode.ILLEGAL_GENERATION),
     Errors.CommitFailedError, False),
    (kg.CommitFailedError("commit failed (UNKNOWN_MEMBER_ID)", ErrorCode.UNKNOWN_MEMBER_ID),
     Errors.CommitFailedError, False),
    (kg.CommitFailedError("commit failed (REBALANCE_IN_PROGRESS)", ErrorCode.REBALANCE_IN_PROGRESS),
     Errors.CommitFailedError, False),
    (kg.CommitFailedError("commit failed: the member has no generation"), Errors.CommitFailedError, False),
    (kg.FencedInstanceIdError("fenced", ErrorCode.FENCED_INSTANCE_ID), Errors.FencedInstanceIdError, False),
    (kg.RetriableCommitFailedError("r", ErrorCode.NOT_COORDINATOR), Errors.NotCoordinatorError, True),
    (kg.RetriableCommitFailedError("r", ErrorCode.COORDINATOR_NOT_AVAILABLE),
     Errors.CoordinatorNotAvailableError, True),
    (kg.RetriableCommitFailedError("r", ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
     Errors.CoordinatorLoadInProgressError, True),
    (kg.RetriableCommitFailedError("r", ErrorCode.REQUEST_TIMED_OUT), Errors.RequestTimedOutError, True),
    (kg.RetriableCommitFailedError("r", ErrorCode.UNSTABLE_OFFSET_COMMIT),
     Errors.UnstableOffsetCommitError, True),
    (kg.RetriableCommitFailedError("commit failed: transport error"), Errors.RetriableError, True),
    (kg.GroupMemberError("join failed", ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
     Errors.InconsistentGroupProtocolError, False),
    (kg.GroupMemberError("commit failed", ErrorCode.OFFSET_METADATA_TOO_LARGE),
     Errors.OffsetMetadataTooLargeError, False),
    (kg.GroupMemberError("commit failed", ErrorCode.UNKNOWN_SERVER_ERROR), Errors.UnknownError, False),
    (kg.GroupMemberError("join failed", ErrorCode.GROUP_MAX_SIZE_REACHED),
     Errors.GroupMaxSizeReachedError, False),
    # KIP-848 ConsumerGroupHeartbeat's fatal answers, each with its kgroup class.
    (kg.UnsupportedAssignorError("no such server assignor", ErrorCode.UNSUPPORTED_ASSIGNOR),
     Errors.UnsupportedAssignorError, False),
    (kg.GroupMaxSizeReachedError("full", ErrorCode.GROUP_MAX_SIZE_REACHED),
     Errors.GroupMaxSizeReachedError, False),
    (kg.UnreleasedInstanceIdError("held", ErrorCode.UNRELEASED_INSTANCE_ID),
     Errors.UnreleasedInstanceIdError, False),
    # 30 as a bare int, not an ErrorCode member: mapped by its number
    (kg.GroupMemberError("denied", 30), Errors.GroupAuthorizationFailedError, False),
    (kg.GroupMemberError("no code"), Errors.KafkaError, False),
    (kg.MemberClosedError("the group member is closed"), Errors.IllegalStateError, False),
    (kg.ConfigError("bad"), Errors.KafkaConfigurationError, False),
    (kg.UnknownAssignorError("nope", ["range"]), Errors.KafkaConfigurationError, False),
    (kg.InvalidProtocolMetadata("assignment", "truncated"), Errors.KafkaProtocolError, False),
    (kg.IllegalStateTransition("member", ClassicMemberState.STABLE, ClassicMemberState.COMPLETING_REBALANCE),
     Errors.IllegalStateError, False),
    (kg.ProtocolError("Stable", object(), "unknown member"), Errors.IllegalStateError, False),
    (kg.ClusterError("no such topic", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
     Errors.UnknownTopicOrPartitionError, True),
    (kg.ClusterError("refused"), Errors.KafkaError, False),
    (TransportError("kafka-python network client unavailable"), Errors.KafkaConnectionError, True),
    # The in-memory cluster's transactional producer (kgroup.testing), as kafka-python's producer raises.
    (kg.ProducerFencedError("fenced", ErrorCode.PRODUCER_FENCED), Errors.ProducerFencedError, False),
    (kg.TransactionAbortableError("abort it"), Errors.TransactionAbortableError, False),
    (kg.TransactionStateError("send outside a transaction"), Errors.IllegalStateError, False),
    (kg.ProducerTimeoutError("max_block_ms passed"), Errors.KafkaTimeoutError, True),
    (kg.TransactionError("refused", ErrorCode.INVALID_TXN_STATE), Errors.InvalidTxnStateError, False),
    (kg.TransactionError("refused"), Errors.KafkaError, False),
    (kg.KGroupError("anything else"), Errors.KafkaError, False),
]


def _ids(case):
    error, kafka_cls, _ = case
    return f"{type(error).__name__}-{kafka_cls.__name__}"


def test_every_kgroup_error_class_has_a_case():
    classes = {c for _, c in inspect.getmembers(kg, inspect.isclass) if issubclass(c, kg.KGroupError)}
    classes.add(TransportError)
    assert classes <= {type(error) for error, _, _ in CASES}


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_mapping_is_both_classes_and_keeps_everything(case):
    error, kafka_cls, retriable = case
    try:
        raise error from ValueError("root cause")
    except kg.KGroupError as exc:
        traceback = exc.__traceback__
    dual = kerr.to_kafka_error(error)
    # kafka-python code catches it ...
    assert isinstance(dual, kafka_cls) and isinstance(dual, Errors.KafkaError)
    # ... and so does kgroup code, with the original (most specific) class.
    assert isinstance(dual, type(error)) and isinstance(dual, kg.KGroupError)
    assert dual.retriable is retriable
    assert dual.args == error.args
    assert getattr(dual, "error_code", None) == getattr(error, "error_code", None)
    assert vars(dual) == vars(error)
    assert isinstance(dual.__cause__, ValueError) and dual.__cause__ is error.__cause__
    assert dual.__traceback__ is traceback
    if issubclass(kafka_cls, Errors.BrokerResponseError):
        assert dual.errno == kafka_cls.errno
    # Reads like kafka-python's own error (class name first, errno for broker errors).
    assert type(dual).__name__ == kafka_cls.__name__ or type(dual).__name__ == type(error).__name__
    assert error.args[0] in str(dual) if isinstance(error.args[0], str) else True


def test_mapping_is_idempotent_and_leaves_other_errors_alone():
    dual = kerr.to_kafka_error(kg.CommitFailedError("x"))
    assert kerr.to_kafka_error(dual) is dual
    stock = Errors.CommitFailedError()
    assert kerr.to_kafka_error(stock) is stock
    other = TypeError("offsets must be dict[TopicPartition, OffsetAndMetadata]")
    assert kerr.to_kafka_error(other) is other


def test_dual_classes_are_stable_and_look_like_kafka_pythons():
    a = kerr.to_kafka_error(kg.RetriableCommitFailedError("a", ErrorCode.NOT_COORDINATOR))
    b = kerr.to_kafka_error(kg.RetriableCommitFailedError("b", ErrorCode.NOT_COORDINATOR))
    assert type(a) is type(b)
    assert str(a) == "[Error 16] NotCoordinatorError: a"
    assert str(kerr.to_kafka_error(kg.CommitFailedError("gone"))) == "CommitFailedError: gone"
    # Like every kafka.errors.KafkaError: equal by class and args.
    assert a == kerr.to_kafka_error(kg.RetriableCommitFailedError("a", ErrorCode.NOT_COORDINATOR))


def test_static_dual_classes_construct_like_kgroups_and_pickle():
    error = kerr.CommitFailedError("commit failed", ErrorCode.ILLEGAL_GENERATION)
    assert error.error_code is ErrorCode.ILLEGAL_GENERATION
    assert isinstance(error, kg.CommitFailedError) and isinstance(error, Errors.CommitFailedError)
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is kerr.CommitFailedError and again.error_code is ErrorCode.ILLEGAL_GENERATION
    assert isinstance(kerr.FencedInstanceIdError("f"), Errors.FencedInstanceIdError)


def test_commit_refused_while_rejoining_is_rebalance_in_progress_as_in_stock():
    # Stock raises RebalanceInProgressError (not CommitFailedError) for a commit
    # made while the consumer rejoins; a broker's REBALANCE_IN_PROGRESS answer to
    # a commit sent while stable is CommitFailedError in both.
    for code in (None, ErrorCode.REBALANCE_IN_PROGRESS):
        dual = kerr.to_kafka_error(kg.CommitFailedError("no generation", code), rebalancing=True)
        assert isinstance(dual, Errors.RebalanceInProgressError) and isinstance(dual, kg.CommitFailedError)
        assert not isinstance(dual, Errors.CommitFailedError)
    dual = kerr.to_kafka_error(kg.CommitFailedError("gone", ErrorCode.ILLEGAL_GENERATION), rebalancing=True)
    assert isinstance(dual, Errors.CommitFailedError)


def test_sync_commit_out_of_retries_is_a_timeout_as_in_stock():
    dual = kerr.to_kafka_error(kg.RetriableCommitFailedError("r", ErrorCode.NOT_COORDINATOR), timed_out=True)
    assert isinstance(dual, Errors.KafkaTimeoutError) and isinstance(dual, kg.RetriableCommitFailedError)
    assert dual.retriable and str(dual) == "KafkaTimeoutError: r"
    # Only transient failures become timeouts.
    assert type(kerr.to_kafka_error(kg.CommitFailedError("x"), timed_out=True)) is kerr.CommitFailedError


def test_closed_after_a_fatal_error_keeps_the_fatal_errors_class():
    fenced = kg.FencedInstanceIdError("fenced", ErrorCode.FENCED_INSTANCE_ID)
    dual = kerr.to_kafka_error(kg.MemberClosedError("the group member failed"), fatal=fenced)
    assert isinstance(dual, Errors.FencedInstanceIdError) and isinstance(dual, Errors.IllegalStateError)
    assert isinstance(dual, kg.MemberClosedError)
    assert str(dual) == "[Error 82] FencedInstanceIdError: the group member failed"
    plain = kerr.to_kafka_error(kg.MemberClosedError("failed"), fatal=kg.GroupMemberError("no code"))
    assert type(plain) is kerr.MemberClosedError


def test_a_subclass_of_a_kgroup_error_keeps_its_own_class():
    class Custom(kg.CommitFailedError):
        pass

    dual = kerr.to_kafka_error(Custom("x"))
    assert isinstance(dual, Custom) and isinstance(dual, Errors.CommitFailedError)


def test_bad_strategy_is_a_configuration_error_before_any_socket_opens():
    from kgroup.io.kafka_python.consumer import KafkaConsumer

    with pytest.raises(Errors.KafkaConfigurationError) as info:
        KafkaConsumer(bootstrap_servers="127.0.0.1:1", group_id="g",
                      partition_assignment_strategy=["no-such"])
    assert isinstance(info.value, kg.ConfigError)


# -- the coordinator, on a fake client over the in-memory group coordinator ----

TOPIC = "t"
FAST = dict(session_timeout_ms=600, heartbeat_interval_ms=100, max_poll_interval_ms=1_000,
            retry_backoff_ms=20, request_timeout_ms=2_000, enable_auto_commit=False, assignors=("range",))


@pytest.fixture
def make_coordinator(hub, monkeypatch):
    """ConsumerCoordinators whose transport is ``hub`` (no kafka-python network)."""
    from kgroup.io.kafka_python import coordinator as module

    monkeypatch.setattr(module, "KafkaPythonTransport", lambda client, request_timeout_ms: hub.transport())
    made = []

    def make(**overrides):
        cluster = ClusterMetadata()
        cluster.partitions_for_topic = lambda topic: {0, 1} if topic == TOPIC else None
        client = types.SimpleNamespace(cluster=cluster, _manager=types.SimpleNamespace(_net=None))
        subscription = SubscriptionState()
        subscription.subscribe(topics=[TOPIC])
        coordinator = module.ConsumerCoordinator(client, subscription, group_id="g",
                                                 **dict(FAST, **overrides))
        made.append(coordinator)
        return coordinator

    yield make
    for coordinator in made:
        try:
            coordinator.close(autocommit=False, timeout_ms=500)
        except Exception:
            pass


def poll_until_stable(*coordinators, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all([c.poll(timeout_ms=20) for c in coordinators]):
            return
    pytest.fail("the group did not settle")


def wait_until(predicate, timeout_s=5.0, keep_polling=()):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        for c in keep_polling:
            c.poll(timeout_ms=20)
        time.sleep(0.01)
    pytest.fail("condition not reached")


OFFSETS = {TopicPartition(TOPIC, 0): OffsetAndMetadata(5, "", -1)}


def evicted(coordinator) -> bool:
    return not coordinator._member.generation.is_valid


def test_commit_after_eviction_is_commit_failed_for_sync_async_and_callbacks(make_coordinator):
    c = make_coordinator()
    poll_until_stable(c)
    c.commit_offsets_sync(OFFSETS)                 # in the group: the commit works
    wait_until(lambda: evicted(c))                 # no poll for max_poll_interval_ms: the member left
    with pytest.raises(Errors.CommitFailedError) as info:
        c.commit_offsets_sync(OFFSETS)
    assert isinstance(info.value, kg.CommitFailedError) and not info.value.retriable

    seen = []
    future = c.commit_offsets_async(OFFSETS, callback=lambda offsets, result: seen.append(result))
    with pytest.raises(Errors.CommitFailedError):
        c.commit_offsets_sync(OFFSETS)             # drives the member: completes the async one too
    assert future.failed() and isinstance(future.exception, Errors.CommitFailedError)
    assert isinstance(future.exception, kg.CommitFailedError) and not future.retriable()
    c.commit_offsets_async({})                     # runs completed callbacks, as kafka-python does
    assert len(seen) == 1
    assert isinstance(seen[0], Errors.CommitFailedError) and isinstance(seen[0], kg.CommitFailedError)


def test_commit_while_the_member_rejoins_is_rebalance_in_progress(make_coordinator):
    a, b = make_coordinator(), make_coordinator(max_poll_interval_ms=5_000)
    poll_until_stable(a, b)
    wait_until(lambda: evicted(a), keep_polling=[b])
    # a polls: it rejoins, and the join is held until b (not polling) rejoins too.
    assert a.poll(timeout_ms=0) is False
    wait_until(lambda: a._member.state is ClassicMemberState.PREPARING_REBALANCE, timeout_s=1.0)
    with pytest.raises(Errors.RebalanceInProgressError) as info:
        a.commit_offsets_sync(OFFSETS)
    assert isinstance(info.value, kg.CommitFailedError)


def test_fenced_static_member_raises_fenced_from_poll_and_later_calls(make_coordinator):
    first = make_coordinator(group_instance_id="same", max_poll_interval_ms=10_000)
    poll_until_stable(first)
    second = make_coordinator(group_instance_id="same", max_poll_interval_ms=10_000)
    poll_until_stable(second)          # takes over the instance id; first's next heartbeat is fenced
    with pytest.raises(Errors.FencedInstanceIdError) as info:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            first.poll(timeout_ms=20)
            time.sleep(0.02)
    assert isinstance(info.value, kg.FencedInstanceIdError)
    assert info.value.error_code is ErrorCode.FENCED_INSTANCE_ID
    # The member is fatal now: later calls keep raising what stock apps catch for fencing.
    with pytest.raises(Errors.FencedInstanceIdError) as info:
        first.commit_offsets_sync(OFFSETS)
    assert isinstance(info.value, kg.MemberClosedError)
    with pytest.raises(Errors.FencedInstanceIdError):
        first.poll(timeout_ms=0)


def test_commit_results_handed_to_futures_and_callbacks_are_mapped(make_coordinator):
    from kafka.future import Future

    c = make_coordinator()
    seen = []
    future = Future()
    c._pending_commits[10**6] = (future, lambda offsets, result: seen.append(result), OFFSETS)
    c._complete_commit(CommitCompleted(
        10**6, {}, kg.RetriableCommitFailedError("r", ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)))
    assert isinstance(future.exception, Errors.CoordinatorLoadInProgressError) and future.retriable()
    c._invoke_completed_offset_commit_callbacks()
    assert seen == [future.exception] and isinstance(seen[0], kg.RetriableCommitFailedError)


def test_heartbeat_thread_failure_is_raised_as_kafka_error(make_coordinator):
    c = make_coordinator()
    c._heartbeat.error = TransportError("kafka-python network client unavailable: loop closed")
    with pytest.raises(Errors.KafkaConnectionError) as info:
        c.poll(timeout_ms=0)
    assert isinstance(info.value, TransportError)
    c._heartbeat.error = None


# -- the drop-in consumer on a real broker ---------------------------------------


@pytest.mark.broker
@pytest.mark.parametrize("kind", ["stock", "kgroup"])
def test_commit_after_eviction_raises_kafka_commit_failed_error(tansu_bootstrap, unique_name, kind):
    """``commit()`` once max_poll_interval_ms evicted the member: CommitFailedError, stock and kgroup
    alike."""
    from integration_factories import make_consumer
    from integration_harness import wait_for

    from kgroup.testing.tansu import create_topic, produce

    topic, group = unique_name("errors"), unique_name("g")
    create_topic(tansu_bootstrap, topic, 1)
    produce(tansu_bootstrap, topic, 5, 1)
    max_poll_interval_ms = 2_000
    consumer = make_consumer(kind, tansu_bootstrap, group, "range", session_timeout_ms=4_000,
                             heartbeat_interval_ms=300, max_poll_interval_ms=max_poll_interval_ms)
    tp = TopicPartition(topic, 0)
    try:
        consumer.subscribe([topic])
        records = []
        deadline = time.monotonic() + 30
        while len(records) < 5 and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=200).values():
                records.extend(batch)
        stalled = time.monotonic()           # the app's last poll
        assert len(records) == 5
        consumer.commit()                    # a member of the group: the commit succeeds
        assert consumer.committed(tp) == 5
        # The app stops polling; past max_poll_interval_ms the member leaves the group.
        if kind == "kgroup":
            wait_for(lambda: evicted(consumer._coordinator), 15, "the poll timeout to evict the member")
        else:
            wait_for(lambda: consumer._coordinator.generation_if_stable() is None, 15, "stock eviction")
        assert time.monotonic() - stalled >= max_poll_interval_ms / 1000 * 0.9
        with pytest.raises(Errors.CommitFailedError) as info:
            consumer.commit()
        assert not info.value.retriable
        if kind == "kgroup":
            assert isinstance(info.value, kg.CommitFailedError)
    finally:
        consumer.close(autocommit=False)
