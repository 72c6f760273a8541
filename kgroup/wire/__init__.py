"""Kafka's ConsumerProtocol bytes: subscriptions, assignments, sticky user data."""
