"""Start-up time and memory of a 3-broker wire server, in a fresh process (prints one JSON line).

    python benchmarks/_server_startup.py [BROKERS]

Imports first (timed apart), then times ``KafkaServer(brokers=3).start()`` up to the first
Metadata answer a client gets from it (a raw Metadata v1 request on a fresh connection,
retried every millisecond until it answers with every broker), and reads this process's
resident set size (VmRSS, /proc/self/status) after the imports and after the start.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import_started = time.perf_counter()
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._wire import first_metadata, rss_kb  # noqa: E402
from kgroup.server import KafkaServer  # noqa: E402

imported = time.perf_counter()


def main(brokers: int) -> dict:
    rss_imported = rss_kb("self")
    started_at = time.perf_counter()
    server = KafkaServer(brokers=brokers).start()
    start_returned = time.perf_counter()
    try:
        first_metadata(server.bootstrap_servers, brokers, budget_s=10.0)
        answered = time.perf_counter()
        return {
            "brokers": brokers,
            "import_s": imported - import_started,
            "start_call_s": start_returned - started_at,
            "first_metadata_s": answered - started_at,
            "rss_imported_kb": rss_imported,
            "rss_started_kb": rss_kb("self"),
        }
    finally:
        server.stop()


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)), flush=True)
