"""Pinned digests of whole runs: a speed-up of the simulator must not change what it simulates.

Each digest covers the recorded history's text, the verdict's violations, coverage, overlaps (sorted:
their order follows frozenset iteration) and simulated time.  They were recorded before the
throughput work of docs/simulator.md (*Performance*); a change that alters a digest changes behaviour
and must say why (and re-pin).
"""
import hashlib

import pytest

from kgroup.sim import SimConfig, run

SMALL = SimConfig(members=3, partitions=6, duration_ms=10_000, max_faults=5)


def run_digest(seed: int, config: SimConfig) -> str:
    verdict = run(seed, config)
    text = "\n".join([
        verdict.history.format(),
        repr(sorted(str(v) for v in verdict.violations)),
        repr(sorted(verdict.coverage.items())),
        repr(sorted((str(o.partition), o.members, o.start_ms, o.end_ms) for o in verdict.overlaps)),
        str(verdict.simulated_ms), verdict.assignor, verdict.schedule.to_text()])
    return hashlib.sha256(text.encode()).hexdigest()


STATIC_COOPERATIVE = SimConfig(members=3, partitions=6, duration_ms=10_000, max_faults=5, static=True,
                               assignor="cooperative-sticky")
PINNED = [
    (1, SMALL, "626289b1060803a14e35dc73e57fa51e23fb5c05713e57923af9f4377cd3bd24"),
    (7, SMALL, "df266bdff00f6c89cd2a050406dacb8fa2c0810568595a795867419a9d575c18"),
    (12, STATIC_COOPERATIVE, "e559fd57ce4507deb2efca3d6f61ab1ce416f4691b3cf847a7a98499c807f8c7"),
    # The throughput shape: 5 members, 12 partitions, 60 s.
    (3, SimConfig(), "ae2d6b78a9dc8e236f51834ead729d65a478c1ec7ff5bcc07a0d8ea12332ce6a"),
]


@pytest.mark.parametrize("seed, config, digest", PINNED,
                         ids=[f"seed{s}-{c.members}x{c.partitions}" for s, c, _d in PINNED])
def test_a_run_still_simulates_exactly_what_it_did(seed, config, digest):
    assert run_digest(seed, config) == digest
