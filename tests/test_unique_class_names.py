"""Every class name in the library (kgroup + kgroup_spark) names one class (issue 25 point 4).

The exceptions are listed with their reason; none may be added without one.
"""
import ast
import collections
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: kgroup.io.kafka_python.errors: the drop-in's dual classes derive from the kgroup class of the same
#: name and from kafka-python's, and bear that name on purpose: they are public names of the drop-in and
#: a handler written for either library catches them (docs/kafka_python.md, "Errors").
DROP_IN_DUALS = frozenset({
    "ClusterError", "CommitFailedError", "ConfigError", "FencedInstanceIdError", "GroupMemberError",
    "IllegalStateTransition", "InvalidProtocolMetadata", "KGroupError", "MemberClosedError", "ProtocolError",
    "RetriableCommitFailedError", "TransportError", "UnknownAssignorError",
    # The in-memory cluster's transactional producer's errors (issue 26), dual like the others.
    "ProducerFencedError", "ProducerTimeoutError", "TransactionAbortableError", "TransactionError",
    "TransactionStateError",
})
#: Nothing else is defined twice (issue 25: kgroup.server's trace entry is RequestTraceEntry, the KIP-848
#: wire structs moved to kgroup.wire as ...Struct).
NOT_YET_UNIQUE: frozenset = frozenset()


def class_definitions() -> dict:
    where = collections.defaultdict(list)
    for package in ("kgroup", "kgroup_spark"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef):
                    where[node.name].append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return where


def test_class_names_are_unique_in_the_library():
    duplicated = {name: places for name, places in class_definitions().items() if len(places) > 1}
    unexplained = {name: places for name, places in duplicated.items()
                   if name not in DROP_IN_DUALS | NOT_YET_UNIQUE}
    assert unexplained == {}


def test_the_drop_in_duals_subclass_the_kgroup_class_of_their_name():
    import kgroup.errors
    import kgroup.io.kafka_python.errors as drop_in
    import kgroup.io.transport

    for name in DROP_IN_DUALS:
        dual = getattr(drop_in, name)
        original = getattr(kgroup.errors, name, None) or getattr(kgroup.io.transport, name)
        assert dual is not original and issubclass(dual, original), name
