"""``python -m kgroup.server [options]``: the same as ``kgroup serve``."""
import sys

from kgroup.server.command import main

sys.exit(main())
