"""KIP-848 regex subscriptions on the coordinator (SubscribedTopicRegex).

Ported from Kafka's GroupMetadataManagerTest regex tests (KAFKA-17593, the series that added them:
[2/N] validation, [4/N] the ConsumerGroupRegularExpression record, [8/N] resolution, [10/N] removal
when unsubscribed; KAFKA-19899 for the empty regex).  Each test names its source.  Kafka resolves a
new regex asynchronously, so its tests run the executor between two heartbeats and see the member
assigned at the second; kgroup's coordinator resolves it in the heartbeat that brings it, so the
same steps are asserted one heartbeat earlier (docs/guide/consumer-protocol.md says why).
"""
from __future__ import annotations

from consumer_group_harness import GROUP, PREPARED_CONFIG, Driver, ok, tps

from kgroup.core.consumer_group.records import (
    ConsumerGroupRegularExpressionRecord, ConsumerGroupRegularExpressionTombstone, ResolvedTopicRegex,
)
from kgroup.core.consumer_group_messages import ConsumerGroupDescribeRequest
from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode

E = ErrorCode
REFRESH_MS = GroupCoordinatorConfig().consumer_group_regex_refresh_interval_ms


def join_regex(d: Driver, member_id: str, regex: str, **fields):
    fields.setdefault("rebalance_timeout_ms", 5000)
    fields.setdefault("topic_partitions", ())
    return d.heartbeat(member_id, 0, subscribed_topic_regex=regex, **fields)


def regex_records(d: Driver, since: int = 0) -> list:
    return [r for r in d.records[since:]
            if isinstance(r, (ConsumerGroupRegularExpressionRecord, ConsumerGroupRegularExpressionTombstone))]


def test_member_joins_with_new_regex():
    """testConsumerGroupMemberJoinsWithNewRegex: the regex is compiled, resolved against the topics
    (whole names only, RE2/J ``matches()``), persisted as a ConsumerGroupRegularExpression record, and
    its topics are the member's subscription; the group epoch is bumped for it."""
    d = Driver({"foo": 3, "foobar": 2, "bar": 1, "xfoo": 1})
    response = ok(join_regex(d, "m", "foo.*"))
    assert response.member_epoch == 1
    assert response.assignment == tuple(sorted(tps({"foo": range(3), "foobar": range(2)})))
    group = d.group()
    assert group.resolved_regexes == {"foo.*": ResolvedTopicRegex(frozenset({"foo", "foobar"}), 0)}
    assert group.subscription_metadata == {"foo": 3, "foobar": 2}
    assert regex_records(d) == [ConsumerGroupRegularExpressionRecord(
        GROUP, "foo.*", ResolvedTopicRegex(frozenset({"foo", "foobar"}), 0))]
    assert group.members["m"].subscribed_topic_regex == "foo.*"
    d.assert_replays()


def test_member_joins_with_updated_regex():
    """testConsumerGroupMemberJoinsWithUpdatedRegex: the old regex's resolution is tombstoned with its
    last subscriber, the new one resolved, the epoch bumped; foo's partitions are revoked first."""
    d = Driver({"foo": 2, "bar": 2})
    ok(join_regex(d, "m", "foo"))
    before = len(d.records)
    d.now_ms += 1_000  # well within the refresh interval: the new regex is resolved anyway
    response = ok(d.heartbeat("m", 1, subscribed_topic_regex="bar"))
    assert response.member_epoch == 1 and response.assignment == ()  # foo must be revoked first
    assert regex_records(d, before) == [
        ConsumerGroupRegularExpressionTombstone(GROUP, "foo"),
        ConsumerGroupRegularExpressionRecord(GROUP, "bar", ResolvedTopicRegex(frozenset({"bar"}), 1_000))]
    assert d.group().group_epoch == 2
    response = ok(d.heartbeat("m", 1, topic_partitions=()))
    assert response.member_epoch == 2 and response.assignment == tuple(sorted(tps({"bar": range(2)})))
    d.assert_replays()


