"""Commits with the member epoch, the KIP-848 member's configuration, its member ids and its state table.

Each test names the Kafka test it ports (org.apache.kafka.clients.consumer.internals unless said).
"""
from __future__ import annotations

import pytest

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.core.fsm import StateMachine
from kgroup.core.member.consumer import (
    LEGAL_PREVIOUS,
    ConsumerMemberState,
    ConsumerProtocolConfig,
    check_group_protocol_settings,
    generate_member_id,
)
from kgroup.core.member.consumer import ConsumerMemberState as S
from kgroup.core.member.consumer.member_id import uuid_string
from kgroup.errors import CommitFailedError, ConfigError, IllegalStateTransition
from kgroup.values import TopicPartition

from consumer_member_script_harness import ScriptedMember, tps

T0 = TopicPartition("t", 0)
OK = ErrorCode.NONE


def commit_answer(code: ErrorCode, *partitions: TopicPartition) -> m.OffsetCommitResponse:
    return m.OffsetCommitResponse(tuple(m.PartitionError(tp, code) for tp in partitions))


def stable(**config) -> ScriptedMember:
    sm = ScriptedMember(**config)
    sm.join(assignment=tps("t", 0), epoch=4)
    sm.answer_heartbeat(epoch=4)
    return sm


def next_commit(sm: ScriptedMember) -> m.OffsetCommitRequest:
    commits = [r for r in sm.pump() if isinstance(r, m.OffsetCommitRequest)]
    assert len(commits) == 1, commits
    return commits[0]


def test_commit_carries_the_member_epoch_at_send_time():
    """CommitRequestManagerTest.testLastEpochSentOnCommit (OffsetCommit v9 GenerationIdOrMemberEpoch)"""
    sm = stable()
    token = sm.member.commit_offsets({T0: 10}, sm.now)
    commit = next_commit(sm)
    assert (commit.generation_id, commit.member_id, commit.api_version) == (4, sm.member.member_id, 9)
    sm.answer(m.OffsetCommitRequest, commit_answer(OK, T0))
    sm.poll()
    assert sm.commits[token].error is None
    # The epoch moves on while a commit waits; it goes out with the epoch of when it is sent.
    sm.advance(3000)
    sm.heartbeat()
    sm.member.commit_offsets({T0: 11}, sm.now)
    sm.answer_heartbeat(epoch=5)
    assert next_commit(sm).generation_id == 5


def test_commit_sync_fails_on_stale_member_epoch_for_a_partition_given_up():
    """CommitRequestManagerTest.testCommitSyncFailsWithCommitFailedExceptionOnStaleMemberEpoch"""
    sm = stable()
    gone = TopicPartition("t", 5)  # not (or no longer) the member's
    token = sm.member.commit_offsets({gone: 10}, sm.now, deadline_ms=sm.now + 30_000)
    next_commit(sm)
    sm.answer(m.OffsetCommitRequest, commit_answer(ErrorCode.STALE_MEMBER_EPOCH, gone))
    sm.poll()
    error = sm.commits[token].error
    assert isinstance(error, CommitFailedError) and error.error_code is ErrorCode.STALE_MEMBER_EPOCH
    sm.advance(1000)
    assert not [r for r in sm.pump() if isinstance(r, m.OffsetCommitRequest)]


def test_commit_of_owned_partitions_retries_stale_epoch_with_the_new_one():
    """kgroup's extension of CommitRequestManager's stale-epoch retry (Kafka retries only the
    auto-commit before a revocation): a partition the member still owns cannot have been committed
    by anyone else, so the commit goes again with the epoch the member has now."""
    sm = stable(retry_backoff_ms=50)
    token = sm.member.commit_offsets({T0: 10}, sm.now, deadline_ms=sm.now + 30_000)
    assert next_commit(sm).generation_id == 4
    sm.advance(3000)
    sm.heartbeat()
    sm.answer_heartbeat(epoch=5)  # the epoch moved while the commit was in flight
    sm.answer(m.OffsetCommitRequest, commit_answer(ErrorCode.STALE_MEMBER_EPOCH, T0))
    sm.advance(50)
    assert next_commit(sm).generation_id == 5
    sm.answer(m.OffsetCommitRequest, commit_answer(OK, T0))
    sm.poll()
    assert sm.commits[token].error is None


