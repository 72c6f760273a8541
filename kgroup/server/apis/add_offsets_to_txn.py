"""AddOffsetsToTxn (API key 25): adds the group's ``__consumer_offsets`` partition to the transaction."""
from __future__ import annotations

from typing import Any, List

from kafka.protocol.api_key import ApiKey
from kafka.protocol.producer import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse

from kgroup.core import transaction_messages as tx
from kgroup.server.apis.definition import TopicIds, group_api
from kgroup.server.apis.txn_answers import for_version


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
    return [tx.AddOffsetsToTxnRequest(req.transactional_id, req.producer_id, req.producer_epoch,
                                      req.group_id)]


def _to_struct(parts: List[Any], version: int, request: Any, topics: TopicIds) -> Any:
    (resp,) = parts
    return AddOffsetsToTxnResponse(version=version, throttle_time_ms=0,
                                   error_code=for_version(resp.error_code, version, 2))


API = group_api(ApiKey.AddOffsetsToTxn, (0, 4), AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, _to_core,
                _to_struct)
