"""The sans-I/O core: state machines and timers driven by an integer ``now_ms``.

Nothing below this package opens a socket, starts a thread or reads a clock.
"""
