import os
import sys

# The helper modules here (sim_planted_bugs, sim_histories) import by name.
sys.path.insert(0, os.path.dirname(__file__))
