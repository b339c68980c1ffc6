"""The KV-block horizon of a decode stretch against growing the contexts step by step."""

import numpy as np

from parrotsim.policies.engine.kv_horizon import steps_within_blocks
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.sequence import Sequence


def _horizon_by_stepping(tokens: list[int], free: int, block_size: int, max_steps: int) -> int:
    """Steps (the first already allocated) until some step would start with no free block."""
    if free < 1:
        return 1
    steps = 1
    while steps < max_steps:
        grown = sum(-(-(t + steps) // block_size) - -(-(t + steps - 1) // block_size)
                    for t in tokens)
        if free - grown < 1:
            break
        free -= grown
        steps += 1
    return steps


def test_matches_stepping_on_random_batches():
    rng = np.random.default_rng(7)
    kv = KVCache(10**7)
    for _ in range(400):
        block_size = int(rng.choice([1, 4, 16]))
        seqs = []
        for t in rng.integers(0, 200, rng.integers(1, 40)):
            s = Sequence(len(seqs), "a", "c", 1, 1)
            s.ctx = kv.create()
            s.ctx.tokens = int(t)
            seqs.append(s)
        free = int(rng.integers(0, 60))
        max_steps = int(rng.integers(1, 300))
        expected = _horizon_by_stepping([s.ctx.tokens for s in seqs], free, block_size,
                                        max_steps)
        assert steps_within_blocks(seqs, free, block_size, max_steps) == expected
