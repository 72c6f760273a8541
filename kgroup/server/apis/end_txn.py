"""EndTxn (API key 26): commit or abort; answered once PrepareCommit / PrepareAbort is committed
(the markers follow).  v5 (KIP-890 part 2: an epoch bump on every EndTxn) is not served."""
from __future__ import annotations

from typing import Any, List

from kafka.protocol.api_key import ApiKey
from kafka.protocol.producer import EndTxnRequest, EndTxnResponse

from kgroup.core import transaction_messages as tx
from kgroup.server.apis.definition import TopicIds, group_api
from kgroup.server.apis.txn_answers import for_version


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
    return [tx.EndTxnRequest(req.transactional_id, req.producer_id, req.producer_epoch, bool(req.committed))]


def _to_struct(parts: List[Any], version: int, request: Any, topics: TopicIds) -> Any:
    (resp,) = parts
    return EndTxnResponse(version=version, throttle_time_ms=0,
                          error_code=for_version(resp.error_code, version, 2))


API = group_api(ApiKey.EndTxn, (0, 4), EndTxnRequest, EndTxnResponse, _to_core, _to_struct)
