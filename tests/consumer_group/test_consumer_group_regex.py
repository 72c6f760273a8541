"""KIP-848 regex subscriptions on the coordinator (SubscribedTopicRegex).

Ported from Kafka's GroupMetadataManagerTest (the regex tests of KAFKA-17593 and KAFKA-19899); each test
names its source.  Kafka resolves a regex on an executor: its tests run the pending task between two
heartbeats and see the epoch bumped by the task, the member assigned at the next heartbeat.  kgroup's
coordinator resolves in the heartbeat itself (docs/guide/consumer-protocol.md, *Departures*), so the
same records and epochs are asserted one step earlier.  Not ported, because kgroup has no counterpart:
testConsumerGroupMemberJoinsWithRegexAndUpdatesItBeforeResolutionCompleted (no resolution in flight),
testConsumerGroupMemberJoinsRefreshTopicAuthorization and the ...TopicAuthorizationFailure cases (no
ACLs), testConsumerMemberWithRegexReplacedByClassicMember* and
testResolvedRegularExpressionsRemovedWhenConsumerMembersRemovedByAdminApi (classic members inside a
consumer group: issue 27 item 1).
"""
from __future__ import annotations

from consumer_group_harness import GROUP, PREPARED_CONFIG, Driver, group_records, ok, tps

from kgroup.core.consumer_group.member import ConsumerGroupMember, MemberState
from kgroup.core.consumer_group.records import (
    ConsumerGroupRegularExpressionRecord, ConsumerGroupRegularExpressionTombstone, ResolvedTopicRegex,
)
from kgroup.core.consumer_group_messages import ConsumerGroupDescribeRequest
from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode

E = ErrorCode
REFRESH_MS = GroupCoordinatorConfig().consumer_group_regex_refresh_interval_ms


def member(member_id: str, epoch: int, assigned: dict, **fields) -> ConsumerGroupMember:
    """A stable member at ``epoch`` (Kafka's ConsumerGroupMember.Builder in these tests)."""
    fields.setdefault("rebalance_timeout_ms", 5000)
    fields.setdefault("server_assignor", "prepared")
    return ConsumerGroupMember(member_id, member_epoch=epoch, previous_member_epoch=epoch,
                               state=MemberState.STABLE, assigned_partitions=tps(assigned), **fields)


def resolved_record(regex: str, topics: set, at_ms: int = 0) -> ConsumerGroupRegularExpressionRecord:
    return ConsumerGroupRegularExpressionRecord(GROUP, regex, ResolvedTopicRegex(frozenset(topics), at_ms))


def with_group(topics: dict, members: list, resolved: dict, epoch: int = 10) -> Driver:
    """Kafka's ConsumerGroupBuilder(...).withResolvedRegularExpression(...): the group from its records."""
    records = group_records(GROUP, epoch, members, {m.member_id: m.assigned_partitions for m in members},
                            metadata={t: topics[t] for m in members for t in topics})
    records += [resolved_record(regex, names) for regex, names in resolved.items()]
    return Driver(topics, PREPARED_CONFIG, records)


def join_regex(d: Driver, member_id: str, regex: str, **fields):
    fields.setdefault("rebalance_timeout_ms", 5000)
    fields.setdefault("topic_partitions", ())
    return d.heartbeat(member_id, 0, subscribed_topic_regex=regex, **fields)


def regex_records(d: Driver, since: int = 0) -> list:
    return [r for r in d.records[since:]
            if isinstance(r, (ConsumerGroupRegularExpressionRecord, ConsumerGroupRegularExpressionTombstone))]


def test_consumer_group_member_joins_with_new_regex():
    """testConsumerGroupMemberJoinsWithNewRegex: member 2 joins with ``foo*`` (RE2: "fo" then any "o"s,
    the whole name).  The regex is resolved to {foo} and persisted, and the group epoch goes 10 -> 11.
    Kafka answers epoch 10 and bumps to 11 when its executor task completes; kgroup does both now."""
    m1 = member("m1", 10, {"foo": range(6)}, subscribed_topic_names=("foo",))
    d = with_group({"foo": 6}, [m1], {})
    d.assignor.prepare({"m1": tps({"foo": range(6)})})
    before = len(d.records)
    response = ok(join_regex(d, "m2", "foo*", server_assignor="prepared"))
    assert regex_records(d, before) == [resolved_record("foo*", {"foo"})]
    assert d.group().group_epoch == 11 and response.member_epoch == 11 and response.assignment == ()
    assert d.assignor.calls[-1]["m2"].subscribed_topics == {"foo"}
    d.assert_replays()


