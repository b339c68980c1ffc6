"""Run the Triton kernels on the CPU through Triton's interpreter.

TRITON_INTERPRET must be set before ``triton`` is imported and before any kernel is defined,
so it is set here, at collection time of this folder.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")
