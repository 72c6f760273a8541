"""AddPartitionsToTxn (API key 24): v0-v3 one producer's partitions (clients), v4 batched
``transactions`` with ``verify_only`` (brokers, KIP-890 part 1).  As ``KafkaApis`` does, a
transaction naming a partition that does not exist is answered by the broker alone:
UNKNOWN_TOPIC_OR_PARTITION for those, OPERATION_NOT_ATTEMPTED for the others."""
from __future__ import annotations

from typing import Any, List, Tuple

from kafka.protocol.api_key import ApiKey
from kafka.protocol.producer import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse

from kgroup.core import transaction_messages as tx
from kgroup.core.error_codes import ErrorCode
from kgroup.server.apis.definition import GroupCodec, ServedApi, TopicIds
from kgroup.server.apis.txn_answers import by_topic, for_version
from kgroup.values import TopicPartition

_Result = AddPartitionsToTxnResponse.AddPartitionsToTxnResult
#: Per-topic results: their own class before v4 and inside each transaction's result from v4.
_TOPIC_RESULT = {False: AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult,
                 True: _Result.AddPartitionsToTxnTopicResult}


def _transactions(req: Any, version: int) -> List[Tuple[str, int, int, bool, List[TopicPartition]]]:
    """(transactional id, producer id, epoch, verify only, partitions) of each transaction asked about."""
    if version < 4:
        return [(req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                 req.v3_and_below_producer_epoch, False, _partitions(req.v3_and_below_topics))]
    return [(t.transactional_id, t.producer_id, t.producer_epoch, bool(t.verify_only), _partitions(t.topics))
            for t in req.transactions]


def _partitions(topics: Any) -> List[TopicPartition]:
    return [TopicPartition(t.name, p) for t in topics or () for p in t.partitions or ()]


def _all_exist(partitions: List[TopicPartition], topics: TopicIds) -> bool:
    return all(topics.has_partition(tp.topic, tp.partition) for tp in partitions)


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
    return [tx.AddPartitionsToTxnRequest(transactional_id, producer_id, epoch, partitions, verify_only)
            for transactional_id, producer_id, epoch, verify_only, partitions in _transactions(req, version)
            if _all_exist(partitions, topics)]


def _to_struct(parts: List[Any], version: int, request: Any, topics: TopicIds) -> Any:
    answers = iter(parts)
    topic_result = _TOPIC_RESULT[version >= 4]
    results = []
    for transactional_id, _, _, _, partitions in _transactions(request, version):
        if _all_exist(partitions, topics):
            errors = [(tp, for_version(code, version, 2)) for tp, code in next(answers).errors]
        else:
            errors = [(tp, int(ErrorCode.OPERATION_NOT_ATTEMPTED)
                       if topics.has_partition(tp.topic, tp.partition)
                       else int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)) for tp in partitions]
        topic_results = [
            topic_result(version=version, name=topic, results_by_partition=[
                topic_result.AddPartitionsToTxnPartitionResult(version=version, partition_index=p,
                                                               partition_error_code=code)
                for p, code in by_partition])
            for topic, by_partition in by_topic(errors).items()]
        results.append((transactional_id, topic_results))
    if version < 4:
        ((_, topic_results),) = results
        return AddPartitionsToTxnResponse(version=version, throttle_time_ms=0,
                                          results_by_topic_v3_and_below=topic_results)
    by_transaction = [_Result(version=version, transactional_id=transactional_id, topic_results=topic_results)
                      for transactional_id, topic_results in results]
    return AddPartitionsToTxnResponse(version=version, throttle_time_ms=0, error_code=0,
                                      results_by_transaction=by_transaction)


def _error_answer(request: Any, version: int, code: int) -> Any:
    """``AddPartitionsToTxnRequest.getErrorResponse``: every partition before v4, the top-level code
    from v4."""
    if version < 4:
        return _CODEC.error_answer(request, version, code)
    return AddPartitionsToTxnResponse(version=version, throttle_time_ms=0, error_code=code,
                                      results_by_transaction=[])


_CODEC = GroupCodec(_to_core, _to_struct)
# v5 adds TRANSACTION_ABORTABLE (KIP-890): not served.
API = ServedApi(ApiKey.AddPartitionsToTxn, (0, 4), AddPartitionsToTxnRequest, AddPartitionsToTxnResponse,
                _error_answer, group=_CODEC)
