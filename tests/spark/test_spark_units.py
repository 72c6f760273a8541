"""kgroup_spark's pure parts without Spark: ownership intervals, options, batch tags, acknowledgements."""

from __future__ import annotations

import pytest

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.values import TopicPartition
from kgroup.wire.consumer_protocol import Assignment, encode_assignment
from kgroup_spark.errors import SourceOptionError
from kgroup_spark.options import parse_options
from kgroup_spark.ownership import OwnershipRecorder
from kgroup_spark.plan import CommitTag, batch_tag
from kgroup_spark.planner import Planner
from kgroup_spark.sources import SqliteQueue

P0, P1 = TopicPartition("t", 0), TopicPartition("t", 1)


def _sync(recorder, member, generation, partitions, now_ms, group="g"):
    request = m.SyncGroupRequest(group, generation, member)
    recorder.observe(
        request,
        m.SyncGroupResponse(ErrorCode.NONE, assignment=encode_assignment(Assignment(tuple(partitions)))),
        now_ms,
    )


def test_ownership_moves_without_overlap_in_a_cooperative_handover():
    recorder = OwnershipRecorder()
    _sync(recorder, "a", 1, [P0, P1], 0)
    _sync(recorder, "a", 2, [P0], 10)  # a revokes P1 ...
    _sync(recorder, "b", 3, [P1], 20)  # ... before b gets it
    assert recorder.overlaps() == []
    spans = [(i.member_id, i.partition.partition, i.start_ms, i.end_ms) for i in recorder.intervals()]
    assert spans == [("a", 0, 0, None), ("a", 1, 0, 10), ("b", 1, 20, None)]


def test_a_partition_handed_out_twice_is_reported():
    recorder = OwnershipRecorder()
    _sync(recorder, "a", 1, [P0], 0)
    _sync(recorder, "b", 1, [P0], 5)
    [(first, second)] = recorder.overlaps()
    assert {first.member_id, second.member_id} == {"a", "b"}


def test_static_replacement_and_expulsion_end_the_old_members_intervals():
    recorder = OwnershipRecorder()
    _sync(recorder, "s-1", 1, [P0], 0)
    recorder.observe(
        m.JoinGroupRequest("g", group_instance_id="s"),
        m.JoinGroupResponse(ErrorCode.NONE, generation_id=1, member_id="s-1"),
        0,
    )
    recorder.observe(
        m.JoinGroupRequest("g", group_instance_id="s"),
        m.JoinGroupResponse(ErrorCode.NONE, generation_id=1, member_id="s-2"),
        7,
    )
    _sync(recorder, "s-2", 1, [P0], 8)
    _sync(recorder, "x", 1, [P1], 8)
    # The leader's answer of generation 2 lists only s-2: x was expelled.
    recorder.observe(
        m.JoinGroupRequest("g", member_id="s-2"),
        m.JoinGroupResponse(
            ErrorCode.NONE,
            generation_id=2,
            leader="s-2",
            member_id="s-2",
            members=(m.JoinGroupMember("s-2", "s", b""),),
        ),
        30,
    )
    ends = {(i.member_id, i.partition.partition): i.end_ms for i in recorder.intervals()}
    assert ends == {("s-1", 0): 7, ("s-2", 0): None, ("x", 1): 30}
    assert recorder.overlaps() == []


def test_options_defaults_and_errors():
    options = parse_options({"source": "sqlite", "bootstrap.servers": "h:1", "sqlite.path": "q.db"})
    assert options.source_class == "kgroup_spark.sources.sqlite_queue:SqliteQueueSource"
    assert (options.readers, options.assignor, options.static) == (2, "cooperative-sticky", True)
    assert options.instance_id("g", 1) == "g-reader-1"
    assert options.source_options["sqlite.path"] == "q.db"
    with pytest.raises(SourceOptionError, match="'bootstrap.servers' is required"):
        parse_options({"source": "sqlite"})
    with pytest.raises(SourceOptionError, match="must be >= 1"):
        parse_options({"source": "sqlite", "bootstrap.servers": "h:1", "readers": "0"})
    with pytest.raises(SourceOptionError, match="'static' must be true or false"):
        parse_options({"source": "sqlite", "bootstrap.servers": "h:1", "static": "yes"})
    with pytest.raises(SourceOptionError, match="startingOffsets"):
        parse_options({"source": "sqlite", "bootstrap.servers": "h:1", "startingOffsets": "newest"})


