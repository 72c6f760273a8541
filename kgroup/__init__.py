"""kgroup: Kafka consumer-group rebalancing in pure Python."""
from kgroup.values import Assignment, Subscription, TopicPartition

__version__ = "0.1.0"

__all__ = ["Assignment", "Subscription", "TopicPartition", "__version__"]
