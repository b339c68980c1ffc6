"""How Parrot's engine gives KV blocks to its decoding Generate jobs, and the iteration that
follows one where some found none, decided without touching the jobs still waiting.

Each iteration every running Generate job takes the slot of its next token in running order;
one whose last block is full needs a new block, and when none is free it is held back: put at
the head of the waiting queue, keeping its KV (:func:`grow_decodes`). The next iteration admits
the held-back jobs again, sorts them into the running jobs and hands out blocks again in that
order. Under a KV shortage (Fig 17's GPTs at 256 engines: 82 % of iterations, ~30 sequences
decoding while ~64 wait for a block) that walk over the waiting jobs was the engine's main cost.

:func:`short_step` takes that next iteration's decisions in time that follows the running jobs
and what changed, not the held-back jobs. A held-back job ``h`` did not run, so its context,
and with it the blocks it needs (at least one), are as they were: while no block is free it is
held back again, and the held-back jobs stay at the head of the queue in running order
(reversed), as the full walk leaves them. Only when blocks were freed does it compare keys,
one held-back job per block handed out. The results are exactly those of the full walk
(checked against the old scheduler kept as a test oracle).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable

from parrotsim.sim.model.engine_policy import EngineState
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.sequence import Sequence


def grow_decodes(kv: KVCache, survivors: list[Sequence], fill_n: dict[int, int]
                 ) -> tuple[list[Sequence], list[Sequence]]:
    """Give each surviving Generate job (those not in ``fill_n``, which run a Fill) the slot of
    its next token, in order (a fork whose whole prompt is cached gets its context first):
    (those that got one, those short of a block). ``kv.can_grow`` and ``kv.grow`` by one
    token, inlined: one pass counting free blocks down, the peak taken from the fewest free
    blocks seen (free blocks only come back from a context holding spare ones)."""
    bs, num = kv.block_size, kv.num_blocks
    free = least = num - kv.used_blocks
    decodes: list[Sequence] = []
    short: list[Sequence] = []
    got, missed = decodes.append, short.append
    if fill_n:
        survivors = [s for s in survivors if s.uid not in fill_n]
    for s in survivors:
        ctx = s.ctx
        if ctx is None:
            ctx = s.ctx = kv.create(s.prefix_ctx)
        t = ctx.tokens + 1
        need = -(-t // bs) - ctx.blocks
        if need <= free:
            ctx.tokens = t
            if need:
                if need < 0 and free < least:
                    least = free
                ctx.blocks += need
                free -= need
            got(s)
        else:
            missed(s)
    kv.used_blocks = num - free
    peak = num - (free if free < least else least)
    if peak > kv.peak_blocks:
        kv.peak_blocks = peak
    return decodes, short


def held_tokens(short: list[Sequence]) -> int:
    """KV tokens of held-back jobs (cached prefixes included): constant while they wait."""
    return sum([s.cached_len + s.ctx.tokens for s in short])


def short_step(state: EngineState, short: list[Sequence], key: Callable[[Sequence], tuple],
               limit: int | None, short_tokens: int
               ) -> tuple[list[Sequence], list[Sequence], int] | None:
    """The iteration after one that held back ``short`` (in running order; the waiting queue
    starts with them reversed), when the admission takes them all back and nothing else.

    Decides what the full walk would: sort ``running + short`` by ``key``, hold back from
    ``limit`` (``max_total_tokens``) on, grow every job by one token in order. Returns
    (decodes in running order, the jobs held back now in running order, their KV tokens)
    having updated ``state`` (``running`` becomes the decodes, the held-back jobs lead the
    waiting queue reversed, KV use and peak), or None having changed nothing when the full
    walk must decide: ``limit`` would hold jobs back, a held-back job would be passed over
    for one behind it, or nothing would run (the caller then frees memory).

    Work: a pass over ``running`` (two when blocks were freed), a bisection per job that
    changes sides."""
    running, kv = state.running, state.kv
    if kv.used_blocks >= kv.num_blocks:
        return _step_without_free_blocks(state, short, key, limit, short_tokens)
    bs = kv.block_size
    takers: list[tuple[int, int]] = []  # (position in running, blocks its next token takes)
    total = short_tokens
    for i, s in enumerate(running):
        ctx = s.ctx
        if ctx is None:
            return None
        t = ctx.tokens
        need = -(-(t + 1) // bs) - ctx.blocks
        if need > 0:
            takers.append((i, need))
        elif need < 0:
            return None  # a context holding spare blocks: the full walk decides
        total += s.cached_len + t
    if limit is not None and total > limit:
        return None  # the walk would hold some back: partial sums only stay under the total
    # Blocks go to the jobs that need one in running order (the merge of the two sorted
    # lists) while they last; once none is free, every remaining one is held back.
    free = kv.num_blocks - kv.used_blocks
    k, nt = len(short), len(takers)
    g = ti = 0  # short[:g] get a block; takers[:ti] were looked at
    kept_out: list[int] = []  # positions in running of the takers held back
    while free > 0 and (ti < nt or g < k):
        if g < k and (ti == nt or key(short[g]) < key(running[takers[ti][0]])):
            ctx = short[g].ctx
            need = -(-(ctx.tokens + 1) // bs) - ctx.blocks
            if need > free:
                return None  # a later one might fit: the full walk decides
            free -= need
            g += 1
        else:
            i, need = takers[ti]
            ti += 1
            if need <= free:
                free -= need
            else:
                kept_out.append(i)
    kept_out.extend([i for i, _ in takers[ti:]])
    if not g and len(kept_out) == len(running):
        return None  # nothing runs: the full walk frees memory
    # Commit: running jobs grow by one token, granted held-back jobs join them in order.
    used = kv.used_blocks
    out = set(kept_out)
    decodes: list[Sequence] = []
    for i, s in enumerate(running):
        if i in out:
            continue
        ctx = s.ctx
        t = ctx.tokens + 1
        need = -(-t // bs) - ctx.blocks
        ctx.tokens = t
        if need:
            ctx.blocks += need
            used += need
        decodes.append(s)
    waiting = state.waiting
    lo = 0
    for s in short[:g]:
        ctx = s.ctx
        need = -(-(ctx.tokens + 1) // bs) - ctx.blocks
        ctx.tokens += 1
        ctx.blocks += need
        used += need
        short_tokens -= s.cached_len + ctx.tokens - 1
        lo = bisect_left(decodes, key(s), lo, key=key)
        decodes.insert(lo, s)
        del waiting[k - g]  # short[:g] sit at waiting[k - g:k], reversed
    held = short[g:]
    for i in kept_out:  # in running order
        s = running[i]
        p = bisect_left(held, key(s), key=key)
        waiting.insert(len(held) - p, s)
        held.insert(p, s)
        short_tokens += s.cached_len + s.ctx.tokens
    kv.used_blocks = used
    if used > kv.peak_blocks:  # used only grows within the step
        kv.peak_blocks = used
    state.running = decodes.copy()
    return decodes, held, short_tokens


def _step_without_free_blocks(state: EngineState, short: list[Sequence],
                              key: Callable[[Sequence], tuple], limit: int | None,
                              short_tokens: int
                              ) -> tuple[list[Sequence], list[Sequence], int] | None:
    """:func:`short_step` when no block is free: every job that needs a block is held back,
    the others grow by one token (one pass over ``running``, undone if the full walk must
    decide); ``short`` is extended in place."""
    running = state.running
    bs = state.kv.block_size
    decodes: list[Sequence] = []
    held_now: list[Sequence] = []
    total = short_tokens
    spare = False
    for s in running:
        ctx = s.ctx
        t = ctx.tokens
        total += s.cached_len + t
        need = -(-(t + 1) // bs) - ctx.blocks
        if need > 0:
            held_now.append(s)
        elif need == 0:
            ctx.tokens = t + 1
            decodes.append(s)
        else:
            spare = True
            break
    if spare or not decodes or (limit is not None and total > limit):
        for s in decodes:  # undone: the full walk decides
            s.ctx.tokens -= 1
        return None
    waiting = state.waiting
    for s in held_now:  # in running order
        p = bisect_left(short, key(s), key=key)
        waiting.insert(len(short) - p, s)
        short.insert(p, s)
        short_tokens += s.cached_len + s.ctx.tokens
    state.running = decodes.copy()
    return decodes, short, short_tokens


def repeat_horizon(decodes: list[Sequence], block_size: int, limit: int | None,
                   short_tokens: int) -> int:
    """Iterations in all, the one just decided by the no-free-block step first, that the same
    step decides alike while nothing else changes: each of ``decodes`` (grown for this one)
    takes its next token's slot within its last block (none is held back), none finishes
    before the last (it would free blocks) and ``limit`` (``max_total_tokens``) holds no job
    back; ``short_tokens``: the held-back jobs' KV tokens. One pass over ``decodes``."""
    horizon = None
    total = short_tokens
    for s in decodes:
        ctx = s.ctx
        t = ctx.tokens
        room = ctx.blocks * block_size - t  # later steps that fit in its blocks
        left = s.output_len - s.generated - 1  # the step that emits its last token
        h = room if room < left else left
        if horizon is None or h < horizon:
            horizon = h
        total += s.cached_len + t
    if horizon is None:
        return 1
    steps = horizon + 1
    if limit is not None:  # step j >= 1 walks total + n * (j - 1) tokens
        if total > limit:
            return 1
        steps = min(steps, (limit - total) // len(decodes) + 2)
    return max(1, steps)