def test_consumer_group_member_picks_up_existing_resolved_regular_expression():
    """testConsumerGroupMemberPicksUpExistingResolvedRegularExpression: a regex the group already resolved
    is not resolved again; the assignor sees its topics for both members, the join bumps the epoch."""
    m1 = member("m1", 10, {"foo": [0, 1]}, subscribed_topic_regex="foo*")
    d = with_group({"foo": 2}, [m1], {"foo*": {"foo"}})
    d.assignor.prepare({"m1": tps({"foo": [0]}), "m2": tps({"foo": [1]})})
    before = len(d.records)
    response = ok(join_regex(d, "m2", "foo*", rebalance_timeout_ms=10_000))
    assert response.member_epoch == 11 and response.assignment == ()  # foo-1 is still m1's
    assert {mid: spec.subscribed_topics for mid, spec in d.assignor.calls[-1].items()} == {
        "m1": {"foo"}, "m2": {"foo"}}
    assert regex_records(d, before) == []


def test_consumer_group_member_joins_with_updated_regex():
    """testConsumerGroupMemberJoinsWithUpdatedRegex: ``foo*`` -> ``foo*|bar*``: the old resolution is
    tombstoned with its last subscriber, the new one is {foo, bar}, the epoch goes to 11 and the member
    gets foo 0-5 and bar 0-2 (Kafka: at its second heartbeat, after the executor's task)."""
    m1 = member("m1", 10, {"foo": range(6)}, subscribed_topic_regex="foo*")
    d = with_group({"foo": 6, "bar": 3}, [m1], {"foo*": {"foo"}})
    d.assignor.prepare({"m1": tps({"foo": range(6), "bar": range(3)})})
    before = len(d.records)
    response = ok(d.heartbeat("m1", 10, rebalance_timeout_ms=5000, subscribed_topic_regex="foo*|bar*",
                              server_assignor="prepared", topic_partitions=tps({"foo": range(6)})))
    assert regex_records(d, before) == [ConsumerGroupRegularExpressionTombstone(GROUP, "foo*"),
                                        resolved_record("foo*|bar*", {"foo", "bar"})]
    assert response.member_epoch == 11
    assert response.assignment == tuple(sorted(tps({"foo": range(6), "bar": range(3)})))
    d.assert_replays()


def test_consumer_group_member_join_refreshes_expired_regexes():
    """testConsumerGroupMemberJoinRefreshesExpiredRegexes: topic ``fooo`` appears; a heartbeat within the
    refresh interval resolves nothing, one after it resolves every regex of the group again and bumps
    the epoch.  Kafka needs the 10 s batch interval *and* a metadata image with new topics; kgroup
    rescans at every refresh."""
    m1 = member("m1", 10, {"foo": range(6)}, subscribed_topic_regex="foo*")
    m2 = member("m2", 10, {"bar": range(3)}, subscribed_topic_regex="bar*")
    d = with_group({"foo": 6, "bar": 3}, [m1, m2], {"foo*": {"foo"}, "bar*": {"bar"}})
    d.assignor.prepare({"m1": tps({"foo": range(6)}), "m2": tps({"bar": range(3)})})
    d.topics["fooo"] = 1
    before = len(d.records)
    ok(d.heartbeat("m1", 10))
    assert regex_records(d, before) == [] and d.group().group_epoch == 10
    d.now_ms += 11_000
    ok(d.heartbeat("m1", 10))
    assert sorted(regex_records(d, before), key=lambda r: r.regex) == [
        resolved_record("bar*", {"bar"}, 11_000), resolved_record("foo*", {"foo", "fooo"}, 11_000)]
    assert d.group().group_epoch == 11 and d.group().subscription_metadata == {"foo": 6, "bar": 3, "fooo": 1}
    d.assert_replays()


