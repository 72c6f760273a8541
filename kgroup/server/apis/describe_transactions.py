"""DescribeTransactions (API key 65, KIP-664): each id answered by the broker coordinating it."""
from __future__ import annotations

from typing import Any, List

from kafka.protocol.admin import DescribeTransactionsRequest, DescribeTransactionsResponse
from kafka.protocol.api_key import ApiKey

from kgroup.core import transaction_messages as tx
from kgroup.server.apis.definition import TopicIds, group_api
from kgroup.server.apis.txn_answers import by_topic


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
    return [tx.DescribeTransactionsRequest(tuple(req.transactional_ids))]


def _to_struct(parts: List[Any], version: int, request: Any, topics: TopicIds) -> Any:
    (resp,) = parts
    state = DescribeTransactionsResponse.TransactionState
    return DescribeTransactionsResponse(version=version, throttle_time_ms=0, transaction_states=[
        state(version=version, error_code=int(t.error_code), transactional_id=t.transactional_id,
              transaction_state=t.state, transaction_timeout_ms=t.transaction_timeout_ms,
              transaction_start_time_ms=t.transaction_start_time_ms, producer_id=t.producer_id,
              producer_epoch=t.producer_epoch, topics=[
                  state.TopicData(version=version, topic=topic, partitions=[p for p, _ in partitions])
                  for topic, partitions in by_topic((tp, 0) for tp in t.partitions).items()])
        for t in resp.transactions])


API = group_api(ApiKey.DescribeTransactions, (0, 0), DescribeTransactionsRequest,
                DescribeTransactionsResponse, _to_core, _to_struct)
