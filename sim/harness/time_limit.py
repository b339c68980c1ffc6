"""A wall-clock limit on one run: a run still going after ``seconds`` raises :class:`RunTimeout`.

The limit is a ``SIGALRM`` timer (``setitimer(ITIMER_REAL)``), armed around the simulation in
whichever process executes the run: the CLI process for the serial backend, the worker process
for the local pool (a pool worker runs its task in its main thread), Ray's worker for Ray. The
signal interrupts the simulation between two Python bytecodes, so a run is stopped within
moments of its limit unless it is inside one long call into native code. Where no such timer
can be set (not the main thread of the process, or a platform without ``SIGALRM``) the run
goes without a limit. The exception is raised inside the run, so the results store records the
run as failed with ``RunTimeout: timed out after N s`` and its traceback, which shows where the
run was.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class RunTimeout(BaseException):
    """A run that went on past its wall-clock limit. Like ``KeyboardInterrupt`` it is not an
    ``Exception``: the signal lands wherever the run happens to be, and a handler there that
    catches ``Exception`` (the profile's YAML parser wraps every parser error) must not turn
    it into another error."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"timed out after {seconds:g} s (wall clock; --run-timeout)")
        self.seconds = seconds


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`RunTimeout` in this thread if the block runs longer than ``seconds``
    (None or <= 0: no limit; see module docstring for where it applies)."""
    usable = (seconds is not None and seconds > 0 and hasattr(signal, "SIGALRM")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return

    def expire(signum, frame):
        raise RunTimeout(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
