"""Both members satisfy one declared contract (issue 25 point 4), and adapters drive them through it.

Kafka's consumer has one ``Consumer`` API over its classic and KIP-848 implementations
(``ClassicKafkaConsumer``, ``AsyncKafkaConsumer``); kgroup's two members share
:class:`~kgroup.core.member.MemberContract` the same way.
"""
import ast
import inspect
import pathlib
import subprocess
import sys

import pytest

from kgroup.core.member import GroupMember, MemberConfig, MemberContract
from kgroup.core.member.consumer import ConsumerProtocolConfig, ConsumerProtocolMember
from kgroup.core.member.shared.contract import MEMBER_CONTRACT_NAMES
from kgroup.errors import ConfigError
from kgroup.values import TopicPartition

ROOT = pathlib.Path(__file__).resolve().parents[2]
MEMBER_CLASSES = (GroupMember, ConsumerProtocolMember)


def classic() -> GroupMember:
    return GroupMember(MemberConfig(group_id="g"), 0)


def consumer_protocol() -> ConsumerProtocolMember:
    return ConsumerProtocolMember(ConsumerProtocolConfig(group_id="g"), 0, random_bytes=lambda n: b"\x01" * n)


def test_the_contract_names_what_adapters_use():
    assert {"subscribe", "on_app_poll", "take_events", "outbound", "on_response", "on_transport_error",
            "get_timer", "commit_offsets", "fetch_committed", "close", "closed", "assignment",
            "generation", "state"} <= MEMBER_CONTRACT_NAMES
    # One timer verb pair: the old deadline verb is gone from the contract and from both members.
    assert "next_deadline_ms" not in MEMBER_CONTRACT_NAMES
    assert not any(hasattr(cls, "next_deadline_ms") for cls in MEMBER_CLASSES)


@pytest.mark.parametrize("make", [classic, consumer_protocol])
def test_each_member_satisfies_the_contract_at_runtime(make):
    member = make()
    assert isinstance(member, MemberContract)
    missing = sorted(name for name in MEMBER_CONTRACT_NAMES if not hasattr(member, name))
    assert missing == []


@pytest.mark.parametrize("cls", MEMBER_CLASSES)
def test_each_members_methods_take_the_contracts_parameters(cls):
    for name in sorted(MEMBER_CONTRACT_NAMES):
        declared = getattr(MemberContract, name)
        if isinstance(declared, property) or not callable(declared):
            continue
        wanted = list(inspect.signature(declared).parameters)
        got = list(inspect.signature(getattr(cls, name)).parameters)
        assert got[:len(wanted)] == wanted, f"{cls.__name__}.{name}{got} vs the contract's {wanted}"


def test_a_type_checker_accepts_both_members_as_the_contract(tmp_path):
    """The static half: mypy checks an assignment of each member to the contract."""
    probe = tmp_path / "member_contract_probe.py"
    probe.write_text(
        "from kgroup.core.member import GroupMember, MemberConfig, MemberContract\n"
        "from kgroup.core.member.consumer import ConsumerProtocolConfig, ConsumerProtocolMember\n"
        "classic: MemberContract = GroupMember(MemberConfig(group_id='g'), 0)\n"
        "consumer: MemberContract = ConsumerProtocolMember(ConsumerProtocolConfig(group_id='g'), 0,\n"
        "                                                  random_bytes=bytes)\n"
        "not_a_member: MemberContract = MemberConfig(group_id='g')  # the check can fail\n")
    result = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "--follow-imports=silent",
                             "--cache-dir", str(tmp_path / "cache"), str(probe)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "member_contract_probe.py:6:" in errors[0], result.stdout


def test_a_classic_only_commit_argument_is_refused_by_the_consumer_protocol_member():
    member = consumer_protocol()
    with pytest.raises(ConfigError, match="classic group protocol"):
        member.commit_offsets({TopicPartition("t", 0): 1}, 0, generation=classic().generation)


def _member_class_checks(path: pathlib.Path) -> list[str]:
    """``isinstance(x, <a member class>)`` calls and Unions of the member classes in one module."""
    names = {cls.__name__ for cls in MEMBER_CLASSES}
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        is_call = isinstance(node, ast.Call) and len(node.args) == 2
        if is_call and getattr(node.func, "id", None) == "isinstance":
            classes = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            if any(getattr(c, "id", None) in names for c in classes):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} isinstance")
        if isinstance(node, ast.Subscript) and getattr(node.value, "id", None) == "Union":
            members = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if any(getattr(c, "id", None) in names for c in members):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} Union")
    return found


def test_adapters_and_the_simulator_never_ask_which_member_they_drive():
    modules = [p for pkg in ("kgroup", "kgroup_spark") for p in sorted((ROOT / pkg).rglob("*.py"))]
    assert [hit for path in modules for hit in _member_class_checks(path)] == []
