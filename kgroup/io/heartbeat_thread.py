"""The background thread that keeps a member alive while the application is busy.

It heartbeats, answers the session and poll timers and completes a
rebalance in progress (SyncGroup after a JoinGroup response) through the
runner, under the runner's lock.  It never runs application callbacks; the
polling thread does.  It sleeps until the member's next deadline, so an
idle member costs one wake-up per heartbeat interval.
"""
from __future__ import annotations

import threading

from kgroup.io.runner import MemberRunner

#: Longest blocking transport poll while holding the lock (the foreground can interrupt it anyway).
MAX_BLOCK_MS = 100
#: Longest sleep with nothing scheduled (bounds the reaction to a missed kick).
MAX_IDLE_MS = 1000


class HeartbeatThread:
    def __init__(self, runner: MemberRunner, name: str = "kgroup-heartbeat") -> None:
        self._runner = runner
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        #: An exception that ended the thread (the polling thread re-raises it).
        self.error: BaseException | None = None

    def start(self) -> None:
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout_s: float = 2.0) -> bool:
        """Stop and join (bounded); True when the thread ended."""
        self._stop.set()
        self._runner.kick.set()
        self._runner.transport.wakeup()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _run(self) -> None:
        runner = self._runner
        try:
            while not self._stop.is_set():
                if runner.foreground_waiting:
                    self._stop.wait(0.001)
                    continue
                with runner.lock:
                    if self._stop.is_set():
                        return
                    runner.kick.clear()
                    runner.step(0)
                    if runner.member.has_in_flight():
                        runner.step(min(MAX_BLOCK_MS, runner.wait_ms(MAX_BLOCK_MS)))
                        continue
                    wait_ms = runner.wait_ms(MAX_IDLE_MS)
                runner.kick.wait(wait_ms / 1000)
        except BaseException as exc:  # surfaced by the polling thread, never swallowed
            self.error = exc
