"""Binds a pure member (any :class:`~kgroup.core.member.MemberContract`: the classic ``GroupMember`` or the
KIP-848 ``ConsumerProtocolMember``) to a Transport and a real clock, behind one lock.

The runner never runs application callbacks: it moves requests and
responses between the member and the transport.  Two threads use it - the
polling thread (``foreground()``) and the heartbeat thread - and the
foreground wins the lock promptly: it wakes a blocked ``transport.poll``
and the heartbeat thread yields while a foreground caller waits.

:func:`block_until` is the one blocking loop of the polling thread, shared by
``GroupConsumer`` and the kafka-python ``ConsumerCoordinator`` (their poll,
commit/fetch waits and close).
"""
from __future__ import annotations

import contextlib
import threading
from typing import Callable, Optional

from kgroup.core.member import MemberContract
from kgroup.io.clock import Clock, monotonic_ms, wait_until_ms
from kgroup.io.transport import Transport, TransportError

#: Longest single blocking wait of the polling thread: it looks at its deadline, a wakeup and
#: the heartbeat thread's health at least this often.
BLOCKING_STEP_MS = 50


class MemberRunner:
    def __init__(self, member: MemberContract, transport: Transport, clock: Optional[Clock] = None) -> None:
        self.member = member
        self.transport = transport
        self.clock = clock or monotonic_ms
        self.lock = threading.RLock()
        #: Set when the background thread should look again (new request, close).
        self.kick = threading.Event()
        self._tokens: dict[int, int] = {}
        self._foreground_waiting = 0
        self._counter_lock = threading.Lock()

    @property
    def foreground_waiting(self) -> bool:
        return self._foreground_waiting > 0

    @contextlib.contextmanager
    def foreground(self):
        """Take the lock for the polling thread, interrupting a blocked background poll."""
        with self._counter_lock:
            self._foreground_waiting += 1
        try:
            self.transport.wakeup()
            self.lock.acquire()
        finally:
            with self._counter_lock:
                self._foreground_waiting -= 1
        try:
            yield self.member
        finally:
            self.lock.release()
            self.kick.set()

    def step(self, block_ms: int = 0, send_first: bool = True) -> int:
        """Send what is due, wait up to ``block_ms`` for completions, hand them over. Caller holds the
        lock.  ``send_first=False``: the caller knows the member has nothing to send before the
        completions (its deadline has not come and nothing touched it since it was last asked)."""
        sent_at = self.clock()
        if send_first:
            self._send(sent_at)
        completions = self.transport.poll(max(0, block_ms))
        now = self.clock()
        for completion in completions:
            token = self._tokens.pop(completion.correlation_id, None)
            if token is None:
                continue
            if isinstance(completion.result, TransportError):
                self.member.on_transport_error(token, now)
            else:
                self.member.on_response(token, completion.result, now)
        if completions or now != sent_at:
            # Answers or time may have made something due; otherwise the member, sans-I/O, has
            # nothing new since the first _send (outbound at one instant with no input in between).
            self._send(now)
        if len(self._tokens) > 64:
            # Requests the member abandoned (coordinator moved) may never be answered.
            waiting = self.member.in_flight_tokens()
            self._tokens = {cid: token for cid, token in self._tokens.items() if token in waiting}
        return len(completions)

    def _send(self, now_ms: int) -> None:
        for ob in self.member.outbound(now_ms):
            self._tokens[self.transport.send(ob.request, ob.node_id)] = ob.token

    def wait_ms(self, cap_ms: int) -> int:
        """How long the caller may wait before the member has something to do (>= 1 ms)."""
        return wait_until_ms(self.member.get_timer(), self.clock(), cap_ms)


def block_until(runner: MemberRunner, deadline_ms: Optional[int], done: Callable[[], bool], *,
                check: Optional[Callable[[], None]] = None,
                after_step: Optional[Callable[[MemberContract], None]] = None,
                wake_for_member: bool = False) -> bool:
    """The polling thread's blocking loop: True once ``done()``, False once ``deadline_ms`` passed.

    Each round calls ``done()`` (which may do the round's work: take and dispatch events),
    then ``check()`` (the heartbeat thread's health), then waits for completions for at most
    :data:`BLOCKING_STEP_MS` and the time left, and calls ``after_step(member)`` under the lock.
    With ``wake_for_member`` the wait also ends at the member's next deadline (a poll loop must
    run the member's timers itself: it sends the JoinGroup the heartbeat thread does not).
    ``deadline_ms=None`` waits for ever.
    """
    while True:
        if done():
            return True
        if check is not None:
            check()
        remaining = None if deadline_ms is None else deadline_ms - runner.clock()
        if remaining is not None and remaining <= 0:
            return False
        wait = BLOCKING_STEP_MS if remaining is None else min(remaining, BLOCKING_STEP_MS)
        with runner.foreground() as member:
            runner.step(min(wait, runner.wait_ms(BLOCKING_STEP_MS)) if wake_for_member else wait)
            if after_step is not None:
                after_step(member)
