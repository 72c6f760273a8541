"""Adapters that do I/O: threads, sockets, kafka-python, in-process transport."""
