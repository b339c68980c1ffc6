"""Clocks of the replay loop: seconds since the replay's start (``t0``).

:class:`WallClock` reads ``time.perf_counter`` and really sleeps; :class:`FakeClock` only moves
when told to (a fake forward pass advances it by the cost model's time), so tests of the loop
are deterministic and take no time.
"""

from __future__ import annotations

import time


class WallClock:
    """``time.perf_counter() - t0``; :meth:`start` sets ``t0``."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def start(self) -> None:
        self.t0 = time.perf_counter()

    def now(self) -> float:
        return time.perf_counter() - self.t0

    def sleep_until(self, t: float) -> None:
        """Sleep until ``now() >= t`` (the last half millisecond spinning, for precision)."""
        while True:
            left = t - self.now()
            if left <= 0:
                return
            if left > 5e-4:
                time.sleep(left - 5e-4)


class FakeClock:
    """A clock that stands still until :meth:`advance` or :meth:`sleep_until` moves it."""

    def __init__(self) -> None:
        self.t = 0.0

    def start(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def sleep_until(self, t: float) -> None:
        self.t = max(self.t, t)

    def advance(self, dt: float) -> None:
        self.t += dt
