"""Commit safety of the pure member: offsets never regress, commits keep the generation they were made in.

Regression tests for the fault campaign's findings (issue 9, items 2 and 3):
a retried commit used to be re-sent with its original offsets after a newer
commit of the same partition was acknowledged, and was stamped with the
generation current when it was *sent*, so a commit made in generation N was
accepted in N+1.
"""
from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member import CommitCompleted
from kgroup.errors import CommitFailedError
from kgroup.values import TopicPartition

from member_fakes import EagerOnly, Harness

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
OK = ErrorCode.NONE


def commit_response(request, code=OK):
    return m.OffsetCommitResponse(tuple(m.PartitionError(c.topic_partition, code) for c in request.offsets))


def sent_commits(h):
    return [r for r in h.pump() if isinstance(r, m.OffsetCommitRequest)]


def offsets_of(request):
    return {c.topic_partition: c.committed.offset for c in request.offsets}


def completed(h):
    return {e.token: e for e in h.member.take_events() if isinstance(e, CommitCompleted)}


def stable_harness():
    h = Harness()
    h.join([T0, T1], generation=1)
    return h


def test_retried_commit_never_overwrites_a_newer_acknowledged_commit():
    h = stable_harness()
    old = h.member.commit_offsets({T0: 5}, h.now, deadline_ms=h.now + 10_000)
    [first] = sent_commits(h)
    h.reply(m.OffsetCommitRequest, commit_response(first, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
    new = h.member.commit_offsets({T0: 10}, h.now)
    [second] = sent_commits(h)
    assert offsets_of(second) == {T0: 10}
    h.reply(m.OffsetCommitRequest, commit_response(second))
    for _ in range(5):  # well past the retry backoff
        h.clock.advance(h.member.config.retry_backoff_ms)
        assert all(offsets_of(r).get(T0) != 5 for r in sent_commits(h))
    results = completed(h)
    assert results[new].error is None
    # The older commit rode on the newer one: it completes with that outcome, never re-sent.
    assert results[old].error is None and results[old].offsets == {T0: m.OffsetAndMetadata(5)}


def test_retry_keeps_partitions_no_newer_commit_took_over():
    h = stable_harness()
    old = h.member.commit_offsets({T0: 5, T1: 7}, h.now, deadline_ms=h.now + 10_000)
    [first] = sent_commits(h)
    h.reply(m.OffsetCommitRequest, commit_response(first, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
    h.member.commit_offsets({T0: 10}, h.now)
    [second] = sent_commits(h)
    h.reply(m.OffsetCommitRequest, commit_response(second))
    h.clock.advance(h.member.config.retry_backoff_ms)
    [retry] = sent_commits(h)
    assert offsets_of(retry) == {T1: 7}
    h.reply(m.OffsetCommitRequest, commit_response(retry))
    assert completed(h)[old].error is None


def test_commit_waits_for_an_older_in_flight_commit_of_the_same_partition():
    h = stable_harness()
    h.member.commit_offsets({T0: 5}, h.now, deadline_ms=h.now + 10_000)
    [first] = sent_commits(h)
    h.member.commit_offsets({T0: 10, T1: 3}, h.now)
    assert sent_commits(h) == []  # held back: the answer to offset 5 decides whether it is retried
    assert h.member.get_timer() != h.now  # blocked, not busy-polling
    h.reply(m.OffsetCommitRequest, commit_response(first, ErrorCode.NOT_COORDINATOR))
    h.find()
    [second] = sent_commits(h)
    assert offsets_of(second) == {T0: 10, T1: 3}


def test_commit_made_in_an_old_generation_is_not_sent_in_the_new_one():
    h = stable_harness()
    token = h.member.commit_offsets({T0: 5}, h.now, deadline_ms=h.now + 60_000)
    [first] = sent_commits(h)
    h.reply(m.OffsetCommitRequest, commit_response(first, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
    # Before the retry is due the member rebalances into generation 2 (it keeps t-0 here).
    h.member.request_rejoin("test")
    events = h.join([T0], generation=2)
    h.member.take_events()
    h.clock.advance(h.member.config.retry_backoff_ms)
    assert sent_commits(h) == []
    result = [e for e in events + h.member.take_events() if isinstance(e, CommitCompleted)]
    assert [e.token for e in result] == [token]
    assert isinstance(result[0].error, CommitFailedError)
    assert result[0].error.error_code is ErrorCode.ILLEGAL_GENERATION


def test_commit_stamped_with_the_generation_its_offsets_were_read_in_is_refused_after_a_rejoin():
    """kgroup_spark's fencing token (issue 24 item 2): rows read in generation 1, committed after the
    member rejoined into generation 2, must not be accepted in generation 2's name."""
    h = stable_harness()
    read_in = h.member.generation
    h.member.request_rejoin("test")
    h.join([T0, T1], generation=2)
    h.member.take_events()
    token = h.member.commit_offsets({T0: 5}, h.now, generation=read_in)
    assert sent_commits(h) == []
    [result] = [e for e in h.member.take_events() if isinstance(e, CommitCompleted)]
    assert result.token == token and isinstance(result.error, CommitFailedError)
    assert result.error.error_code is ErrorCode.ILLEGAL_GENERATION
    # The same offsets stamped with the current generation go out in it.
    h.member.commit_offsets({T0: 5}, h.now)
    [sent] = sent_commits(h)
    assert sent.generation_id == 2


def test_close_commits_before_it_leaves():
    h = Harness(enable_auto_commit=True)
    h.join([T0], generation=1)
    h.member.on_app_poll(h.now, {T0: 4})
    h.member.close(h.now)
    requests = h.pump()
    kinds = [type(r) for r in requests]
    assert kinds.index(m.OffsetCommitRequest) < kinds.index(m.LeaveGroupRequest)
    commit = requests[kinds.index(m.OffsetCommitRequest)]
    assert commit.generation_id == 1 and offsets_of(commit) == {T0: 4}


def test_commit_made_in_a_revocation_callback_goes_out_before_the_join():
    h = Harness(assignors=(EagerOnly(),))
    h.join([T0, T1], generation=1)
    h.member.request_rejoin("test")
    h.member.on_app_poll(h.now)
    assert h.member.take_events()  # the revocation: the app commits what it processed
    h.member.commit_offsets({T0: 9}, h.now)
    h.member.on_app_poll(h.now)
    kinds = [type(r) for r in h.pump()]
    assert kinds.index(m.OffsetCommitRequest) < kinds.index(m.JoinGroupRequest)


def test_fenced_commit_of_an_older_generation_fails_the_commit_not_the_member():
    """Kafka ConsumerCoordinatorTest.testCommitOffsetFencedInstanceWithNewGeneration: only a fenced
    commit sent in the current generation is fatal."""
    from kgroup.core.member import ClassicMemberState

    h = Harness(group_instance_id="i1")
    h.join([T0], generation=1)
    token = h.member.commit_offsets({T0: 3}, h.now)
    [sent] = sent_commits(h)
    h.member.request_rejoin("test")
    h.join([T0], generation=2)
    h.reply(m.OffsetCommitRequest, commit_response(sent, ErrorCode.FENCED_INSTANCE_ID))
    result = completed(h)[token]
    assert isinstance(result.error, CommitFailedError)
    assert h.member.state is ClassicMemberState.STABLE and h.member.generation.generation_id == 2


def test_fenced_commit_of_the_current_generation_is_fatal():
    """Kafka ConsumerCoordinatorTest.testCommitOffsetFencedInstanceWithRebalancingGeneration's
    counterpart: the same generation fenced means another process took the instance id."""
    from kgroup.core.member import ClassicMemberState

    h = Harness(group_instance_id="i1")
    h.join([T0], generation=1)
    h.member.commit_offsets({T0: 3}, h.now)
    [sent] = sent_commits(h)
    h.reply(m.OffsetCommitRequest, commit_response(sent, ErrorCode.FENCED_INSTANCE_ID))
    assert h.member.state is ClassicMemberState.FATAL
