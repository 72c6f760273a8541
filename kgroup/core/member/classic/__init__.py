"""The classic group protocol member (Kafka's ConsumerCoordinator, AbstractCoordinator)."""
