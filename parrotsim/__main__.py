"""``python -m parrotsim``: the command line."""

import sys

from parrotsim.cli import main

sys.exit(main())
