"""InitProducerId (API key 22), answered by the transaction hosting: a transactional id's coordinator
(epoch bump, fencing, KIP-360's producer id and epoch from v3), any broker for an idempotent producer."""
from __future__ import annotations

from typing import Any, List

from kafka.protocol.api_key import ApiKey
from kafka.protocol.producer import InitProducerIdRequest, InitProducerIdResponse

from kgroup.core import transaction_messages as tx
from kgroup.server.apis.definition import TopicIds, group_api
from kgroup.server.apis.txn_answers import for_version


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
    producer_id, producer_epoch = (req.producer_id, req.producer_epoch) if version >= 3 else (-1, -1)
    return [tx.InitProducerIdRequest(req.transactional_id, req.transaction_timeout_ms, producer_id,
                                     producer_epoch)]


def _to_struct(parts: List[Any], version: int, request: Any, topics: TopicIds) -> Any:
    (resp,) = parts
    return InitProducerIdResponse(version=version, throttle_time_ms=0,
                                  error_code=for_version(resp.error_code, version, 4),
                                  producer_id=resp.producer_id, producer_epoch=resp.producer_epoch)


# v6 is KIP-939's two-phase commit (enable2Pc, keepPreparedTxn): not served.
API = group_api(ApiKey.InitProducerId, (0, 5), InitProducerIdRequest, InitProducerIdResponse, _to_core,
                _to_struct)
