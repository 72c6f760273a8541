"""kafka-python's protocol and record modules without its package ``__init__`` (``kgroup serve`` start-up).

The server reads and writes the wire through ``kafka.protocol`` and ``kafka.record``, but importing
any ``kafka.x`` first runs ``kafka/__init__.py``, which loads kafka-python's clients (admin, consumer,
producer, their networking): 101 of the 535 modules a serving process loaded, 30-90 ms of its start
(``-X importtime``), and nothing a request needs.
:func:`defer_kafka_package_init` registers the ``kafka`` package without running that file, so its
submodules import on their own; the first use of a name the file defines (``kafka.KafkaConsumer``,
``from kafka import KafkaProducer``, ``kafka.__version__``) runs it then, so an application that
imports kafka-python's clients in the same process sees the package it always saw.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import sys
import threading
import types
from typing import Any, Callable, List

__all__ = ["defer_kafka_package_init"]

_INIT_LOCK = threading.RLock()


def defer_kafka_package_init() -> None:
    """Make ``kafka`` importable as a bare package whose ``__init__`` runs on first attribute use.

    Does nothing if ``kafka`` is already imported (or kafka-python is not installed: the imports
    that need it fail as before)."""
    if "kafka" in sys.modules:
        return
    with _INIT_LOCK:
        if "kafka" in sys.modules:
            return
        spec = importlib.util.find_spec("kafka")
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            return
        package = importlib.util.module_from_spec(spec)
        # What kafka/__init__.py does first, so kafka-python's own log records before it runs are
        # handled as after it (no "no handler" fallback printing to stderr); the file adds its own.
        handler = logging.NullHandler()
        logging.getLogger("kafka").addHandler(handler)
        setattr(package, "__getattr__", _initializer(package, spec, handler))  # PEP 562
        sys.modules["kafka"] = package


def _initializer(package: types.ModuleType, spec: importlib.machinery.ModuleSpec,
                 handler: logging.Handler) -> Callable[[str], Any]:
    ran: List[bool] = []

    def run_package_init(name: str) -> Any:
        # Another thread asking while the file runs waits for it, as for any module being imported.
        with _INIT_LOCK:
            if not ran:
                ran.append(True)
                logging.getLogger("kafka").removeHandler(handler)
                try:
                    assert spec.loader is not None
                    spec.loader.exec_module(package)
                except BaseException:
                    sys.modules.pop("kafka", None)  # as a failed import leaves it: absent
                    raise
                finally:
                    vars(package).pop("__getattr__", None)
        if name in vars(package):
            return vars(package)[name]
        # A name the file does not define, or has not defined yet while it runs (a circular
        # ``from kafka import X`` inside it), is missing, as in any package.
        raise AttributeError(f"module 'kafka' has no attribute {name!r}")

    return run_package_init