def test_auto_commit_before_revocation_retries_stale_epoch_with_the_new_epoch():
    """CommitRequestManagerTest.testAutoCommitSyncBeforeRevocationRetriesOnRetriableAndStaleEpoch"""
    sm = stable(enable_auto_commit=True, retry_backoff_ms=50)
    positions = {T0: 99}
    sm.poll(positions)
    sm.advance(3000)
    sm.heartbeat()
    sm.answer_heartbeat(epoch=5, assignment=(), interval_ms=3000)
    sm.poll(positions)
    first = next_commit(sm)
    assert first.generation_id == 5
    # The epoch moved on meanwhile (e.g. the coordinator bumped it): the commit is stale.
    sm.advance(3000)
    sm.heartbeat()
    sm.answer_heartbeat(epoch=6)
    sm.answer(m.OffsetCommitRequest, commit_answer(ErrorCode.STALE_MEMBER_EPOCH, T0))
    sm.poll(positions)
    assert sm.member.state is S.RECONCILING and sm.member.assignment == tps("t", 0)  # not revoked yet
    sm.advance(50)
    retried = next_commit(sm)
    assert retried.generation_id == 6
    sm.answer(m.OffsetCommitRequest, commit_answer(OK, T0))
    sm.poll_until_quiet(positions)
    assert sm.callbacks[-2:] == [("revoked", [T0]), ("assigned", [])]
    assert all(c.error is None for c in sm.commits.values())


def test_commit_made_before_fencing_is_not_sent_in_the_new_membership():
    """kgroup's zombie fencing: a commit never goes out under a later membership (Kafka would send it
    without an epoch and get UNKNOWN_MEMBER_ID)."""
    sm = stable(retry_backoff_ms=4000)
    token = sm.member.commit_offsets({T0: 10}, sm.now, deadline_ms=sm.now + 30_000)
    next_commit(sm)
    sm.answer(m.OffsetCommitRequest, commit_answer(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, T0))
    sm.advance(3000)  # the retry waits out its backoff
    sm.heartbeat()
    sm.answer_heartbeat(epoch=4, error=ErrorCode.FENCED_MEMBER_EPOCH)
    sm.poll()  # lost callback -> JOINING
    sm.heartbeat()
    sm.answer_heartbeat(epoch=7, assignment=tps("t", 0))
    sm.advance(1000)
    assert not [r for r in sm.pump() if isinstance(r, m.OffsetCommitRequest)]
    sm.poll()
    error = sm.commits[token].error
    assert isinstance(error, CommitFailedError) and "fenced" in str(error)


def test_offset_fetch_carries_member_id_and_epoch_and_retries_stale_epoch():
    """CommitRequestManagerTest.testSyncOffsetFetchFailsWithStaleEpochAndRetriesWithNewEpoch"""
    sm = stable(retry_backoff_ms=50)
    token = sm.member.fetch_committed([T0], sm.now)
    fetch = next(r for r in sm.pump() if isinstance(r, m.OffsetFetchRequest))
    assert (fetch.member_id, fetch.member_epoch) == (sm.member.member_id, 4)
    sm.advance(3000)
    sm.heartbeat()
    sm.answer_heartbeat(epoch=5)
    sm.answer(m.OffsetFetchRequest, m.OffsetFetchResponse(ErrorCode.STALE_MEMBER_EPOCH))
    sm.advance(50)
    retried = next(r for r in sm.pump() if isinstance(r, m.OffsetFetchRequest))
    assert retried.member_epoch == 5
    sm.answer(m.OffsetFetchRequest, m.OffsetFetchResponse(
        OK, (m.PartitionOffset(T0, m.OffsetAndMetadata(17)),)))
    sm.poll()
    assert sm.fetches[token].offsets == {T0: m.OffsetAndMetadata(17)}


