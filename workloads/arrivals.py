"""Arrival processes for open-loop request streams (times in seconds).

``poisson``: exponential inter-arrival gaps of mean 1/rate (the old vLLM benchmark and Parrot's
artifact scripts). ``gamma``: Gamma gaps with shape ``burstiness`` and mean 1/rate (the current
vLLM benchmark; 1 = Poisson, smaller = burstier, as BurstGPT fits). ``constant``: gaps of exactly
1/rate (Parrot's Fig 19 chat stream). Random gaps come from the run's workload stream ``rng``, so
the same seed gives the same times.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

ArrivalProcess = Literal["poisson", "gamma", "constant"]


def arrival_times(rng: np.random.Generator, n: int, rate: float, process: str,
                  burstiness: float = 1.0, start: float = 0.0) -> np.ndarray:
    """Arrival times (s) of ``n`` requests at ``rate`` per second.

    The first request arrives at ``start`` plus its first gap, except for ``constant`` which
    starts at ``start`` itself.
    """
    if rate <= 0:
        raise ValueError(f"arrival rate must be positive, got {rate}")
    if process == "constant":
        return start + np.arange(n) / rate
    if process == "poisson":
        gaps = rng.exponential(1.0 / rate, size=n)
    elif process == "gamma":
        if burstiness <= 0:
            raise ValueError(f"burstiness must be positive, got {burstiness}")
        gaps = rng.gamma(burstiness, 1.0 / (rate * burstiness), size=n)
    else:
        raise ValueError(f"unknown arrival process {process!r}")
    return start + np.cumsum(gaps)


def arrivals_until(rng: np.random.Generator, rate: float, horizon: float, process: str = "poisson",
                   burstiness: float = 1.0, start: float = 0.0) -> np.ndarray:
    """Arrival times (s) in ``[start, start + horizon)`` of a stream at ``rate`` per second.

    Used for background load that runs until the foreground work ends: the caller picks a
    horizon longer than the run. A zero rate gives no arrivals.
    """
    if rate == 0 or horizon <= 0:
        return np.empty(0)
    out: list[np.ndarray] = []
    last = start
    block = max(16, int(rate * horizon * 1.2) + 16)
    while True:
        times = arrival_times(rng, block, rate, process, burstiness, last)
        if process == "constant" and out:
            times = times + 1.0 / rate  # continue after the previous block's last arrival
        out.append(times)
        last = float(times[-1])
        if last >= start + horizon:
            break
    times = np.concatenate(out)
    return times[times < start + horizon]