def test_batch_tags_name_the_batch_and_commit_tags_round_trip():
    assert batch_tag({0: 1}, {0: 5}) == batch_tag({0: 1}, {0: 5})
    assert batch_tag({0: 1}, {0: 5}) != batch_tag({0: 1}, {0: 6})
    tag = CommitTag("abc", 3, 1, 7)
    assert CommitTag.decode(tag.encode()) == tag
    assert CommitTag.decode("") is None and CommitTag.decode("other:1:2:3:4") is None
    assert CommitTag.decode("kgroup-spark:abc:x:1:7") is None


class _FakeAdmin:
    def __init__(self, committed):
        self.committed_offsets = committed

    def committed(self, topic):
        return {p: (o, "") for p, o in self.committed_offsets.items()}

    def close(self):
        pass


def test_acknowledgements_follow_accepted_commits_once_each(tmp_path):
    queue = SqliteQueue(str(tmp_path / "q.db")).create(2)
    queue.append(0, [f"r{i}" for i in range(6)])
    queue.append(1, [f"r{i}" for i in range(6)])
    planner = Planner({"source": "sqlite", "sqlite.path": queue.path, "bootstrap.servers": "h:1"})
    planner._admin = _FakeAdmin({0: 4})  # partition 1's commit was refused: nothing committed
    planner.plan({}, {0: 6, 1: 6})
    assert planner.acknowledge({0: 6, 1: 6}) == {0: (0, 4)}
    planner._admin = _FakeAdmin({0: 6, 1: 6})
    assert planner.acknowledge({0: 6, 1: 6}) == {0: (4, 6), 1: (0, 6)}
    assert planner.acknowledge({0: 6, 1: 6}) == {}
    assert set(queue.ack_counts().values()) == {1}
    # A new planner (a restarted query) reads the watermark from the source: no second acknowledgement.
    again = Planner({"source": "sqlite", "sqlite.path": queue.path, "bootstrap.servers": "h:1"})
    again._admin = _FakeAdmin({0: 6, 1: 6})
    again.plan({0: 0, 1: 0}, {0: 6, 1: 6})
    assert again.acknowledge({0: 6, 1: 6}) == {}
    planner.close()
    again.close()


def test_commit_tags_carry_the_floor_identity_and_executor_and_old_tags_still_decode():
    tag = CommitTag("abc", 1, 0, 4, floor=7, member="reader-1", executor="exec:2")
    decoded = CommitTag.decode(tag.encode())
    assert decoded == CommitTag("abc", 1, 0, 4, floor=7, member="reader-1", executor="exec_2")
    assert CommitTag.decode("kgroup-spark:abc:1:0:4") == CommitTag("abc", 1, 0, 4)


def test_stickiness_compares_consecutive_batches_per_member_identity_and_executor():
    from kgroup_spark.stickiness import BatchRead, stickiness_of

    def batch(name, owners):
        return {p: BatchRead(name, p, *owners[p]) for p in owners}

    first = batch("b1", {0: ("m1", "reader-0", "e1"), 1: ("m2", "reader-1", "e2")})
    second = batch("b2", {0: ("m3", "reader-0", "e1"), 1: ("m2", "reader-1", "e2")})  # m1 replaced
    third = batch("b3", {0: ("m3", "reader-0", "e2"), 2: ("m2", "reader-1", "e2")})   # moved executor
    figures = stickiness_of([first, second, third])
    assert figures.compared == 3
    assert (figures.same_member, figures.same_identity, figures.same_executor) == (2, 3, 2)
    assert stickiness_of([first]).per_member == 1.0