def test_commit_without_group_management_is_a_simple_commit():
    """Manual assignment: Kafka commits with epoch -1 and no member id."""
    sm = ScriptedMember(topics=())
    sm.member.commit_offsets({T0: 3}, sm.now)
    sm.find_coordinator()
    commit = next_commit(sm)
    assert (commit.generation_id, commit.member_id) == (-1, "")


# -- configuration -------------------------------------------------------------------------


@pytest.mark.parametrize("setting", ["session_timeout_ms", "heartbeat_interval_ms",
                                     "partition_assignment_strategy", "assignors"])
def test_classic_settings_are_config_errors_with_the_consumer_protocol(setting):
    """ConsumerConfigTest (KAFKA-17338): "session.timeout.ms cannot be set when group.protocol=CONSUMER" """
    with pytest.raises(ConfigError, match=setting):
        check_group_protocol_settings("consumer", {setting})
    assert check_group_protocol_settings("CLASSIC", {setting}) == "classic"


def test_remote_assignor_is_a_config_error_with_the_classic_protocol():
    """ConsumerConfig.checkGroupRemoteAssignor"""
    with pytest.raises(ConfigError, match="group_remote_assignor"):
        check_group_protocol_settings("classic", (), remote_assignor="uniform")
    assert check_group_protocol_settings("Consumer", (), remote_assignor="uniform") == "consumer"


@pytest.mark.parametrize("value", ["generic", "", None, 1])
def test_unknown_group_protocol(value):
    with pytest.raises(ConfigError, match="group_protocol"):
        check_group_protocol_settings(value, ())


@pytest.mark.parametrize("field, value", [("group_id", ""), ("max_poll_interval_ms", 0),
                                          ("retry_backoff_ms", 1.5), ("group_instance_id", ""),
                                          ("heartbeat_api_version", 2), ("group_remote_assignor", ""),
                                          ("retry_backoff_max_ms", 0)])
def test_bad_member_settings(field, value):
    settings = {"group_id": "g", field: value}
    with pytest.raises(ConfigError, match=field):
        ConsumerProtocolConfig(**settings)


# -- member ids (KIP-1082) ---------------------------------------------------------------------


def test_member_id_is_kafkas_uuid_string():
    """UuidTest.testToString / testRandomUuid: 22 URL-safe base64 characters, version 4, not '-'-led."""
    raw = bytes(range(16))
    assert uuid_string(raw) == "AAECAwQFBgcICQoLDA0ODw"
    ids = {generate_member_id(lambda n, i=i: bytes([i]) * n) for i in range(256) if i >> 2 != 62}
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)


def test_member_id_redraws_on_a_dash_and_fails_on_a_bad_source():
    draws = iter([b"\xfb" + bytes(15), bytes([0x10]) * 16])  # '+/-' alphabet: 0xfb.. starts with '-'
    expected = uuid_string(bytes([0x10] * 6 + [0x40] + [0x10] + [0x90] + [0x10] * 7))
    assert generate_member_id(lambda n: next(draws)) == expected
    with pytest.raises(ConfigError, match="16 bytes"):
        generate_member_id(lambda n: b"short")


def test_two_members_from_one_seed_agree_and_from_two_seeds_differ():
    assert ScriptedMember(seed=3).member.member_id == ScriptedMember(seed=3).member.member_id
    assert ScriptedMember(seed=3).member.member_id != ScriptedMember(seed=4).member.member_id


# -- the state table ------------------------------------------------------------------------------


def test_state_table_is_kafkas():
    """MemberState's previousValidStates, row by row."""
    s = ConsumerMemberState
    assert LEGAL_PREVIOUS[s.JOINING] == {s.FENCED, s.UNSUBSCRIBED, s.STALE}
    assert LEGAL_PREVIOUS[s.STALE] == {s.LEAVING}
    assert LEGAL_PREVIOUS[s.ACKNOWLEDGING] == {s.RECONCILING}
    assert s.FENCED not in LEGAL_PREVIOUS[s.FATAL] and s.STALE not in LEGAL_PREVIOUS[s.FATAL]
    machine = StateMachine("m", s.UNSUBSCRIBED, LEGAL_PREVIOUS)
    with pytest.raises(IllegalStateTransition, match="UNSUBSCRIBED to STABLE"):
        machine.transition_to(s.STABLE)
