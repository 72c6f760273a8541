"""``python -m kgroup.server [options]``: the same as ``kgroup serve``."""
import sys

from kgroup.cli import main

sys.exit(main(["serve", *sys.argv[1:]]))
