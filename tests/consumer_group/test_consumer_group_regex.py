"""KIP-848 regex subscriptions on the coordinator (SubscribedTopicRegex).

Ported from Kafka's GroupMetadataManagerTest (the regex tests of KAFKA-17593 and KAFKA-19899); each test
names its source.  Kafka resolves on its executor and its tests run the pending task between two
heartbeats (``context.processTasks()``); kgroup's resolution task is a coordinator timer due at once,
run here by ``Driver.advance(0)``.  Not ported, because kgroup has no counterpart:
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
    the whole name).  The heartbeat writes no resolution; the resolution task (Kafka's executor, a
    coordinator timer here) resolves it to {foo}, persists it and bumps the group epoch; member 2's
    next heartbeat is assigned from it.  As in Kafka, the join itself bumps nothing (no topic names
    changed, the regex is not resolved): member 2 is at epoch 10 and no target is computed."""
    m1 = member("m1", 10, {"foo": range(6)}, subscribed_topic_names=("foo",))
    d = with_group({"foo": 6}, [m1], {})
    d.assignor.prepare({"m1": tps({"foo": range(3)}), "m2": tps({"foo": range(3, 6)})})
    before = len(d.records)
    response = ok(join_regex(d, "m2", "foo*", server_assignor="prepared"))
    assert regex_records(d, before) == [] and response.assignment == ()
    assert response.member_epoch == 10 and d.assignor.calls == []  # not resolved yet: no new target
    assert (d.group().group_epoch, d.group().assignment_epoch) == (10, 10)
    d.advance(0)  # the resolution task
    assert regex_records(d, before) == [resolved_record("foo*", {"foo"})]
    assert d.group().group_epoch == 11
    assert ok(d.heartbeat("m2", response.member_epoch)).member_epoch == 11
    assert d.assignor.calls[-1]["m2"].subscribed_topics == {"foo"}
    d.assert_replays()


def test_consumer_group_member_picks_up_existing_resolved_regular_expression():
    """testConsumerGroupMemberPicksUpExistingResolvedRegularExpression: a regex the group resolved within
    the refresh interval is not resolved again; the assignor sees its topics for both members."""
    m1 = member("m1", 10, {"foo": [0, 1]}, subscribed_topic_regex="foo*")
    d = with_group({"foo": 2}, [m1], {"foo*": {"foo"}})
    d.assignor.prepare({"m1": tps({"foo": [0]}), "m2": tps({"foo": [1]})})
    before = len(d.records)
    response = ok(join_regex(d, "m2", "foo*", rebalance_timeout_ms=10_000))
    assert response.member_epoch == 11 and response.assignment == ()  # foo-1 is still m1's
    assert {mid: spec.subscribed_topics for mid, spec in d.assignor.calls[-1].items()} == {
        "m1": {"foo"}, "m2": {"foo"}}
    d.advance(0)
    assert regex_records(d, before) == []  # nothing was scheduled


def test_consumer_group_member_joins_with_updated_regex():
    """testConsumerGroupMemberJoinsWithUpdatedRegex: ``foo*`` -> ``foo*|bar*``: the old resolution is
    tombstoned with its last subscriber; the task resolves the new one to {foo, bar} and bumps the
    epoch; the member's next heartbeat gets foo 0-5 and bar 0-2.  (Kafka's test group has no metadata
    hash, so dropping foo bumps nothing there; kgroup's group holds foo's metadata, so the member is
    told to revoke foo until the new regex is resolved.)"""
    m1 = member("m1", 10, {"foo": range(6)}, subscribed_topic_regex="foo*", server_assignor=None)
    records = group_records(GROUP, 10, [m1], {"m1": m1.assigned_partitions}, metadata={"foo": 6})
    d = Driver({"foo": 6, "bar": 3}, records=records + [resolved_record("foo*", {"foo"})])
    d.now_ms = REFRESH_MS + 1
    before = len(d.records)
    ok(d.heartbeat("m1", 10, rebalance_timeout_ms=5000, subscribed_topic_regex="foo*|bar*",
                   topic_partitions=tps({"foo": range(6)})))
    assert regex_records(d, before) == [ConsumerGroupRegularExpressionTombstone(GROUP, "foo*")]
    d.advance(0)
    assert regex_records(d, before)[1:] == [resolved_record("foo*|bar*", {"foo", "bar"}, REFRESH_MS + 1)]
    epoch = d.group().group_epoch
    response = ok(d.heartbeat("m1", 10, topic_partitions=()))  # revoked: bar now, foo once released
    assert response.member_epoch == epoch and response.assignment == tuple(sorted(tps({"bar": range(3)})))
    response = ok(d.heartbeat("m1", epoch, topic_partitions=tps({"bar": range(3)})))
    assert response.assignment == tuple(sorted(tps({"foo": range(6), "bar": range(3)})))
    d.assert_replays()


