"""OffsetFetch (API key 9), answered by the group coordinators (v8+: several groups per request)."""
from __future__ import annotations

import collections
from typing import Any, Dict, List

from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import OffsetFetchRequest, OffsetFetchResponse

from kgroup.core import messages as m
from kgroup.server.apis.definition import TopicIds, group_api
from kgroup.values import TopicPartition


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
    if version >= 9:
        # v9 (KIP-848): each group names the member asking and its epoch.
        wanted = [(g.group_id, g.topics, g.member_id, g.member_epoch) for g in req.groups]
    elif version >= 8:
        wanted = [(g.group_id, g.topics, None, -1) for g in req.groups]
    else:
        wanted = [(req.group_id, req.topics, None, -1)]
    out: List[object] = []
    for group_id, asked, member_id, member_epoch in wanted:
        partitions = None if asked is None else tuple(
            TopicPartition(t.name, i) for t in asked for i in t.partition_indexes)
        require_stable = bool(req.require_stable) if version >= 7 else False
        out.append(m.OffsetFetchRequest(group_id, partitions, require_stable, member_id, member_epoch))
    return out


def _fetched_partitions(resp: Any) -> Dict[str, list]:
    grouped: Dict[str, list] = collections.defaultdict(list)
    for p in resp.partitions:
        grouped[p.topic_partition.topic].append(p)
    return grouped


def _to_struct(parts: List[Any], version: int, request: Any, topic_ids: TopicIds) -> Any:
    if version >= 8:
        group_cls = OffsetFetchResponse.OffsetFetchResponseGroup
        topics_cls = group_cls.OffsetFetchResponseTopics
        partitions_cls = topics_cls.OffsetFetchResponsePartitions
        groups = []
        for core_request, resp in zip(_to_core(request, version, topic_ids), parts):
            assert isinstance(core_request, m.OffsetFetchRequest)
            topics = [
                topics_cls(version=version, name=name, partitions=[
                    partitions_cls(
                        version=version, partition_index=p.topic_partition.partition,
                        committed_offset=p.committed.offset if p.committed else -1,
                        committed_leader_epoch=p.committed.leader_epoch if p.committed else -1,
                        metadata=p.committed.metadata if p.committed else "", error_code=int(p.error_code))
                    for p in ps])
                for name, ps in _fetched_partitions(resp).items()
            ]
            groups.append(group_cls(version=version, group_id=core_request.group_id, topics=topics,
                                    error_code=int(resp.error_code)))
        return OffsetFetchResponse(version=version, throttle_time_ms=0, groups=groups)
    (resp,) = parts
    topic_cls = OffsetFetchResponse.OffsetFetchResponseTopic
    partition_cls = topic_cls.OffsetFetchResponsePartition
    code = resp.error_code
    topics = [
        topic_cls(version=version, name=name, partitions=[
            partition_cls(
                version=version, partition_index=p.topic_partition.partition,
                committed_offset=p.committed.offset if p.committed else -1,
                committed_leader_epoch=p.committed.leader_epoch if p.committed else -1,
                metadata=p.committed.metadata if p.committed else "",
                # v0-v1 have no top-level error: it goes on every partition.
                error_code=int(p.error_code if version >= 2 or not code else code))
            for p in ps])
        for name, ps in _fetched_partitions(resp).items()
    ]
    if version < 2 and code and not topics and request.topics:
        # v0-v1 have nowhere else to put a group error: every requested partition carries it
        # (Kafka's OffsetFetchRequest.getErrorResponse), or the client reads "no offsets".
        topics = [
            topic_cls(version=version, name=t.name, partitions=[
                partition_cls(version=version, partition_index=i, committed_offset=-1,
                              committed_leader_epoch=-1, metadata="", error_code=int(code))
                for i in t.partition_indexes])
            for t in request.topics
        ]
    return OffsetFetchResponse(version=version, throttle_time_ms=0, topics=topics, error_code=int(code))


API = group_api(ApiKey.OffsetFetch, (1, 9), OffsetFetchRequest, OffsetFetchResponse, _to_core, _to_struct)
