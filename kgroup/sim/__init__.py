"""Deterministic simulation of consumer groups: seeded fault schedules on a virtual clock, a network
model, consumer applications, a recorded history and the checker that judges it (docs/simulator.md)."""
from kgroup.sim.checker import CHECKS, Overlap, Violation
from kgroup.sim.history import History
from kgroup.sim.schedule import Fault, Schedule, generate_schedule, parse_schedule
from kgroup.sim.simulator import SimConfig, Verdict, run, run_seed

__all__ = ["CHECKS", "Fault", "History", "Overlap", "Schedule", "SimConfig", "Verdict", "Violation",
           "generate_schedule", "parse_schedule", "run", "run_seed"]
