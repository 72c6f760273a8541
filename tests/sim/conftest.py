import os
import sys

# planted_bugs.py here, and the campaign's (tests/campaign/planted_bugs.py) as campaign_planted_bugs.
sys.path.insert(0, os.path.dirname(__file__))
