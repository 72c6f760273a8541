"""kgroup: Kafka consumer-group rebalancing in pure Python.

The pure core (values, assignors, coordinator, member, cluster) imports
nothing heavy; the kafka-python drop-ins are loaded on first use so that
``import kgroup`` stays cheap for users of the assignors alone.
"""
from kgroup.values import Assignment, Subscription, TopicPartition

__version__ = "0.1.0"

# name -> module that defines it; resolved lazily by __getattr__ below.
_LAZY_EXPORTS = {
    "KafkaConsumer": "kgroup.io.kafka_python.consumer",
    "ConsumerCoordinator": "kgroup.io.kafka_python.coordinator",
    "GroupConsumer": "kgroup.io.group_consumer",
    "GroupMember": "kgroup.core.member",
    "MemberConfig": "kgroup.core.member",
    "GroupCoordinator": "kgroup.core.coordinator",
    "GroupCoordinatorConfig": "kgroup.core.coordinator",
}


def __getattr__(name: str):
    module_name = _LAZY_EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'kgroup' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY_EXPORTS))


__all__ = ["Assignment", "Subscription", "TopicPartition", "__version__", *_LAZY_EXPORTS]
