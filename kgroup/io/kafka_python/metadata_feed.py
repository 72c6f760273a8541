"""What the drop-in's member learns of the subscription and the cluster metadata (split from
``ConsumerCoordinator``).

The application's subscription (topic names, or a pattern matched here against the metadata, or with
KIP-848 sent to the coordinator to resolve) goes to the member; the partition counts of the topics the
group needs follow every metadata update.  ``on_cluster_update`` runs on kafka-python's IO thread,
the rest on the polling thread; the member is reached through the runner's foreground lock.
"""
from __future__ import annotations

from kgroup.io.runner import MemberRunner


class MetadataFeed:
    def __init__(self, subscription, cluster, runner: MemberRunner, *, consumer_protocol: bool,
                 exclude_internal_topics: bool) -> None:
        self._subscription = subscription
        self._cluster = cluster
        self._runner = runner
        self._consumer_protocol = consumer_protocol
        self._exclude_internal_topics = exclude_internal_topics
        #: Set when the coordinator closes: no more metadata requests, nor member updates from listeners.
        self.closed = False

    def server_resolves_pattern(self) -> bool:
        """KIP-848: a pattern subscription goes to the coordinator as SubscribedTopicRegex (Java's
        ``subscribe(SubscriptionPattern)``) instead of being matched here against the metadata."""
        return self._consumer_protocol and self._subscription.subscribed_pattern is not None

    def sync_subscription(self) -> None:
        if self.server_resolves_pattern():
            pattern = self._subscription.subscribed_pattern.pattern
            with self._runner.foreground() as member:
                if member.subscription_pattern != pattern:
                    member.subscribe_pattern(pattern, self._runner.clock())
            self.feed()
            return
        topics = set(self._subscription.subscription or ())
        with self._runner.foreground() as member:
            if topics != set(member.subscription):
                member.subscribe(sorted(topics), self._runner.clock())
            wanted = set(member.metadata_topics()) | topics
        if not wanted.issubset(self._subscription.group_subscription()):
            self._subscription.group_subscribe(wanted)
            self._cluster.set_topics(self._subscription.group_subscription())
            self._cluster.request_update()
        self.feed()

    def on_cluster_update(self, cluster) -> None:
        # Runs on kafka-python's IO thread: pattern subscriptions follow the
        # topic list, as in kafka-python; the member sees the partition counts.
        if self._subscription.subscribed_pattern and not self.server_resolves_pattern():
            topics = [t for t in cluster.topics(self._exclude_internal_topics)
                      if self._subscription.subscribed_pattern.match(t)]
            if set(topics) != self._subscription.subscription:
                self._subscription.change_subscription(topics)
                self._cluster.set_topics(self._subscription.group_subscription())
        if not self.closed:
            self.feed()

    def feed(self) -> None:
        """The partition counts of the group's topics to the member."""
        counts = {}
        unknown = False
        for topic in self._subscription.group_subscription():
            partitions = self._cluster.partitions_for_topic(topic)
            if partitions:
                counts[topic] = len(partitions)
            else:
                unknown = True
        if unknown and not self.closed and not self._cluster.need_update:
            # A subscribed topic the metadata does not know yet (just created, not yet on the broker
            # that answered): ask again after retry.backoff.ms, as Java's consumer keeps asking while
            # a topic is unknown.  kafka-python clears its update flag with any answer, even one to a
            # request sent before set_topics() added the topic; a leader that assigned without the
            # topic then waited for metadata.max.age.ms (5 min), its group Stable with nothing
            # assigned (seen on Apache Kafka 4.4.0, 3 nodes, the topic created just before).
            self._cluster.request_update()
        with self._runner.foreground() as member:
            member.update_metadata(counts, self._runner.clock())