def test_consumer_group_member_clears_regex():
    """testConsumerGroupMemberClearsRegex (KAFKA-19899): an empty regex clears the member's regex, the
    resolution is tombstoned, the epoch goes to 11 and the target is empty."""
    m1 = member("m1", 10, {"foo": range(6)}, subscribed_topic_regex="foo*")
    d = with_group({"foo": 6}, [m1], {"foo*": {"foo"}})
    before = len(d.records)
    response = ok(d.heartbeat("m1", 10, rebalance_timeout_ms=5000, subscribed_topic_regex="",
                              server_assignor="prepared", topic_partitions=()))
    assert regex_records(d, before) == [ConsumerGroupRegularExpressionTombstone(GROUP, "foo*")]
    assert (response.member_epoch, response.assignment) == (11, ())
    assert d.group().members["m1"].subscribed_topic_regex is None and d.group().target_of("m1") == frozenset()
    d.assert_replays()


def test_static_consumer_group_member_joins_with_updated_regex():
    """testStaticConsumerGroupMemberJoinsWithUpdatedRegex: a static member with ``foo*|bar*`` leaves
    (-2) and its new incarnation joins with ``foo*``: the copy keeps the old regex until the update
    tombstones it, the new one resolves to {foo}, and the member ends with foo 0-5 at epoch 11."""
    m1 = member("m1", 10, {"foo": range(6), "bar": range(3)}, subscribed_topic_regex="foo*|bar*",
                instance_id="instance-id")
    d = with_group({"foo": 6, "bar": 3}, [m1], {"foo*|bar*": {"foo", "bar"}})
    ok(d.heartbeat("m1", -2, instance_id="instance-id"))
    d.assignor.prepare({"m2": tps({"foo": range(6)})})
    before = len(d.records)
    response = ok(join_regex(d, "m2", "foo*", instance_id="instance-id", server_assignor="prepared"))
    assert regex_records(d, before) == [ConsumerGroupRegularExpressionTombstone(GROUP, "foo*|bar*"),
                                        resolved_record("foo*", {"foo"})]
    assert response.member_epoch == 11
    assert response.assignment == tuple(sorted(tps({"foo": range(6)})))
    d.assert_replays()


def test_resolved_regular_expressions_removed_when_members_leave_or_fenced():
    """testResolvedRegularExpressionsRemovedWhenMembersLeaveOrFenced: member 1 leaves, its regex's
    resolution is tombstoned and the epoch goes to 11; member 2's session expires, the same at 12."""
    m1 = member("m1", 10, {"foo": range(6)}, subscribed_topic_regex="foo*")
    m2 = member("m2", 10, {"bar": range(3)}, subscribed_topic_regex="bar*")
    d = with_group({"foo": 6, "bar": 3}, [m1, m2], {"foo*": {"foo"}, "bar*": {"bar"}})
    before = len(d.records)
    ok(d.heartbeat("m1", -1))
    assert regex_records(d, before) == [ConsumerGroupRegularExpressionTombstone(GROUP, "foo*")]
    assert d.group().group_epoch == 11
    before = len(d.records)
    d.advance(d.config.consumer_group_session_timeout_ms + 1)
    assert regex_records(d, before) == [ConsumerGroupRegularExpressionTombstone(GROUP, "bar*")]
    assert d.group().group_epoch == 12 and d.group().resolved_regexes == {}
    d.assert_replays()


def test_replay_consumer_group_regular_expression_and_tombstone():
    """testReplayConsumerGroupRegularExpression / testReplayConsumerGroupRegularExpressionTombstone: the
    records rebuild the resolution (topics and time) and a tombstone removes it.  Kafka also keeps a
    resolution replayed without a subscriber mid-load; kgroup drops one no member holds once the load
    is done (its invariant: a resolution lives only with a subscriber)."""
    m1 = member("m1", 10, {}, subscribed_topic_regex="abc*")
    records = group_records(GROUP, 10, [m1], {}) + [resolved_record("abc*", {"abc", "abcd"}, 12_345)]
    d = Driver({"abc": 1, "abcd": 1}, PREPARED_CONFIG, records)
    assert d.group().resolved_regexes == {"abc*": ResolvedTopicRegex(frozenset({"abc", "abcd"}), 12_345)}
    assert d.group().subscribed_topics() == {"abc", "abcd"}
    tombstone = ConsumerGroupRegularExpressionTombstone(GROUP, "abc*")
    gone = Driver({"abc": 1}, PREPARED_CONFIG, records + [tombstone])
    assert gone.group().resolved_regexes == {} and gone.group().subscribed_topics() == frozenset()
    # A failover keeps the resolution time: the new coordinator does not resolve again before the interval.
    d.topics["abce"] = 1
    d.now_ms = 12_345 + REFRESH_MS - 1
    before = len(d.records)
    ok(d.heartbeat("m1", 10))
    assert regex_records(d, before) == []


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


