"""Client libraries' own test suites, run against a broker: fidelity checks kgroup did not write.

* :mod:`.go_test_suite` - fetch a Go module from the Go module proxy, build one package's test binary
  once, run it through ``go tool test2json``;
* :mod:`.franz_go` - franz-go's ``pkg/kgo`` tests (``python -m kgroup.client_suites.franz_go``);
* :mod:`.confluent_kafka_go` - confluent-kafka-go's ``kafka`` package tests, librdkafka underneath
  (``python -m kgroup.client_suites.confluent_kafka_go``).

It sits in the top layer, beside :mod:`kgroup.broker_conformance`: its command starts kgroup's own
broker (:mod:`kgroup.server`) or Apache Kafka (:mod:`kgroup.testing.apache_kafka`) for a run.
"""
