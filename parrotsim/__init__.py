"""parrotsim: a discrete-event simulator of LLM application serving (Parrot, OSDI'24) with a
real-kernel calibration harness.

The package keeps the repository's folders as its parts: ``parrotsim.sim`` (the SimPy model in
``sim.model`` and the experiment harness in ``sim.harness``), ``parrotsim.policies``,
``parrotsim.workloads``, ``parrotsim.calibrate``, ``parrotsim.kernels`` (GPU only),
``parrotsim.reports``, and the shipped experiment files in ``parrotsim.experiments``. Scripts
use :mod:`parrotsim.api`; the command line is :mod:`parrotsim.cli`.
"""

__version__ = "0.2.0"
