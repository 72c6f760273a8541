"""The request trace is a bounded ring (issue 23, item 5).

Before, every request ever served stayed in a list: about 250 MB per million requests, with
no way for ``kgroup serve`` to clear it.  Now ``ServerConfig.trace_entries`` (10,000 by
default) bounds it, and 0 turns it off.
"""
from __future__ import annotations

import tracemalloc

import pytest
from kafka.protocol.metadata import ApiVersionsRequest

from kgroup.errors import ConfigError
from kgroup.server import ServerConfig
from kgroup.server.faults import RequestTrace, RequestTraceEntry


def _frame(request_frame) -> bytes:
    return request_frame(ApiVersionsRequest(version=0), 1, "ring")


def test_the_trace_keeps_only_the_latest_entries_and_counts_what_it_dropped(make_engine, kafka_codec):
    request_frame, _, _ = kafka_codec
    harness = make_engine(brokers=1, trace_entries=100)
    connection = harness.connect()
    frame = _frame(request_frame)
    for now_ms in range(1, 1_001):
        harness.now_ms = now_ms
        harness.handle(connection, frame)
    trace = harness.engine.trace
    assert len(trace) == 100 and trace.dropped == 900
    assert [e.received_ms for e in trace] == list(range(901, 1_001))
    assert all(e.outcome == "answered" for e in trace)


def test_memory_stays_flat_once_the_ring_is_full(make_engine, kafka_codec):
    # Six times the ring's size: the first fill costs what it costs, the next 2,500 requests
    # nothing (the unbounded list grew about 230 bytes per request: ~575 KB for 2,500).
    request_frame, _, _ = kafka_codec
    harness = make_engine(brokers=1, trace_entries=500)
    connection = harness.connect()
    frame = _frame(request_frame)
    tracemalloc.start()
    try:
        for _ in range(500):
            harness.engine.handle(connection, frame, 1)
        filled = tracemalloc.get_traced_memory()[0]
        for _ in range(2_500):
            harness.engine.handle(connection, frame, 1)
        grown = tracemalloc.get_traced_memory()[0] - filled
    finally:
        tracemalloc.stop()
    assert len(harness.engine.trace) == 500 and harness.engine.trace.dropped == 2_500
    assert grown < 100_000, f"memory grew {grown} bytes after the trace was full"


def test_the_default_ring_is_small():
    assert ServerConfig().trace_entries == 10_000  # ~2.5 MB at ~250 bytes an entry


def test_a_zero_size_trace_records_nothing(make_engine, kafka_codec):
    request_frame, _, _ = kafka_codec
    harness = make_engine(brokers=1, trace_entries=0)
    connection = harness.connect()
    replies = harness.handle(connection, _frame(request_frame))
    assert replies and replies[0].data is not None
    assert len(harness.engine.trace) == 0 and not harness.engine.trace.enabled


def test_a_negative_size_is_a_config_error():
    with pytest.raises(ConfigError, match="trace_entries"):
        ServerConfig(trace_entries=-1)
    with pytest.raises(ConfigError, match="max_entries"):
        RequestTrace(-1)


def test_server_trace_reads_the_ring(server1, raw_client):
    client = raw_client(server1.listener(1))
    for _ in range(3):
        client.request(ApiVersionsRequest(version=0), client_id="reader")
    entries = server1.trace(api="ApiVersions", client_id="reader")
    assert [type(e) for e in entries] == [RequestTraceEntry] * 3
    server1.clear_trace()
    assert server1.trace(client_id="reader") == []
