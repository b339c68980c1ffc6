"""How far a decode-only batch can run before the paged KV cache could run short of a block.

Engine policies use it to tell the engine how many identical decode iterations it may
fast-forward (vLLM 0.1.4 checks ``can_append_slot`` before every step; this finds the first
step at which that check could fail, in O(block size) per probe).
"""

from __future__ import annotations

from parrotsim.sim.model.sequence import Sequence


def steps_within_blocks(decodes: list[Sequence], free_blocks: int, block_size: int,
                        max_steps: int) -> int:
    """Decode steps (the first already allocated) the KV cache allows before any of ``decodes``
    could be short of a block: the largest ``s <= max_steps`` such that growing every context
    by ``s - 1`` more tokens still leaves one block free (vLLM's ``can_append_slot`` test)."""
    if max_steps <= 1 or free_blocks < 1:
        return 1
    # Each context takes at most ceil((max_steps - 1) / block_size) more blocks: usually that
    # bound fits and no per-context work is needed.
    if len(decodes) * -(-(max_steps - 1) // block_size) + 1 <= free_blocks:
        return max_steps
    # A context with r free slots in its last block takes ceil((e - r) / block_size) new blocks
    # to grow by e > r tokens: count the contexts by r once, then each evaluation is O(block_size).
    by_slack = [0] * block_size
    for s in decodes:
        by_slack[-s.ctx.tokens % block_size] += 1
    slack_counts = [(r, n) for r, n in enumerate(by_slack) if n]

    def need(extra: int) -> int:
        return sum([n * -((r - extra) // block_size) for r, n in slack_counts if extra > r])

    if need(max_steps - 1) + 1 <= free_blocks:
        return max_steps
    lo, hi = 0, max_steps - 1  # need(lo) fits, need(hi) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if need(mid) + 1 <= free_blocks:
            lo = mid
        else:
            hi = mid
    return lo + 1
