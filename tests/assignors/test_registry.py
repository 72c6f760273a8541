"""get_assignor: built-in names, unknown names, entry-point plugins."""
from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from kgroup.assignors import ENTRY_POINT_GROUP, get_assignor, known_assignors
from kgroup.errors import UnknownAssignorError

BUILTIN = {
    "range": ("kgroup.assignors.range", "RangeAssignor"),
    "roundrobin": ("kgroup.assignors.roundrobin", "RoundRobinAssignor"),
    "sticky": ("kgroup.assignors.sticky", "StickyAssignor"),
    "cooperative-sticky": ("kgroup.assignors.cooperative_sticky", "CooperativeStickyAssignor"),
}


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_builtin_names(name):
    module_name, class_name = BUILTIN[name]
    cls = getattr(importlib.import_module(module_name), class_name)
    assignor = get_assignor(name)
    assert type(assignor) is cls
    assert assignor.name == name
    assert get_assignor(name) is not assignor  # a fresh instance each time


def test_unknown_name_lists_known_ones():
    with pytest.raises(UnknownAssignorError) as info:
        get_assignor("no-such-assignor")
    message = str(info.value)
    assert "no-such-assignor" in message
    for name in BUILTIN:
        assert name in message
    assert isinstance(info.value, KeyError)


PLUGIN = '''
from kgroup.assignors import Assignor
from kgroup.values import Assignment


class EverythingToFirst(Assignor):
    name = "everything-to-first"

    def assign(self, partitions_per_topic, subscriptions, partition_racks=None):
        members = sorted(subscriptions)
        out = {m: Assignment() for m in members}
        if members:
            first = members[0]
            out[first] = Assignment([(t, p) for t in sorted(partitions_per_topic)
                                     for p in range(partitions_per_topic[t])
                                     if t in subscriptions[first].topics])
        return out
'''


def test_entry_point_plugin_is_found_by_name(tmp_path, monkeypatch):
    (tmp_path / "kgroup_test_plugin.py").write_text(PLUGIN)
    dist_info = tmp_path / "kgroup_test_plugin-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: kgroup-test-plugin\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(textwrap.dedent(f"""
        [{ENTRY_POINT_GROUP}]
        everything-to-first = kgroup_test_plugin:EverythingToFirst
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "kgroup_test_plugin", raising=False)

    assert "everything-to-first" in known_assignors()
    assignor = get_assignor("everything-to-first")
    assert type(assignor).__name__ == "EverythingToFirst"
    result = assignor.assign({"t": 2}, {"b": _sub(["t"]), "a": _sub(["t"])})
    assert [tuple(tp) for tp in result["a"].partitions] == [("t", 0), ("t", 1)]


def _sub(topics):
    from kgroup.values import Subscription

    return Subscription(topics)
