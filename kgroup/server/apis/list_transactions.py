"""ListTransactions (API key 66, KIP-664): the transactions this broker coordinates, by state and
producer id (v1: and by how long they have run).  v2's transactional-id pattern is not served."""
from __future__ import annotations

from typing import Any, List

from kafka.protocol.admin import ListTransactionsRequest, ListTransactionsResponse
from kafka.protocol.api_key import ApiKey

from kgroup.core import transaction_messages as tx
from kgroup.server.apis.definition import TopicIds, group_api


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
    return [tx.ListTransactionsRequest(tuple(req.state_filters or ()), tuple(req.producer_id_filters or ()),
                                       req.duration_filter if version >= 1 else -1)]


def _to_struct(parts: List[Any], version: int, request: Any, topics: TopicIds) -> Any:
    (resp,) = parts
    state = ListTransactionsResponse.TransactionState
    return ListTransactionsResponse(
        version=version, throttle_time_ms=0, error_code=int(resp.error_code),
        unknown_state_filters=list(resp.unknown_state_filters), transaction_states=[
            state(version=version, transactional_id=t.transactional_id, producer_id=t.producer_id,
                  transaction_state=t.state)
            for t in resp.transactions])


API = group_api(ApiKey.ListTransactions, (0, 1), ListTransactionsRequest, ListTransactionsResponse, _to_core,
                _to_struct)
