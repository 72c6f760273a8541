"""Executor loss, duplicated attempts and restarts: fencing through the group (issue 12)."""

from __future__ import annotations

import os
import signal
import time

from kgroup.core.error_codes import ErrorCode
from spark_helpers import KeyedSink, consume_available, group_offsets, late_commit, stream, wait_for_file

SESSION_TIMEOUT_MS = 6_000
PAUSING_SOURCE = "spark_test_sources:PausingQueueSource"


def test_killed_reader_is_retried_fenced_and_replaced_within_a_session_timeout(
    spark, group_host, queue, group_name, tmp_path
):
    pause_dir = tmp_path / "pause"
    pause_dir.mkdir()
    sink = KeyedSink()
    frame = stream(
        spark,
        group_host.bootstrap_servers,
        group_name,
        source=PAUSING_SOURCE,
        **{
            "sqlite.path": queue.path,
            "sqlite.pause_dir": str(pause_dir),
            "session.timeout.ms": str(SESSION_TIMEOUT_MS),
        },
    )
    query = (
        frame.writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    try:
        pid = int(wait_for_file(str(pause_dir / "reader.pid"), timeout_s=120))
        # The paused attempt holds partition 0 (it is reading it): who it is, per the coordinator.
        holder = next(
            i for i in group_host.ownership(group_name) if i.partition.partition == 0 and i.end_ms is None
        )
        killed_at_ms = time.monotonic_ns() // 1_000_000
        os.kill(pid, signal.SIGKILL)
        (pause_dir / "release").touch()
        query.processAllAvailable()
        # A second batch: the partitions are read by the replacement from then on.
        queue.append(0, ["after-kill"])
        query.processAllAvailable()
    finally:
        query.stop()

    # The batch was retried: every record is in the sink, each delivered once.
    assert set(sink.rows) == {(p, o) for p in range(12) for o in range(5)} | {(0, 5)}
    assert max(sink.deliveries.values()) == 1
    # Partition 0 went to another member within one session timeout of the kill, and never to two at once.
    after = [
        i
        for i in group_host.ownership(group_name)
        if i.partition.partition == 0 and i.start_ms >= killed_at_ms
    ]
    assert after and after[0].member_id != holder.member_id
    assert after[0].start_ms - killed_at_ms < SESSION_TIMEOUT_MS
    assert group_host.ownership_overlaps(group_name) == []
    # The killed attempt's late commit (its acknowledgement) is refused and changes nothing.
    code = late_commit(
        group_host.bootstrap_servers,
        group_name,
        holder.member_id,
        holder.generation_id,
        f"{group_name}-reader-{holder.member_id.split('-reader-')[1].split('-')[0]}",
        "sqlite-queue",
        0,
        99,
    )
    assert code in (ErrorCode.FENCED_INSTANCE_ID, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION)
    assert group_offsets(group_host.bootstrap_servers, group_name)[0] == 6
    assert max(queue.ack_counts().values()) == 1


def test_a_duplicated_attempt_of_a_task_gets_exactly_one_acknowledgement(
    group_host, queue, group_name, tmp_path
):
    import json
    import subprocess
    import sys

    from kgroup_spark.planner import Planner
    from kgroup_spark.reader import close_all, read_slot

    pause_dir = tmp_path / "pause"
    pause_dir.mkdir()
    options = {
        "source": PAUSING_SOURCE,
        "sqlite.path": queue.path,
        "sqlite.pause_dir": str(pause_dir),
        "bootstrap.servers": group_host.bootstrap_servers,
        "group.id": group_name,
        "readers": "1",
        "session.timeout.ms": str(SESSION_TIMEOUT_MS),
    }
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    first = subprocess.Popen(
        [sys.executable, os.path.join(here, "spark_attempt_worker.py"), json.dumps(options), "0"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        wait_for_file(str(pause_dir / "reader.pid"), timeout_s=60)
        # The same task again, while the first attempt still reads: its join fences the first.
        planner = Planner(options)
        end = planner.latest()
        plan = planner.plan({}, end)[0]
        second_rows = list(read_slot(plan))
        (pause_dir / "release").touch()
        first_out, _ = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
        close_all()

    assert len(second_rows) == 60
    assert first_out.startswith("error OwnershipFencedError"), first_out
    assert group_offsets(group_host.bootstrap_servers, group_name) == {p: 5 for p in range(12)}
    acknowledged = planner.acknowledge(end)
    planner.close()
    assert acknowledged == {p: (0, 5) for p in range(12)}
    assert set(queue.ack_counts().values()) == {1}


def test_restart_from_the_checkpoint_fences_the_previous_run_and_resumes_at_the_committed_offsets(
    spark, group_host, queue, group_name, tmp_path
):
    checkpoint = str(tmp_path / "checkpoint")
    options = {"source": "sqlite", "sqlite.path": queue.path}
    first_sink = consume_available(spark, group_host.bootstrap_servers, group_name, checkpoint, **options)
    first_run = group_host.ownership(group_name)
    old_generation = max(i.generation_id for i in first_run)
    zombie = first_run[-1]

    for partition in range(12):
        queue.append(partition, [f"p{partition}-second-run"])
    restarted_at_ms = time.monotonic_ns() // 1_000_000
    second_sink = consume_available(spark, group_host.bootstrap_servers, group_name, checkpoint, **options)

    assert set(first_sink.rows) == {(p, o) for p in range(12) for o in range(5)}
    # The second run resumed where the first committed: only the new records, once each.
    assert set(second_sink.rows) == {(p, 5) for p in range(12)}
    assert max(second_sink.deliveries.values()) == 1
    # The first run's members were removed: the second run reads in a newer generation...
    second_run = [i for i in group_host.ownership(group_name) if i.start_ms >= restarted_at_ms]
    assert second_run and min(i.generation_id for i in second_run) > old_generation
    # ...and a commit in the first run's name is refused.
    slot = zombie.member_id.split("-reader-")[1].split("-")[0]
    code = late_commit(
        group_host.bootstrap_servers,
        group_name,
        zombie.member_id,
        zombie.generation_id,
        f"{group_name}-reader-{slot}",
        "sqlite-queue",
        zombie.partition.partition,
        99,
    )
    assert code in (ErrorCode.FENCED_INSTANCE_ID, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION)
    assert group_offsets(group_host.bootstrap_servers, group_name) == {p: 6 for p in range(12)}
    assert group_host.ownership_overlaps(group_name) == []
