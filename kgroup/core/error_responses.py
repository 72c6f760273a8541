"""Error answers for any group request or response, as a broker gives them.

A broker that is not (or no longer) a group's coordinator answers every kind
of group request with an error in that request's own response shape, and a
coordinator whose write failed turns a ready response into an error.  Both
need one error response per message type; this module is that table.
"""
from __future__ import annotations

from typing import Any, Callable

from kgroup.core import consumer_group_messages as cg
from kgroup.core import messages as m
from kgroup.core import transaction_messages as tx
from kgroup.core.error_codes import ErrorCode

# -- from a request ------------------------------------------------------------

# Each builder is looked up by its message's exact type, so it reads that type's fields: Any, not object.
_FROM_REQUEST: dict[type, Callable[[Any, ErrorCode], object]] = {
    m.JoinGroupRequest: lambda req, code: m.JoinGroupResponse(code, member_id=req.member_id),
    m.SyncGroupRequest: lambda req, code: m.SyncGroupResponse(code),
    m.HeartbeatRequest: lambda req, code: m.HeartbeatResponse(code),
    m.LeaveGroupRequest: lambda req, code: m.LeaveGroupResponse(code),
    m.OffsetCommitRequest: lambda req, code: m.OffsetCommitResponse(
        tuple(m.PartitionError(c.topic_partition, code) for c in req.offsets)),
    m.TxnOffsetCommitRequest: lambda req, code: m.TxnOffsetCommitResponse(
        tuple(m.PartitionError(c.topic_partition, code) for c in req.offsets)),
    m.OffsetFetchRequest: lambda req, code: m.OffsetFetchResponse(code),
    m.OffsetDeleteRequest: lambda req, code: m.OffsetDeleteResponse(code),
    m.FindCoordinatorRequest: lambda req, code: m.FindCoordinatorResponse(code),
    m.DescribeGroupsRequest: lambda req, code: m.DescribeGroupsResponse(
        tuple(m.DescribedGroup(code, gid, "") for gid in req.groups)),
    m.ListGroupsRequest: lambda req, code: m.ListGroupsResponse(code),
    m.DeleteGroupsRequest: lambda req, code: m.DeleteGroupsResponse(
        tuple(m.DeletedGroup(gid, code) for gid in req.groups)),
    cg.ConsumerGroupHeartbeatRequest: lambda req, code: cg.ConsumerGroupHeartbeatResponse(code),
    cg.ConsumerGroupDescribeRequest: lambda req, code: cg.ConsumerGroupDescribeResponse(
        tuple(cg.DescribedConsumerGroup(code, gid) for gid in req.group_ids)),
    tx.InitProducerIdRequest: lambda req, code: tx.InitProducerIdResponse(code),
    tx.AddPartitionsToTxnRequest: lambda req, code: tx.AddPartitionsToTxnResponse(
        req.transactional_id, tuple((tp, code) for tp in req.partitions)),
    tx.AddOffsetsToTxnRequest: lambda req, code: tx.AddOffsetsToTxnResponse(code),
    tx.EndTxnRequest: lambda req, code: tx.EndTxnResponse(code),
    tx.DescribeTransactionsRequest: lambda req, code: tx.DescribeTransactionsResponse(
        tuple(tx.DescribedTransaction(code, tid) for tid in req.transactional_ids)),
    tx.ListTransactionsRequest: lambda req, code: tx.ListTransactionsResponse(code),
}


def for_request(request: object, code: ErrorCode) -> object:
    """The response a broker sends for ``request`` when it refuses it with ``code``."""
    build = _FROM_REQUEST.get(type(request))
    if build is None:
        raise TypeError(f"no error response for {type(request).__name__}")
    return build(request, code)


# -- from a response that can no longer be sent --------------------------------

_FROM_RESPONSE: dict[type, Callable[[Any, ErrorCode], object]] = {
    m.JoinGroupResponse: lambda resp, code: m.JoinGroupResponse(code, member_id=resp.member_id),
    m.SyncGroupResponse: lambda resp, code: m.SyncGroupResponse(code),
    m.HeartbeatResponse: lambda resp, code: m.HeartbeatResponse(code),
    m.LeaveGroupResponse: lambda resp, code: m.LeaveGroupResponse(code),
    m.OffsetCommitResponse: lambda resp, code: m.OffsetCommitResponse(
        tuple(m.PartitionError(p.topic_partition, code) for p in resp.partitions)),
    m.TxnOffsetCommitResponse: lambda resp, code: m.TxnOffsetCommitResponse(
        tuple(m.PartitionError(p.topic_partition, code) for p in resp.partitions)),
    m.OffsetFetchResponse: lambda resp, code: m.OffsetFetchResponse(code),
    m.OffsetDeleteResponse: lambda resp, code: m.OffsetDeleteResponse(code),
    m.DescribeGroupsResponse: lambda resp, code: m.DescribeGroupsResponse(
        tuple(m.DescribedGroup(code, g.group_id, "") for g in resp.groups)),
    m.ListGroupsResponse: lambda resp, code: m.ListGroupsResponse(code),
    m.DeleteGroupsResponse: lambda resp, code: m.DeleteGroupsResponse(
        tuple(m.DeletedGroup(r.group_id, code) for r in resp.results)),
    cg.ConsumerGroupHeartbeatResponse: lambda resp, code: cg.ConsumerGroupHeartbeatResponse(code),
    cg.ConsumerGroupDescribeResponse: lambda resp, code: cg.ConsumerGroupDescribeResponse(
        tuple(cg.DescribedConsumerGroup(code, g.group_id) for g in resp.groups)),
    tx.InitProducerIdResponse: lambda resp, code: tx.InitProducerIdResponse(code),
    tx.AddPartitionsToTxnResponse: lambda resp, code: tx.AddPartitionsToTxnResponse(
        resp.transactional_id, tuple((tp, code) for tp, _ in resp.errors)),
    tx.AddOffsetsToTxnResponse: lambda resp, code: tx.AddOffsetsToTxnResponse(code),
    tx.EndTxnResponse: lambda resp, code: tx.EndTxnResponse(code),
    tx.DescribeTransactionsResponse: lambda resp, code: tx.DescribeTransactionsResponse(
        tuple(tx.DescribedTransaction(code, t.transactional_id) for t in resp.transactions)),
    tx.ListTransactionsResponse: lambda resp, code: tx.ListTransactionsResponse(code),
}


def for_response(response: object, code: ErrorCode) -> object:
    """``response`` turned into an error answer (its write did not commit)."""
    build = _FROM_RESPONSE.get(type(response))
    if build is None:
        raise TypeError(f"no error response for {type(response).__name__}")
    return build(response, code)
