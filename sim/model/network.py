"""Client-service round trips, as the paper's latency emulation injected them.

The artifact sleeps half of a round trip before handling a request and half before answering,
each round trip drawn uniformly from 100 measured gpt-35-turbo latencies (mean 244 ms; shipped in
``sim/data/rtt_ms.csv``). ``constant`` uses one fixed round trip, ``none`` none at all.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Literal

import numpy as np
from pydantic import Field

from parrotsim.core.config import StrictConfig


@cache
def measured_rtts_s() -> np.ndarray:
    """The 100 measured round trips, in seconds."""
    text = resources.files("parrotsim.sim.model.data").joinpath("rtt_ms.csv").read_text()
    rows = [ln for ln in text.splitlines() if ln and not ln.startswith("#")][1:]
    return np.array([float(r) for r in rows]) / 1000.0


class NetworkConfig(StrictConfig):
    """How round trips between a client and the service are drawn."""

    model: Literal["measured", "constant", "none"] = "measured"
    rtt_ms: float = Field(default=244.0, ge=0)


class Network:
    """Draws round trips (seconds) from its own random stream, in batches for speed."""

    def __init__(self, cfg: NetworkConfig, rng: np.random.Generator) -> None:
        self.cfg = cfg
        self.rng = rng
        self._pool: list[float] = []

    def rtt(self) -> float:
        """One round trip in seconds."""
        if self.cfg.model == "none":
            return 0.0
        if self.cfg.model == "constant":
            return self.cfg.rtt_ms / 1000.0
        if not self._pool:
            self._pool = self.rng.choice(measured_rtts_s(), size=4096).tolist()[::-1]
        return self._pool.pop()
