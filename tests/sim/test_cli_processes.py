"""``kgroup campaign`` / ``compare`` / ``simulate`` as processes: Ctrl-C and progress (issue 22).

Ctrl-C in a terminal sends SIGINT to the whole foreground process group, the pool's workers included;
each test starts the command in a session of its own (``start_new_session``) and signals that group
the same way.  Progress is drawn only on a terminal: a pseudo-terminal stands in for one.
"""
from __future__ import annotations

import fcntl
import multiprocessing
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path
from typing import List, Optional, Tuple

import pytest

import kgroup

REPO = Path(kgroup.__file__).resolve().parents[1]
QUICK = ["--members", "3", "--partitions", "6", "--duration-ms", "6000", "--max-faults", "3"]
#: Generous bounds for a machine shared with other jobs: a quick seed takes about a second.
LIMIT_S = 120


def _start(arguments: List[str], stderr_on_a_terminal: bool = False,
           size: Tuple[int, int] = (40, 120)) -> Tuple[subprocess.Popen, Optional[int]]:
    """The command in a new session (its own process group); with ``stderr_on_a_terminal`` its stderr
    is a pseudo-terminal of ``size`` (rows, columns) whose reading end is returned."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("COLUMNS", None)
    terminal = None
    stderr = subprocess.PIPE
    if stderr_on_a_terminal:
        terminal, stderr = pty.openpty()
        fcntl.ioctl(stderr, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
    process = subprocess.Popen([sys.executable, "-m", "kgroup.cli", *arguments], stdout=subprocess.PIPE,
                               stderr=stderr, env=env, start_new_session=True)
    if terminal is not None:
        os.close(stderr)
    return process, terminal


def _read_terminal_until(terminal: int, pattern: Optional[str], limit_s: float) -> str:
    """What the command wrote on the terminal until ``pattern`` appears (None: until every process
    holding the terminal has ended)."""
    deadline = time.monotonic() + limit_s
    text = b""
    while time.monotonic() < deadline:
        if pattern is not None and re.search(pattern, text.decode(errors="replace")):
            break
        ready, _, _ = select.select([terminal], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(terminal, 65536)
            except OSError:  # EIO: no process holds the terminal any more
                chunk = b""
            if not chunk:
                if pattern is None:
                    break
                raise AssertionError(f"the command ended before {pattern!r}: {text!r}")
            text += chunk
    else:
        raise AssertionError(f"no {pattern!r} within {limit_s} s: {text[-2000:]!r}")
    return text.decode(errors="replace")


def _children(pid: int) -> List[int]:
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            children.append(int(stat.parent.name))
    return children


def _wait_for_workers(process: subprocess.Popen, count: int) -> None:
    deadline = time.monotonic() + LIMIT_S
    while len(_children(process.pid)) < count:
        assert process.poll() is None, "the command ended before its workers started"
        assert time.monotonic() < deadline, f"no {count} worker processes within {LIMIT_S} s"
        time.sleep(0.05)


def _group_has_ended(group: int, limit_s: float = 10) -> bool:
    deadline = time.monotonic() + limit_s
    while True:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def _kill_group(group: int) -> None:
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_ctrl_c_on_a_campaign_prints_one_line_exits_130_stops_the_workers_and_keeps_the_summary():
    process, terminal = _start(["campaign", "--seeds", "40", "--workers", "2", *QUICK],
                               stderr_on_a_terminal=True)
    assert terminal is not None
    try:
        _wait_for_workers(process, 2)
        # At least one seed done (the progress bar counts it), so the summary has something to keep.
        _read_terminal_until(terminal, r"\b[1-9]\d*/40\b", LIMIT_S)
        os.killpg(process.pid, signal.SIGINT)
        rest = _read_terminal_until(terminal, None, LIMIT_S)
        stdout, _ = process.communicate(timeout=LIMIT_S)
        assert process.returncode == 130
        assert _group_has_ended(process.pid), "worker processes outlived the command"
        messages = [line for line in re.split(r"[\r\n]+", rest) if line.strip() and "seed/s" not in line
                    and "%|" not in line]
        assert len(messages) == 1, rest
        match = re.fullmatch(r"kgroup: interrupted after (\d+) of 40 seeds; the summary covers those",
                             messages[0].strip())
        assert match, messages
        finished = int(match.group(1))
        assert 1 <= finished < 40
        total_row = re.search(r"^total\s+(\d+)\s", stdout.decode(), re.MULTILINE)
        assert total_row and int(total_row.group(1)) == finished, stdout
        assert b"Traceback" not in stdout and "Traceback" not in rest
    finally:
        _kill_group(process.pid)
        os.close(terminal)


def test_ctrl_c_on_a_comparison_prints_one_line_exits_130_and_stops_every_worker(tmp_path):
    process, _ = _start(["compare", "--seeds", "20", "--workers", "2", "--out", str(tmp_path / "report"),
                         *QUICK])
    try:
        _wait_for_workers(process, 2)
        os.killpg(process.pid, signal.SIGINT)
        stdout, stderr = process.communicate(timeout=LIMIT_S)
        assert process.returncode == 130
        assert _group_has_ended(process.pid), "worker processes outlived the command"
        lines = stderr.decode().splitlines()
        assert len(lines) == 1, lines
        assert re.fullmatch(r"kgroup: interrupted after \d+ of 400 runs; no report written", lines[0]), lines
        assert stdout == b"" and not (tmp_path / "report").exists()
    finally:
        _kill_group(process.pid)


def test_ctrl_c_on_a_simulation_prints_one_line_and_exits_130(tmp_path):
    # The schedule comes through a named pipe that stays empty: once the pipe has a reader, the
    # command is inside its run, and the interrupt lands there (not during Python's start-up).
    schedule = tmp_path / "schedule"
    os.mkfifo(schedule)
    process, _ = _start(["simulate", "--schedule", str(schedule), *QUICK])
    writer = None
    try:
        deadline = time.monotonic() + LIMIT_S
        while writer is None:
            try:
                writer = os.open(schedule, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: nobody reads the pipe yet
                assert process.poll() is None, process.communicate()
                assert time.monotonic() < deadline, f"the command did not open its schedule in {LIMIT_S} s"
                time.sleep(0.05)
        os.killpg(process.pid, signal.SIGINT)
        stdout, stderr = process.communicate(timeout=LIMIT_S)
        assert process.returncode == 130
        assert stderr.decode().splitlines() == ["kgroup: interrupted"] and stdout == b""
    finally:
        if writer is not None:
            os.close(writer)
        _kill_group(process.pid)


# (0, 0): a pseudo-terminal nobody sized, as `script` makes when run from a pipe.
@pytest.mark.parametrize("size", [(40, 120), (0, 0)], ids=["120 columns", "unsized"])
def test_a_campaign_shows_progress_with_rate_and_eta_from_the_first_seed_on_a_terminal(size):
    process, terminal = _start(["campaign", "--seeds", "3", "--workers", "1", *QUICK],
                               stderr_on_a_terminal=True, size=size)
    assert terminal is not None
    try:
        shown = _read_terminal_until(terminal, None, LIMIT_S)
        process.communicate(timeout=LIMIT_S)
        assert process.returncode == 0
        assert re.search(r"\b0/3\b", shown), shown  # drawn before the first seed finished
        assert re.search(r"\b3/3 \[\d\d:\d\d<00:00, +[\d.]+s?(?:/seed|seed/s)", shown), shown  # rate, ETA
        assert "0 violated" in shown
    finally:
        _kill_group(process.pid)
        os.close(terminal)


def test_a_campaign_prints_no_progress_when_stderr_is_not_a_terminal():
    process, _ = _start(["campaign", "--seeds", "2", "--workers", "1", *QUICK])
    try:
        stdout, stderr = process.communicate(timeout=LIMIT_S)
        assert process.returncode == 0 and b"2 seeds in" in stdout
        assert stderr == b""
    finally:
        _kill_group(process.pid)


def test_a_ctrl_c_that_another_thread_takes_while_the_pool_starts_stops_the_whole_pool(monkeypatch):
    """The race behind orphaned workers: SIGINT is blocked in the main thread while the pool forks, but
    the kernel hands it to any thread that does not block it (tqdm's monitor thread did), and Python
    then raised KeyboardInterrupt in the main thread inside Pool(): the pool was never terminated and
    its worker handler forked new workers while the process exited."""
    from kgroup.sim import campaign

    go, sent = threading.Event(), threading.Event()

    def ctrl_c() -> None:  # this thread was started before the pool, so SIGINT is not blocked in it
        if go.wait(LIMIT_S):
            os.kill(os.getpid(), signal.SIGINT)
            sent.set()

    helper = threading.Thread(target=ctrl_c, daemon=True)
    helper.start()
    real_pool = multiprocessing.Pool
    pools = []

    def pool_hit_while_starting(*args, **kwargs):
        pool = real_pool(*args, **kwargs)
        pools.append(pool)
        go.set()
        assert sent.wait(LIMIT_S)
        sum(range(1000))  # bytecodes, where Python runs its signal handlers
        return pool

    monkeypatch.setattr(campaign.multiprocessing, "Pool", pool_hit_while_starting)
    with pytest.raises(KeyboardInterrupt):
        campaign._pool(2)
    helper.join(LIMIT_S)
    [pool] = pools
    workers = list(pool._pool)  # type: ignore[attr-defined]
    assert workers and not any(worker.is_alive() for worker in workers)