def test_invalid_regex_is_refused_with_invalid_regular_expression():
    """KAFKA-17593 [2/N] (Utils.throwIfRegularExpressionIsInvalid): a regex RE2/J refuses is
    INVALID_REGULAR_EXPRESSION (128), with Kafka's message, and nothing is written."""
    d = Driver({"foo": 1})
    for regex in ["[foo", "(?=foo)", "(foo)\\1", "foo**", "foo*+", "(?x)foo", "foo{1001}"]:
        response = join_regex(d, "m", regex)
        assert response.error_code is E.INVALID_REGULAR_EXPRESSION and int(response.error_code) == 128, regex
        assert response.error_message.startswith(f"SubscribedTopicRegex `{regex}` is not a valid regular "
                                                 "expression: "), response.error_message
    assert d.records == [] and d.coordinator.group_ids() == []


def test_topic_created_later_joins_at_the_next_refresh():
    """testConsumerGroupMemberJoinRefreshesExpiredRegexes: a heartbeat within the refresh interval keeps
    the resolution; the first one at or after it resolves again, a new matching topic joins, the epoch
    is bumped and the member is assigned it.  A deleted topic leaves the subscription metadata at the
    next heartbeat (as any deleted topic) and the resolution at the next refresh."""
    d = Driver({"orders-1": 2})
    ok(join_regex(d, "m", "^orders-.*"))
    epoch = ok(d.heartbeat("m", 1, topic_partitions=tps({"orders-1": [0, 1]}))).member_epoch
    d.topics["orders-2"] = 1
    d.now_ms = REFRESH_MS - 1
    quiet = ok(d.heartbeat("m", epoch))
    assert quiet.member_epoch == epoch and quiet.assignment is None
    assert d.group().resolved_regexes["^orders-.*"].topics == {"orders-1"}
    d.now_ms = REFRESH_MS
    response = ok(d.heartbeat("m", epoch))
    assert response.member_epoch == epoch + 1
    assert response.assignment == tuple(sorted(tps({"orders-1": [0, 1], "orders-2": [0]})))
    assert d.group().resolved_regexes["^orders-.*"] == ResolvedTopicRegex(
        frozenset({"orders-1", "orders-2"}), REFRESH_MS)
    owned = tps({"orders-1": [0, 1], "orders-2": [0]})
    epoch = ok(d.heartbeat("m", epoch + 1, topic_partitions=owned)).member_epoch
    # Deleted: out of the subscription metadata at once, out of the resolution at the next refresh.
    del d.topics["orders-1"]
    d.now_ms += 1
    response = ok(d.heartbeat("m", epoch))
    assert d.group().group_epoch == epoch + 1 and d.group().subscription_metadata == {"orders-2": 1}
    assert response.assignment == tuple(tps({"orders-2": [0]}))  # orders-1 is revoked first
    assert d.group().resolved_regexes["^orders-.*"].topics == {"orders-1", "orders-2"}
    response = ok(d.heartbeat("m", epoch, topic_partitions=tps({"orders-2": [0]})))
    assert response.member_epoch == epoch + 1
    d.now_ms += REFRESH_MS
    ok(d.heartbeat("m", epoch + 1))
    assert d.group().resolved_regexes["^orders-.*"].topics == {"orders-2"}
    d.assert_replays()


def test_resolved_regexes_removed_when_members_leave_or_are_fenced():
    """testResolvedRegularExpressionsRemovedWhenMembersLeaveOrFenced: the resolution stays while a member
    subscribes to the regex; the last one leaving (or fenced by its session timeout) tombstones it."""
    d = Driver({"foo": 2, "bar": 2})
    ok(join_regex(d, "m1", "foo"))
    ok(join_regex(d, "m2", "foo"))
    ok(join_regex(d, "m3", "bar"))
    before = len(d.records)
    ok(d.heartbeat("m1", -1))
    assert regex_records(d, before) == [] and set(d.group().resolved_regexes) == {"foo", "bar"}
    ok(d.heartbeat("m3", -1))
    assert regex_records(d, before) == [ConsumerGroupRegularExpressionTombstone(GROUP, "bar")]
    before = len(d.records)
    d.advance(d.config.consumer_group_session_timeout_ms)  # m2's session expires: fenced
    assert "m2" not in d.group().members
    assert regex_records(d, before) == [ConsumerGroupRegularExpressionTombstone(GROUP, "foo")]
    assert d.group().resolved_regexes == {}
    d.assert_replays()


