"""The classic group protocol member (Kafka's ConsumerCoordinator / AbstractCoordinator); see docs/member.md."""
