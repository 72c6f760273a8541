"""A black-box, wire-level conformance suite for Kafka brokers, held to Apache Kafka's own answers.

Scenarios (:mod:`.scenario`) are short scripts of requests over real sockets, built with
kafka-python's ``kafka.protocol`` classes; their answers are normalised (:mod:`.normalise`) and
compared step by step with answers recorded from the pinned Apache Kafka
(``recorded/kafka-<version>.json``, made by :func:`record_kafka`).  ``kgroup conformance
--bootstrap HOST:PORT`` runs it against any broker.
"""
from kgroup.broker_conformance.runner import (
    compare_steps, default_recording, load_recording, record_kafka, run_suite, select,
)

__all__ = ["compare_steps", "default_recording", "load_recording", "record_kafka", "run_suite", "select"]