def test_consumer_group_member_join_refreshes_expired_regexes():
    """testConsumerGroupMemberJoinRefreshesExpiredRegexes: topic ``fooo`` appears; a heartbeat within the
    refresh interval schedules nothing, one after it has every regex of the group resolved again and
    the epoch bumped.  Kafka needs the 10 s batch interval *and* a metadata image with new topics;
    kgroup rescans whenever the interval has passed."""
    m1 = member("m1", 10, {"foo": range(6)}, subscribed_topic_regex="foo*")
    m2 = member("m2", 10, {"bar": range(3)}, subscribed_topic_regex="bar*")
    d = with_group({"foo": 6, "bar": 3}, [m1, m2], {"foo*": {"foo"}, "bar*": {"bar"}})
    d.assignor.prepare({"m1": tps({"foo": range(6)}), "m2": tps({"bar": range(3)})})
    d.topics["fooo"] = 1
    before = len(d.records)
    ok(d.heartbeat("m1", 10))
    d.advance(0)
    assert regex_records(d, before) == [] and d.group().group_epoch == 10
    d.now_ms += 11_000
    ok(d.heartbeat("m1", 10))
    d.advance(0)
    assert sorted(regex_records(d, before), key=lambda r: r.regex) == [
        resolved_record("bar*", {"bar"}, 11_000), resolved_record("foo*", {"foo", "fooo"}, 11_000)]
    assert d.group().group_epoch == 11 and d.group().subscription_metadata == {"foo": 6, "bar": 3, "fooo": 1}
    d.assert_replays()