def test_replay_consumer_group_regular_expression_and_its_tombstone():
    """testReplayConsumerGroupRegularExpression and testReplayConsumerGroupRegularExpressionTombstone: a
    coordinator that takes over rebuilds the resolutions, with their resolution time, so it does not
    resolve again before the refresh interval; a tombstone removes one."""
    d = Driver({"foo": 2, "bar": 1})
    ok(join_regex(d, "m1", "foo"))
    ok(join_regex(d, "m2", "ba."))
    loaded = d.assert_replays()
    group = loaded.consumer_group(GROUP)
    assert group is not None and group.resolved_regexes == {
        "foo": ResolvedTopicRegex(frozenset({"foo"}), 0), "ba.": ResolvedTopicRegex(frozenset({"bar"}), 0)}
    ok(d.heartbeat("m2", -1))
    assert set(d.assert_replays().consumer_group(GROUP).resolved_regexes) == {"foo"}
    # Failover: the new coordinator keeps the resolution time (no refresh within the interval).
    d.coordinator = d.assert_replays()
    before = len(d.records)
    d.topics["foo2"] = 1
    d.now_ms = REFRESH_MS - 1
    ok(d.heartbeat("m1", d.group().members["m1"].member_epoch))
    assert regex_records(d, before) == []


def test_topic_names_and_regex_together_subscribe_to_the_union():
    """KIP-848: a member may send SubscribedTopicNames and SubscribedTopicRegex; the assignor sees their
    union (TargetAssignmentBuilder adds the resolved regex's topics to the member's names)."""
    d = Driver({"foo": 1, "foobar": 1, "bar": 1}, PREPARED_CONFIG)
    join_regex(d, "m", "foo.*", subscribed_topic_names=("bar",))
    assert d.assignor.calls[-1]["m"].subscribed_topics == {"bar", "foo", "foobar"}
    assert d.group().subscription_metadata == {"bar": 1, "foo": 1, "foobar": 1}


def test_empty_regex_drops_the_regex_and_bumps_the_group_epoch():
    """KAFKA-19899: a member whose regex goes from non-empty to empty (librdkafka sends "" with a topic
    list) bumps the group epoch; its resolution is tombstoned."""
    d = Driver({"foo": 1, "bar": 1})
    ok(join_regex(d, "m", "foo"))
    before = len(d.records)
    response = ok(d.heartbeat("m", 1, subscribed_topic_regex="", subscribed_topic_names=("bar",)))
    assert d.group().group_epoch == 2 and d.group().members["m"].subscribed_topic_regex is None
    assert regex_records(d, before) == [ConsumerGroupRegularExpressionTombstone(GROUP, "foo")]
    assert response.member_epoch == 1  # foo is revoked before the member moves on
    d.assert_replays()


def test_static_member_replacement_keeps_the_regex():
    """Kafka's replaceMember (getOrMaybeSubscribeStaticConsumerGroupMember): the new incarnation copies
    the old one's regex, so the resolution stays (no tombstone, no new resolution)."""
    d = Driver({"foo": 2})
    ok(join_regex(d, "m1", "foo", instance_id="i"))
    ok(d.heartbeat("m1", -2, instance_id="i"))
    before = len(d.records)
    ok(join_regex(d, "m2", "foo", instance_id="i"))
    assert regex_records(d, before) == [] and set(d.group().resolved_regexes) == {"foo"}
    d.assert_replays()


def test_describe_reports_the_members_regex():
    """ConsumerGroupDescribe's SubscribedTopicRegex is the member's regex."""
    d = Driver({"foo": 1})
    ok(join_regex(d, "m", "fo+"))
    (described,) = d.call(ConsumerGroupDescribeRequest((GROUP,))).groups
    assert [member.subscribed_topic_regex for member in described.members] == ["fo+"]
