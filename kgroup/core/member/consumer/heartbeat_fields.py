"""Full and incremental ConsumerGroupHeartbeat requests.

Kafka's ``ConsumerHeartbeatRequestManager.HeartbeatState``.

A heartbeat always carries the group id, member id and member epoch (and
the instance id of a static member).  Every other field is sent only when
it differs from what the last heartbeat carried, else it is null ("unchanged"):
the rebalance timeout, the subscribed topics or regex, the server assignor,
the rack and the owned partitions.  A member that switches between topic
names and a regex clears the other field (an empty list, or an empty regex,
which Kafka reads as none), in every full heartbeat too once it has used it,
since the coordinator keeps what a rejoining static member had.  A joining member sends them all (a *full*
heartbeat); after any failed heartbeat the member forgets what it sent
(:meth:`SentFields.reset`), so the next one is full again - the coordinator
may have lost the previous one.  The owned partitions are compared by
:class:`LocalAssignment` value (partitions and local epoch), so the first
heartbeat after a reconciliation always carries them: that heartbeat is the
acknowledgement.
"""
from __future__ import annotations

from typing import Optional

import attrs

from kgroup.core.consumer_group_messages import ConsumerGroupHeartbeatRequest
from kgroup.core.member.consumer.config import ConsumerProtocolConfig
from kgroup.core.member.consumer.local_assignment import LocalAssignment


@attrs.define
class SentFields:
    """What the last heartbeat carried, field by field (None / -1: nothing sent yet)."""

    rebalance_timeout_ms: int = -1
    subscribed_topic_names: Optional[frozenset] = None
    server_assignor: Optional[str] = None
    rack_id: Optional[str] = None
    local_assignment: Optional[LocalAssignment] = None
    subscribed_topic_regex: Optional[str] = None
    #: Whether any heartbeat carried topic names / a regex (kept across reset: what to clear).
    names_ever_sent: bool = False
    regex_ever_sent: bool = False

    def reset(self) -> None:
        self.rebalance_timeout_ms = -1
        self.subscribed_topic_names = None
        self.server_assignor = None
        self.rack_id = None
        self.local_assignment = None
        self.subscribed_topic_regex = None


def build_heartbeat(config: ConsumerProtocolConfig, sent: SentFields, *, member_id: str, member_epoch: int,
                    subscription: frozenset, assignment: LocalAssignment, full: bool,
                    incoming: frozenset = frozenset(), regex: Optional[str] = None
                    ) -> ConsumerGroupHeartbeatRequest:
    """The next heartbeat; records in ``sent`` what it carries.  ``full``: send every field (joining).

    ``incoming``: partitions the coordinator has assigned that the member has not reconciled yet;
    they are reported as owned with the reconciled ones (see ``ConsumerProtocolMember._incoming``).
    """
    rebalance_timeout_ms = -1
    if full or sent.rebalance_timeout_ms != config.rebalance_timeout_ms:
        rebalance_timeout_ms = sent.rebalance_timeout_ms = config.rebalance_timeout_ms
    topics, regex_field = _subscription_fields(sent, subscription, regex, full)
    server_assignor = None
    assignor = config.group_remote_assignor
    if assignor is not None and (full or sent.server_assignor != assignor):
        server_assignor = sent.server_assignor = assignor
    rack_id = None
    if config.rack_id is not None and (full or sent.rack_id != config.rack_id):
        rack_id = sent.rack_id = config.rack_id
    owned = None
    if full or sent.local_assignment != assignment:
        owned = tuple(sorted(assignment.partitions | incoming))
        sent.local_assignment = assignment
    return ConsumerGroupHeartbeatRequest(
        group_id=config.group_id, member_id=member_id, member_epoch=member_epoch,
        instance_id=config.group_instance_id, rack_id=rack_id, rebalance_timeout_ms=rebalance_timeout_ms,
        subscribed_topic_names=topics, subscribed_topic_regex=regex_field, server_assignor=server_assignor,
        topic_partitions=owned,
        api_version=config.heartbeat_api_version, client_id=config.client_id)


def _subscription_fields(sent: SentFields, subscription: frozenset, regex: Optional[str],
                         full: bool) -> tuple[Optional[tuple[str, ...]], Optional[str]]:
    """(SubscribedTopicNames, SubscribedTopicRegex) of the next heartbeat: the one in use when it changed
    (or ``full``), and the other emptied when the member used it before."""
    topics: Optional[tuple[str, ...]] = None
    regex_field: Optional[str] = None
    if regex is None:
        if full or sent.subscribed_topic_names != subscription:
            topics = tuple(sorted(subscription))
            sent.subscribed_topic_names = subscription
            sent.names_ever_sent = sent.names_ever_sent or bool(subscription)
        if sent.subscribed_topic_regex or (full and sent.regex_ever_sent):
            regex_field = sent.subscribed_topic_regex = ""
        return topics, regex_field
    if full or sent.subscribed_topic_regex != regex:
        regex_field = sent.subscribed_topic_regex = regex
        sent.regex_ever_sent = True
    if sent.subscribed_topic_names or (full and sent.names_ever_sent):
        topics = ()
        sent.subscribed_topic_names = frozenset()
    return topics, regex_field