def test_a_new_regex_waits_for_the_batching_interval():
    """KAFKA-17593 [8/N] (maybeUpdateRegularExpressions, condition 2): a group's regexes are not resolved
    twice within the interval, a new regex included; it is resolved by the first heartbeat after."""
    d = Driver({"foo": 1, "bar": 1})
    ok(join_regex(d, "m1", "foo"))
    d.advance(0)
    d.now_ms = 1_000
    before = len(d.records)
    ok(join_regex(d, "m2", "bar"))
    d.advance(0)
    assert regex_records(d, before) == [] and "bar" not in d.group().resolved_regexes
    d.now_ms = REFRESH_MS + 1
    ok(d.heartbeat("m2", d.group().members["m2"].member_epoch))
    d.advance(0)
    assert sorted(r.regex for r in regex_records(d, before)) == ["bar", "foo"]
    assert d.group().resolved_regexes["bar"].topics == {"bar"}


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
    tombstones it, the task resolves the new one to {foo}, and the member ends with foo 0-5."""
    m1 = member("m1", 10, {"foo": range(6), "bar": range(3)}, subscribed_topic_regex="foo*|bar*",
                instance_id="instance-id", server_assignor=None)
    records = group_records(GROUP, 10, [m1], {"m1": m1.assigned_partitions}, metadata={"foo": 6, "bar": 3})
    d = Driver({"foo": 6, "bar": 3}, records=records + [resolved_record("foo*|bar*", {"foo", "bar"})])
    d.now_ms = REFRESH_MS + 1
    ok(d.heartbeat("m1", -2, instance_id="instance-id"))
    before = len(d.records)
    ok(join_regex(d, "m2", "foo*", instance_id="instance-id"))
    assert regex_records(d, before) == [ConsumerGroupRegularExpressionTombstone(GROUP, "foo*|bar*")]
    d.advance(0)
    assert regex_records(d, before)[1:] == [resolved_record("foo*", {"foo"}, REFRESH_MS + 1)]
    response = ok(d.heartbeat("m2", d.group().members["m2"].member_epoch, topic_partitions=()))
    assert response.member_epoch == d.group().group_epoch
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


def test_a_groups_first_regex_is_resolved_at_the_next_timer_round():
    """A group's first regex is resolved at once by the timer (no earlier resolution to wait for), and
    the member is assigned the matching topics (whole names only) at its next heartbeat."""
    d = Driver({"foo": 3, "foobar": 2, "bar": 1, "xfoo": 1})
    response = ok(join_regex(d, "m", "foo.*"))
    # No bump until the regex is resolved: the new group's initial empty target at epoch 1 (KAFKA-20268;
    # Kafka 4.4's recorded answer to consumer.join.regex-not-yet-resolved).
    assert (response.member_epoch, response.assignment) == (1, ())
    assert (d.group().group_epoch, d.group().assignment_epoch) == (1, 1)
    d.advance(0)
    assert d.group().resolved_regexes == {"foo.*": ResolvedTopicRegex(frozenset({"foo", "foobar"}), 0)}
    response = ok(d.heartbeat("m", 1))
    assert response.member_epoch == 2
    assert response.assignment == tuple(sorted(tps({"foo": range(3), "foobar": range(2)})))
    d.assert_replays()


def test_topic_created_later_joins_and_a_deleted_one_leaves():
    """A topic created after the join is resolved by the first heartbeat more than one refresh interval
    after the last resolution (then the task) and assigned at the next; a deleted one leaves the
    subscription metadata at the next heartbeat (as any deleted topic) and the resolution at the next
    refresh."""
    d = Driver({"orders-1": 2})
    ok(join_regex(d, "m", "^orders-.*"))
    d.advance(0)
    epoch = ok(d.heartbeat("m", 1)).member_epoch
    epoch = ok(d.heartbeat("m", epoch, topic_partitions=tps({"orders-1": [0, 1]}))).member_epoch
    d.topics["orders-2"] = 1
    d.now_ms = REFRESH_MS
    quiet = ok(d.heartbeat("m", epoch))
    d.advance(0)
    assert quiet.assignment is None and d.group().group_epoch == epoch
    d.now_ms = REFRESH_MS + 1
    ok(d.heartbeat("m", epoch))
    d.advance(0)
    assert d.group().group_epoch == epoch + 1
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
    d.advance(0)
    assert d.group().resolved_regexes["^orders-.*"].topics == {"orders-2"}
    d.assert_replays()


def test_topic_names_and_regex_together_subscribe_to_the_union():
    """KIP-848: a member may send SubscribedTopicNames and SubscribedTopicRegex; the assignor sees their
    union (TargetAssignmentBuilder adds the resolved regex's topics to the member's names)."""
    d = Driver({"foo": 1, "foobar": 1, "bar": 1}, PREPARED_CONFIG)
    ok(join_regex(d, "m", "foo.*", subscribed_topic_names=("bar",)))
    assert d.assignor.calls[-1]["m"].subscribed_topics == {"bar"}  # the regex is not resolved yet
    d.advance(0)
    ok(d.heartbeat("m", 2))  # the new group's first assignment is epoch 2 (KAFKA-20268)
    assert d.assignor.calls[-1]["m"].subscribed_topics == {"bar", "foo", "foobar"}
    assert d.group().subscription_metadata == {"bar": 1, "foo": 1, "foobar": 1}


def test_static_member_replacement_with_the_same_regex_keeps_its_resolution():
    d = Driver({"foo": 2})
    ok(join_regex(d, "m1", "foo", instance_id="i"))
    d.advance(0)
    ok(d.heartbeat("m1", -2, instance_id="i"))
    before = len(d.records)
    ok(join_regex(d, "m2", "foo", instance_id="i"))
    d.advance(0)
    assert regex_records(d, before) == [] and set(d.group().resolved_regexes) == {"foo"}
    d.assert_replays()


def test_describe_reports_the_members_regex():
    """ConsumerGroupDescribe's SubscribedTopicRegex is the member's regex."""
    d = Driver({"foo": 1})
    ok(join_regex(d, "m", "fo+"))
    (described,) = d.call(ConsumerGroupDescribeRequest((GROUP,))).groups
    assert [m.subscribed_topic_regex for m in described.members] == ["fo+"]
