"""The Kafka APIs the wire server answers: one module per API key, one registry built from them.

Each module (named after its API) declares one :class:`~kgroup.server.apis.definition.ServedApi`:
key, versions served, kafka-python's request and response classes, its broker-side handler or
group codec, and its error answer.  Adding an API is one new module and its line here.

Version ranges start at the oldest version Kafka 4 still serves (the schema's ``validVersions``)
and stop at the newest whose semantics kgroup implements, so a range holds both non-flexible and
flexible versions and old and new clients negotiate what they share.  Ranges stop short of the
topic-id-only versions (Fetch v13+, Produce v13, OffsetCommit/OffsetFetch v10).
"""
from __future__ import annotations

from typing import Dict, Tuple

from kafka.protocol.api_key import ApiKey

from kgroup.server.apis import (
    add_offsets_to_txn, add_partitions_to_txn, api_versions, consumer_group_describe,
    consumer_group_heartbeat, create_partitions, create_topics, delete_groups, delete_topics,
    describe_cluster, describe_groups, describe_transactions, end_txn, fetch, find_coordinator,
    heartbeat, init_producer_id, join_group, leave_group, list_groups, list_offsets, list_transactions,
    metadata, offset_commit, offset_delete, offset_fetch, offset_for_leader_epoch, produce, sync_group,
)
from kgroup.server.apis import txn_offset_commit
from kgroup.server.apis.definition import ServedApi

__all__ = ["SERVED_APIS", "SUPPORTED_VERSIONS", "served_api", "supports"]

#: Every served API, by key (built once, at import).
SERVED_APIS: Dict[ApiKey, ServedApi] = {api.key: api for api in (
    produce.API,
    fetch.API,
    list_offsets.API,
    metadata.API,
    offset_commit.API,
    offset_fetch.API,
    find_coordinator.API,
    join_group.API,
    heartbeat.API,
    leave_group.API,
    sync_group.API,
    describe_groups.API,
    list_groups.API,
    api_versions.API,
    create_topics.API,
    delete_topics.API,
    init_producer_id.API,
    add_partitions_to_txn.API,
    add_offsets_to_txn.API,
    end_txn.API,
    offset_for_leader_epoch.API,
    create_partitions.API,
    delete_groups.API,
    offset_delete.API,
    consumer_group_heartbeat.API,
    consumer_group_describe.API,
    describe_cluster.API,
    txn_offset_commit.API,
    describe_transactions.API,
    list_transactions.API,
)}

#: API key -> (min version, max version) this server answers (what ApiVersions lists).
SUPPORTED_VERSIONS: Dict[ApiKey, Tuple[int, int]] = {key: api.versions for key, api in SERVED_APIS.items()}


def served_api(api_key: int) -> "ServedApi | None":
    """The served API with this key (None for a key the server does not serve or Kafka does not know)."""
    try:
        return SERVED_APIS.get(ApiKey(api_key))
    except ValueError:
        return None


def supports(api_key: int, api_version: int) -> bool:
    """Whether the server answers ``api_key`` at ``api_version``."""
    api = served_api(api_key)
    return api is not None and api.supports(api_version)
