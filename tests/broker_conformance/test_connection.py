"""A broker's answer that does not decode stops that scenario with a recorded step, not the suite."""
from __future__ import annotations

import socket
import struct
import threading

from kgroup.broker_conformance.runner import compare_steps
from kgroup.broker_conformance.scenario import ConformanceScenario, run_scenario
from kgroup.broker_conformance import builders


def _broker_answering_garbage(listener: socket.socket) -> None:
    connection, _ = listener.accept()
    with connection:
        (size,) = struct.unpack(">i", connection.recv(4))
        request = b""
        while len(request) < size:
            request += connection.recv(size - len(request))
        correlation_id = request[4:8]
        connection.sendall(struct.pack(">i", 6) + correlation_id + b"\x00\x07")  # a truncated body


def test_an_undecodable_answer_is_recorded_and_stops_the_scenario():
    listener = socket.create_server(("127.0.0.1", 0))
    server = threading.Thread(target=_broker_answering_garbage, args=(listener,), daemon=True)
    server.start()

    def script(ctx):
        ctx.call(ctx.connect(), builders.offset_fetch(2, "g", {"t": [0]}))
        ctx.note("after", "never reached")

    try:
        steps, problem = run_scenario(f"127.0.0.1:{listener.getsockname()[1]}",
                                      ConformanceScenario("x.garbage", "broker", "test", script))
    finally:
        server.join(timeout=5)
        listener.close()
    assert steps == [["OffsetFetch v2", "undecodable answer"]]
    assert problem is not None and "does not decode" in problem
    assert compare_steps([["OffsetFetch v2", {"error_code": 0}]], steps) == [
        'step 1 OffsetFetch v2: answer: expected {"error_code":0}, got "undecodable answer"']
