"""A failed reader costs a session timeout, not the batch timeout; fencing by the read's token;
acknowledgements across restarts; stickiness (issue 24 items 1, 2, 3 and 8).

Bounds come from the group's timeouts: a batch that contains a reader failure completes within
the session timeout plus ``MARGIN_S`` (the issue's target), never near ``batch.timeout.ms``.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from spark_helpers import KeyedSink, consume_available, group_offsets, stream, wait_for_file

SESSION_TIMEOUT_MS = 6_000
#: The issue's target: a batch with a reader failure completes within session timeout + 15 s.
MARGIN_S = 15
#: Far above the target, so a stall shows as a failed bound, not as a BatchNotCoveredError.
BATCH_TIMEOUT_MS = 60_000
PAUSING_SOURCE = "spark_test_sources:PausingQueueSource"
ALL = {p: 5 for p in range(12)}


def _wait_until(condition, timeout_s: float, step_s: float = 0.25) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step_s)
    return condition()


def test_a_frozen_reader_costs_a_session_timeout_and_its_late_commit_is_refused(
    spark, group_host, queue, group_name, tmp_path
):
    pause_dir = tmp_path / "pause"
    pause_dir.mkdir()
    sink = KeyedSink()
    frame = stream(
        spark, group_host.bootstrap_servers, group_name, source=PAUSING_SOURCE,
        **{"sqlite.path": queue.path, "sqlite.pause_dir": str(pause_dir),
           "session.timeout.ms": str(SESSION_TIMEOUT_MS), "batch.timeout.ms": str(BATCH_TIMEOUT_MS)},
    )
    query = frame.writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "cp")).start()
    try:
        pid = int(wait_for_file(str(pause_dir / "reader.pid"), timeout_s=120))
        os.kill(pid, signal.SIGSTOP)  # a zombie: it holds partition 0 and answers nothing
        frozen_at = time.monotonic()
        try:
            # Its session expires; the other reader takes its partitions and commits the whole batch.
            covered = _wait_until(
                lambda: group_offsets(group_host.bootstrap_servers, group_name) == ALL,
                SESSION_TIMEOUT_MS / 1000 + MARGIN_S,
            )
            covered_after_s = time.monotonic() - frozen_at
        finally:
            (pause_dir / "release").touch()
            os.kill(pid, signal.SIGCONT)  # it wakes up, finishes its read and commits: refused
        query.processAllAvailable()
        done_after_s = time.monotonic() - frozen_at
        queue.append(0, ["after-the-zombie"])
        query.processAllAvailable()
        assert query.isActive and query.exception() is None
    finally:
        query.stop()

    print(f"frozen reader: batch covered after {covered_after_s:.1f} s, completed after {done_after_s:.1f} s")
    assert covered, "the surviving reader never covered the batch"
    assert done_after_s < SESSION_TIMEOUT_MS / 1000 + MARGIN_S
    assert set(sink.rows) == {(p, o) for p in range(12) for o in range(5)} | {(0, 5)}
    assert max(sink.deliveries.values()) == 1
    assert group_offsets(group_host.bootstrap_servers, group_name) == {**ALL, 0: 6}
    assert max(queue.ack_counts().values()) <= 1
    assert group_host.ownership_overlaps(group_name) == []


def test_ten_reader_failures_in_a_row_cost_seconds_each_and_the_query_lives_on(
    spark, group_host, queue, group_name, tmp_path
):
    """Ten consecutive batches, each with a failed reader: SIGKILLed (even batches) or frozen with
    SIGSTOP until the others covered the batch, then resumed as a zombie (odd batches)."""
    pause_dir = tmp_path / "pause"
    pause_dir.mkdir()
    sink = KeyedSink()
    frame = stream(
        spark, group_host.bootstrap_servers, group_name, source=PAUSING_SOURCE,
        **{"sqlite.path": queue.path, "sqlite.pause_dir": str(pause_dir), "sqlite.pause_each_batch": "true",
           "session.timeout.ms": str(SESSION_TIMEOUT_MS), "batch.timeout.ms": str(BATCH_TIMEOUT_MS)},
    )
    query = frame.writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "cp")).start()
    durations = []
    start = 0
    try:
        for failure in range(10):
            if failure:  # partition 0 needs two records for the pause
                queue.append_all({p: [f"p{p}-f{failure}-{i}" for i in range(2)] for p in range(12)})
            end = {p: 5 + 2 * failure for p in range(12)}
            pid = int(wait_for_file(str(pause_dir / f"reader-{start}.pid"), timeout_s=120))
            failed_at = time.monotonic()
            if failure % 2 == 0:
                os.kill(pid, signal.SIGKILL)
                (pause_dir / f"release-{start}").touch()
            else:
                os.kill(pid, signal.SIGSTOP)
                try:
                    _wait_until(lambda: group_offsets(group_host.bootstrap_servers, group_name) == end,
                                SESSION_TIMEOUT_MS / 1000 + MARGIN_S)
                finally:
                    (pause_dir / f"release-{start}").touch()
                    os.kill(pid, signal.SIGCONT)
            query.processAllAvailable()
            durations.append(time.monotonic() - failed_at)
            assert query.isActive and query.exception() is None, f"the query died after failure {failure + 1}"
            start = 5 if failure == 0 else start + 2
    finally:
        query.stop()

    print("failed reader -> batch completed (s):", " ".join(f"{d:.1f}" for d in durations))
    assert max(durations) < SESSION_TIMEOUT_MS / 1000 + MARGIN_S
    expected = {(p, o) for p in range(12) for o in range(5 + 2 * 9)}
    assert set(sink.rows) == expected
    assert max(sink.deliveries.values()) == 1
    assert group_host.ownership_overlaps(group_name) == []


def test_a_zombie_whose_rejoin_finished_before_it_commits_is_refused(group_host, queue, group_name):
    from kgroup_spark import OwnershipFencedError
    from kgroup_spark.group_admin import GroupAdmin
    from kgroup_spark.planner import Planner
    from kgroup_spark.reader import _members, close_all, read_slot

    options = {
        "source": "sqlite", "sqlite.path": queue.path, "bootstrap.servers": group_host.bootstrap_servers,
        "group.id": group_name, "readers": "1", "session.timeout.ms": str(SESSION_TIMEOUT_MS),
    }
    planner = Planner(options)
    planner.validate()
    plan = planner.plan({}, planner.latest())[0]
    rows = read_slot(plan)
    try:
        assert next(rows)[:2] == (0, 0)  # joined and reading partition 0 under its first generation
        held = _members[(group_host.bootstrap_servers, group_name, 0)]
        read_under = held.consumer.member.generation
        # The group moves on without it (as when its session expired while it was frozen)...
        admin = GroupAdmin(group_host.bootstrap_servers, group_name, 10_000)
        assert admin.remove_members([f"{group_name}-reader-0"]) == 1
        admin.close()
        # ...and it rejoins (a new member id and generation) before it gets to commit what it read.
        assert _wait_until(
            lambda: held.consumer.poll(200) is not None and held.consumer.member.settled
            and held.consumer.member.generation.member_id not in ("", read_under.member_id),
            SESSION_TIMEOUT_MS / 1000 + MARGIN_S, step_s=0,
        )
        assert held.consumer.member.generation.generation_id > read_under.generation_id
        with pytest.raises(OwnershipFencedError) as fenced:
            list(rows)
    finally:
        rows.close()
        close_all()
    assert fenced.value.token.generation_id == read_under.generation_id
    assert fenced.value.token.member_id == read_under.member_id
    # Nothing of it was committed, so nothing can be acknowledged.
    assert group_offsets(group_host.bootstrap_servers, group_name) == {}
    assert planner.acknowledge(planner.latest()) == {}
    planner.close()
    assert set(queue.ack_counts().values()) == {0}


def test_the_last_batch_before_a_graceful_stop_is_acknowledged_once_by_the_restart(
    spark, group_host, queue, group_name, tmp_path
):
    checkpoint = str(tmp_path / "checkpoint")
    options = {"source": "sqlite", "sqlite.path": queue.path}
    first = consume_available(spark, group_host.bootstrap_servers, group_name, checkpoint, **options)
    assert len(first.rows) == 60
    # Spark commits a batch when it plans the next one: the first run's only batch is not acknowledged.
    # (Before issue 24 the restarted run never acknowledged it: its planner had no floor for it.)
    assert set(queue.ack_counts().values()) == {0}

    for partition in range(12):
        queue.append(partition, [f"p{partition}-second-run"])
    second = consume_available(spark, group_host.bootstrap_servers, group_name, checkpoint, **options)
    assert set(second.rows) == {(p, 5) for p in range(12)}
    acks = queue.ack_counts()
    # The restart acknowledged the first run's last batch (Spark committed it before planning)...
    assert {acks[(p, o)] for p in range(12) for o in range(5)} == {1}
    assert {acks[(p, 5)] for p in range(12)} == {0}

    # Spark commits the previous run's last batch when the restarted query plans its first batch.
    for partition in range(12):
        queue.append(partition, [f"p{partition}-third-run"])
    third = consume_available(spark, group_host.bootstrap_servers, group_name, checkpoint, **options)
    assert set(third.rows) == {(p, 6) for p in range(12)}
    acks = queue.ack_counts()
    # ...and the next restart the second run's: every record that reached the sink once.
    assert {acks[(p, o)] for p in range(12) for o in range(6)} == {1}
    assert {acks[(p, 6)] for p in range(12)} == {0}


def test_partitions_stay_with_their_member_and_executor_from_batch_to_batch(
    spark, group_host, queue, group_name, tmp_path
):
    sink = KeyedSink()
    frame = stream(spark, group_host.bootstrap_servers, group_name, source="sqlite",
                   **{"sqlite.path": queue.path})
    query = frame.writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "cp")).start()
    try:
        query.processAllAvailable()
        for batch in range(6):
            queue.append_all({partition: [f"p{partition}-b{batch}"] for partition in range(12)})
            query.processAllAvailable()
    finally:
        query.stop()

    batches = group_host.batch_reads(group_name)
    assert len(batches) == 7 and all(set(reads) == set(range(12)) for reads in batches)
    from kgroup_spark.stickiness import describe_batch

    for reads in batches:
        print(describe_batch(reads), {read.member_id[-8:] for read in reads.values()})
    steady = group_host.stickiness(group_name, skip_batches=1)
    print(steady)
    assert steady.compared == 12 * 5
    # The target: >= 95 % of partitions read by the same executor in steady state.  (Per
    # member it is reported, not bounded: a task that lands in a fresh Python worker replaces its
    # identity's member there.)
    assert steady.per_executor >= 0.95
    assert max(sink.deliveries.values()) == 1
