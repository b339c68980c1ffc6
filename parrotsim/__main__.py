"""``python -m parrotsim``: the command line."""

import sys

from parrotsim.entry import main

sys.exit(main())
