"""A consumer in its own process, so a test can SIGKILL it.

Usage: python integration_member_worker.py KIND BOOTSTRAP TOPIC GROUP STRATEGY
(KIND: ``kgroup`` or ``stock``).  Prints ``assigned``/``revoked``/``lost``
lines with partition numbers so the parent can follow its ownership.
"""
from __future__ import annotations

import sys
import time

from kafka import ConsumerRebalanceListener


class _Echo(ConsumerRebalanceListener):
    def _say(self, kind, tps):
        print(kind, " ".join(str(tp.partition) for tp in sorted(tps)), flush=True)

    def on_partitions_revoked(self, revoked):
        self._say("revoked", revoked)

    def on_partitions_assigned(self, assigned):
        self._say("assigned", assigned)

    def on_partitions_lost(self, lost):
        self._say("lost", lost)


def main(kind: str, bootstrap: str, topic: str, group: str, strategy: str) -> None:
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from integration_factories import make_consumer

    consumer = make_consumer(kind, bootstrap, group, strategy)
    consumer.subscribe([topic], listener=_Echo())
    print("started", flush=True)
    deadline = time.monotonic() + 120  # never outlive a broken test run
    while time.monotonic() < deadline:
        consumer.poll(timeout_ms=100)


if __name__ == "__main__":
    main(*sys.argv[1:6])
