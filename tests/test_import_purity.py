"""The sans-I/O core imports nothing that does I/O (project issue 10).

``kgroup.core``, ``kgroup.assignors`` and ``kgroup.wire`` must load in a fresh
interpreter without ``socket``, ``threading``, ``selectors``, ``asyncio`` or any
``kafka`` (kafka-python) module: kafka-python is reached only through the
drop-in adapters under ``kgroup.io.kafka_python`` and
``kgroup.assignors.kafka_python``.  Each check runs in a subprocess so that
modules other tests imported do not hide a regression.  The interpreter's own
start-up (``site`` and ``.pth`` hooks) may already load some of these, and
attrs (the core's one dependency) imports ``threading`` for a lock, so the test
compares ``sys.modules`` after importing attrs with ``sys.modules`` after the
import of kgroup's modules.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

FORBIDDEN_MODULES = ("socket", "threading", "selectors", "asyncio", "ssl")
FORBIDDEN_PACKAGES = ("kafka",)

_PROBE = """
import builtins, json, sys
# attrs, the one library the core is built on, imports ``threading`` for a lock (attr/_compat.py);
# it starts no thread.  What it loads is the baseline.  Modules already loaded that way would not
# show up as new, so kgroup's own import statements are watched as well.
import attr
before = set(sys.modules)
imported_by_kgroup = set()
original_import = builtins.__import__

def watching_import(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__name__", "")
    if level == 0 and importer.split(".")[0] == "kgroup":
        imported_by_kgroup.add(name)
    return original_import(name, globals, locals, fromlist, level)

builtins.__import__ = watching_import
for name in sys.argv[1:]:
    __import__(name)
builtins.__import__ = original_import
print(json.dumps(sorted((set(sys.modules) - before) | imported_by_kgroup)))
"""

_WORKTREE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _modules_loaded_by(*module_names: str) -> list[str]:
    completed = subprocess.run(
        [sys.executable, "-c", _PROBE, *module_names],
        cwd=_WORKTREE, capture_output=True, text=True, check=True, timeout=120,
    )
    return json.loads(completed.stdout.strip().splitlines()[-1])


def _forbidden(loaded: list[str]) -> list[str]:
    return sorted(
        name for name in loaded
        if name in FORBIDDEN_MODULES
        or any(name == pkg or name.startswith(pkg + ".") for pkg in FORBIDDEN_PACKAGES)
    )


@pytest.mark.parametrize("module_names", [
    ("kgroup.core", "kgroup.assignors", "kgroup.wire"),
    ("kgroup.core.member", "kgroup.core.coordinator", "kgroup.core.cluster.group_hosting",
     "kgroup.core.broker", "kgroup.core.messages"),
    ("kgroup.assignors.range", "kgroup.assignors.roundrobin", "kgroup.assignors.sticky",
     "kgroup.assignors.cooperative_sticky", "kgroup.wire.consumer_protocol", "kgroup.wire.sticky_user_data"),
    ("kgroup",),
])
def test_pure_modules_load_no_io_or_kafka_python(module_names):
    loaded = _modules_loaded_by(*module_names)
    assert any(name.startswith("kgroup") for name in loaded), "the probe imported nothing from kgroup"
    assert _forbidden(loaded) == []


def test_the_probe_sees_kafka_python_when_the_drop_in_loads():
    """Guard against a probe that cannot fail: the drop-in adapter does load kafka-python."""
    loaded = _modules_loaded_by("kgroup.io.kafka_python.convert")
    assert "kafka" in _forbidden(loaded)


def test_kgroup_topic_partition_is_interchangeable_with_kafka_pythons():
    from kafka.structs import TopicPartition as KafkaTopicPartition

    from kgroup.values import TopicPartition

    ours, theirs = TopicPartition("t", 3), KafkaTopicPartition("t", 3)
    assert ours == theirs and hash(ours) == hash(theirs)
    assert {ours: 1}[theirs] == 1 and {theirs: 1}[ours] == 1
    assert ours._fields == theirs._fields
    assert (ours.topic, ours.partition) == (theirs.topic, theirs.partition)
    assert ours < TopicPartition("t", 4) and TopicPartition("s", 9) < ours