# -- kgroup's own cases --------------------------------------------------------------------


def test_a_new_member_is_assigned_its_regex_topics_in_its_first_answer():
    """The departure itself: a group's first member with a regex gets the matching topics (whole names
    only) in the answer to its join."""
    d = Driver({"foo": 3, "foobar": 2, "bar": 1, "xfoo": 1})
    response = ok(join_regex(d, "m", "foo.*"))
    assert response.member_epoch == 1
    assert response.assignment == tuple(sorted(tps({"foo": range(3), "foobar": range(2)})))
    assert d.group().resolved_regexes == {"foo.*": ResolvedTopicRegex(frozenset({"foo", "foobar"}), 0)}
    d.assert_replays()


def test_topic_created_later_joins_and_a_deleted_one_leaves():
    """A topic created after the join is assigned at the first heartbeat one refresh interval after the
    last resolution; a deleted one leaves the subscription metadata at the next heartbeat (as any deleted
    topic) and the resolution at the next refresh."""
    d = Driver({"orders-1": 2})
    ok(join_regex(d, "m", "^orders-.*"))
    epoch = ok(d.heartbeat("m", 1, topic_partitions=tps({"orders-1": [0, 1]}))).member_epoch
    d.topics["orders-2"] = 1
    d.now_ms = REFRESH_MS - 1
    quiet = ok(d.heartbeat("m", epoch))
    assert quiet.member_epoch == epoch and quiet.assignment is None
    d.now_ms = REFRESH_MS
    response = ok(d.heartbeat("m", epoch))
    assert response.member_epoch == epoch + 1
    assert response.assignment == tuple(sorted(tps({"orders-1": [0, 1], "orders-2": [0]})))
    epoch = ok(d.heartbeat("m", epoch + 1, topic_partitions=tps({"orders-1": [0, 1], "orders-2": [0]}))
               ).member_epoch
    del d.topics["orders-1"]
    d.now_ms += 1
    response = ok(d.heartbeat("m", epoch))
    assert d.group().group_epoch == epoch + 1 and d.group().subscription_metadata == {"orders-2": 1}
    assert response.assignment == tuple(tps({"orders-2": [0]}))  # orders-1 is revoked first
    assert d.group().resolved_regexes["^orders-.*"].topics == {"orders-1", "orders-2"}
    assert ok(d.heartbeat("m", epoch, topic_partitions=tps({"orders-2": [0]}))).member_epoch == epoch + 1
    d.now_ms += REFRESH_MS
    ok(d.heartbeat("m", epoch + 1))
    assert d.group().resolved_regexes["^orders-.*"].topics == {"orders-2"}
    d.assert_replays()


def test_topic_names_and_regex_together_subscribe_to_the_union():
    """KIP-848: a member may send SubscribedTopicNames and SubscribedTopicRegex; the assignor sees their
    union (TargetAssignmentBuilder adds the resolved regex's topics to the member's names)."""
    d = Driver({"foo": 1, "foobar": 1, "bar": 1}, PREPARED_CONFIG)
    ok(join_regex(d, "m", "foo.*", subscribed_topic_names=("bar",)))
    assert d.assignor.calls[-1]["m"].subscribed_topics == {"bar", "foo", "foobar"}
    assert d.group().subscription_metadata == {"bar": 1, "foo": 1, "foobar": 1}


def test_static_member_replacement_with_the_same_regex_keeps_its_resolution():
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
    assert [m.subscribed_topic_regex for m in described.members] == ["fo+"]
