"""Test-only sources the Spark executors import (tests/spark is on their PYTHONPATH).

``PausingQueueSource`` is the SQLite queue that, once per ``sqlite.pause_dir``,
stops in the middle of reading partition 0: it writes its process id to
``<dir>/reader.pid`` and waits until ``<dir>/release`` exists, so a test can
kill, freeze (or outrun) exactly that attempt while it holds the partition.
With ``sqlite.pause_each_batch=true`` it does so once per batch instead, the
files named after the batch's first offset of partition 0
(``reader-<start>.pid``, ``release-<start>``).
"""

from __future__ import annotations

import os
import time
from typing import Iterator

from kgroup_spark.sources.sqlite_queue import SqliteQueueSource

PAUSE_LIMIT_S = 120


class PausingQueueSource(SqliteQueueSource):
    def read(self, partition: int, start_offset: int, end_offset: int) -> Iterator[tuple]:
        pause_dir = self.options.get("sqlite.pause_dir")
        suffix = f"-{start_offset}" if self.options.get("sqlite.pause_each_batch") == "true" else ""
        for index, record in enumerate(super().read(partition, start_offset, end_offset)):
            if pause_dir and partition == 0 and index == 1 and _claim(pause_dir, suffix):
                _wait_for_release(pause_dir, suffix)
            yield record


def _claim(pause_dir: str, suffix: str = "") -> bool:
    """True for the first reader to get here (an atomic create), False for every later one."""
    try:
        fd = os.open(os.path.join(pause_dir, f"claimed{suffix}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.close(fd)
    with open(os.path.join(pause_dir, f"reader{suffix}.pid.tmp"), "w") as out:
        out.write(str(os.getpid()))
    pid_file = os.path.join(pause_dir, f"reader{suffix}.pid")
    os.replace(pid_file + ".tmp", pid_file)
    return True


def _wait_for_release(pause_dir: str, suffix: str = "") -> None:
    deadline = time.monotonic() + PAUSE_LIMIT_S
    while not os.path.exists(os.path.join(pause_dir, f"release{suffix}")):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{pause_dir}: never released")
        time.sleep(0.05)
