"""Decode accounting in O(block size) per decode stretch, whatever the batch size.

When every member of an engine's decode batch appends one token per step (vLLM's decode
iterations), their counters move in lockstep: the ledger keeps two step counters (``step``:
decode steps whose KV slots are allocated; ``emitted``: steps whose tokens are emitted) and,
per member, the counter values its ``ctx.tokens`` and ``generated`` were last brought up to
date at (``tok_base``, ``gen_base``). A member's true counts are its stored ones plus the
steps since; they are written back (*materialized*) only when the member leaves (finishes or
is preempted) or on :meth:`sync_all`.

What a stretch needs comes from running totals instead of passes over the batch:

* KV blocks: a context of ``t`` tokens takes a new block on the step that makes it ``t + 1``
  when ``t`` is a multiple of the block size. ``_slack[r]`` counts the members that take a
  block on the steps ``S`` with ``S % block_size == r``, so the blocks ``e`` more steps take
  are ``(e // bs) * n`` plus at most ``bs - 1`` counts: ``used_blocks`` and ``peak_blocks`` of
  the :class:`KVCache` stay exact at every step boundary the engine sees;
* KV tokens read (the cost model's input): ``sum(cached_len + tokens)`` is an offset plus
  ``n * step``;
* finishes: a heap of the ``emitted`` value at which each member reaches its output length,
  ordered next by the caller's key (the decode order), so a stretch's finishers come out in
  the order the batch lists them;
* the longest context (for a cost model that needs it): a heap built on first use.

Heap entries of members that left are skipped when they reach the top (each membership has
its own id). With ``eager`` set, every member is materialized after each step, for callers
that read sequences between iterations (an executor stepping one iteration at a time, tests
driving a policy by hand).
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush
from typing import TYPE_CHECKING

from parrotsim.sim.model.kv_cache import KVCache

if TYPE_CHECKING:
    from parrotsim.sim.model.sequence import Sequence


class DecodeLedger:
    """The lockstep decoding members of one engine and their running totals (see module
    docstring); ``kv`` is the engine's cache, whose ``used_blocks`` the ledger keeps exact."""

    __slots__ = ("kv", "eager", "step", "emitted", "_bs", "_members", "_next_id", "_slack",
                 "_takers", "_kv_offset", "_finishes", "_joining", "_unstamped", "_longest")

    def __init__(self, kv: KVCache, eager: bool = True) -> None:
        self.kv = kv
        self.eager = eager
        self.step = 0  # decode steps allocated
        self.emitted = 0  # decode steps emitted
        self._bs = kv.block_size
        self._members: dict[int, Sequence] = {}  # membership id -> sequence
        self._next_id = 0
        self._slack = [0] * kv.block_size
        # _takers[r]: id -> (key, seq) of the members counted in _slack[r]
        self._takers: list[dict[int, tuple]] = [{} for _ in range(kv.block_size)]
        self._kv_offset = 0  # sum of cached_len + tokens - step over the members
        self._finishes: list[tuple] = []  # (emitted at finish, key, id, seq)
        self._joining: list[tuple[Sequence, tuple]] = []  # admitted: join at the next step
        self._unstamped: list[Sequence] = []  # members without a first token yet
        self._longest: list[tuple[int, int, Sequence]] | None = None  # (-(cached+a), id, seq)

    def __len__(self) -> int:
        return len(self._members)

    # ---- membership ----------------------------------------------------------------------
    def admit(self, seq: Sequence, key: tuple) -> None:
        """``seq`` will decode from the next step on, unless it finishes or leaves the engine
        before (its prompt iteration may still change its counters); ``key`` orders members
        finishing on the same step (the decode batch's order)."""
        self._joining.append((seq, key))

    def join(self, seq: Sequence, key: tuple) -> None:
        """Make ``seq`` (holding its context, counters up to date) a member now."""
        lid = self._next_id
        self._next_id = lid + 1
        seq.ledger_id = lid
        seq.tok_base = step = self.step
        seq.gen_base = self.emitted
        a = seq.ctx.tokens - step
        r = (1 - a) % self._bs
        self._slack[r] += 1
        self._takers[r][lid] = (key, seq)
        self._kv_offset += seq.cached_len + a
        heappush(self._finishes, (self.emitted + seq.output_len - seq.generated, key, lid, seq))
        self._members[lid] = seq
        if seq.first_token < 0:
            self._unstamped.append(seq)
        if self._longest is not None:
            heappush(self._longest, (-(seq.cached_len + a), lid, seq))

    def leave(self, seq: Sequence) -> None:
        """Materialize member ``seq`` and remove it."""
        self._remove(seq)
        n = len(self._members)
        if len(self._finishes) > 2 * n + 64:  # drop the entries of members that left
            self._finishes = [e for e in self._finishes if e[3].ledger_id == e[2]]
            heapify(self._finishes)

    def _remove(self, seq: Sequence) -> None:
        self._materialize(seq)
        a = seq.ctx.tokens - seq.tok_base
        r = (1 - a) % self._bs
        self._slack[r] -= 1
        del self._takers[r][seq.ledger_id]
        self._kv_offset -= seq.cached_len + a
        del self._members[seq.ledger_id]
        seq.ledger_id = -1
        seq.tok_base = seq.gen_base = 0  # no int objects kept alive by finished calls
        if self._longest is not None and len(self._longest) > 2 * len(self._members) + 64:
            self._longest = None  # rebuilt from the members on the next query

    def clear(self) -> None:
        """Materialize every member and forget them all (before a pass that changes members'
        counters one by one, e.g. preemption)."""
        self._join_admitted()
        for seq in self._members.values():
            self._materialize(seq)
            seq.ledger_id = -1
            seq.tok_base = seq.gen_base = 0
        self._members.clear()
        self._slack = [0] * self._bs
        self._takers = [{} for _ in range(self._bs)]
        self._kv_offset = 0
        self._finishes = []
        self._unstamped = []
        self._longest = None

    def sync_all(self) -> None:
        """Write every member's true ``ctx.tokens``, ``ctx.blocks`` and ``generated``."""
        for seq in self._members.values():
            self._materialize(seq)

    def _materialize(self, seq: Sequence) -> None:
        d = self.step - seq.tok_base
        if d:
            ctx = seq.ctx
            n = ctx.tokens + d
            ctx.tokens = n
            ctx.blocks = -(-n // self._bs)
            seq.tok_base = self.step
        g = self.emitted - seq.gen_base
        if g:
            seq.generated += g
            seq.gen_base = self.emitted

    def _join_admitted(self) -> None:
        for seq, key in self._joining:
            if seq.finished < 0 and seq.ctx is not None and seq.ledger_id < 0:
                self.join(seq, key)
        self._joining.clear()

    # ---- steps ---------------------------------------------------------------------------
    def need(self, extra: int) -> int:
        """Blocks the members take to grow by ``extra`` more tokens each."""
        bs = self._bs
        q, r = divmod(extra, bs)
        blocks = q * len(self._members)
        if r:  # the steps step + 1 .. step + r: a window of _slack, wrapping around
            slack = self._slack
            lo = (self.step + 1) % bs
            hi = lo + r
            blocks += sum(slack[lo:hi]) if hi <= bs else sum(slack[lo:]) + sum(slack[:hi - bs])
        return blocks

    def try_step(self, keep_free: int) -> bool:
        """Admitted sequences join; then every member allocates its next token's slot if that
        leaves at least ``keep_free`` blocks free (else nothing changes: False)."""
        if self._joining:
            self._join_admitted()
        kv = self.kv
        used = kv.used_blocks + self._slack[(self.step + 1) % self._bs]
        if used > kv.num_blocks - keep_free:
            return False
        self.step += 1
        kv.used_blocks = used
        if used > kv.peak_blocks:
            kv.peak_blocks = used
        if self.eager:
            self.sync_all()
        return True

    def block_takers(self) -> list[Sequence]:
        """The members whose next step takes a new block (their last block is full), in key
        order: about ``1 / block_size`` of them."""
        if self._joining:
            self._join_admitted()
        return [seq for _, seq in sorted(self._takers[(self.step + 1) % self._bs].values())]

    def force_step(self) -> int:
        """Every member allocates its next token's slot; the caller checked that the blocks
        suffice. Returns the blocks taken."""
        taken = self._slack[(self.step + 1) % self._bs]
        self.advance(1)
        return taken

    def advance(self, extra: int) -> None:
        """Allocate ``extra`` more steps for every member (raises ``MemoryError``, changing
        nothing, when the blocks do not suffice: the caller checked)."""
        if extra <= 0:
            return
        kv = self.kv
        used = kv.used_blocks + self.need(extra)
        if used > kv.num_blocks:
            raise MemoryError(f"KV cache full: {len(self)} contexts cannot grow by {extra} "
                              f"tokens in {kv.free_blocks} free blocks")
        self.step += extra
        kv.used_blocks = used
        if used > kv.peak_blocks:
            kv.peak_blocks = used
        if self.eager:
            self.sync_all()

    def emit(self, steps: int, first_end: float) -> list[Sequence]:
        """Every member emits ``steps`` tokens (the first at ``first_end``); returns the
        members that reached their output length, materialized and removed, in finishing
        order (then key order)."""
        self.emitted += steps
        if self._unstamped:
            for seq in self._unstamped:
                if seq.first_token < 0:
                    seq.first_token = first_end
            self._unstamped = []
        heap, done = self._finishes, []
        while heap and heap[0][0] <= self.emitted:
            _, _, lid, seq = heappop(heap)
            if seq.ledger_id == lid:
                self._remove(seq)
                done.append(seq)
        if self.eager:
            self.sync_all()
        return done

    # ---- what a stretch needs to know ----------------------------------------------------
    def horizon(self) -> int:
        """The fewest tokens any member still has to emit (0 without members)."""
        heap = self._finishes
        while heap and heap[0][3].ledger_id != heap[0][2]:
            heappop(heap)
        return heap[0][0] - self.emitted if heap else 0

    def steps_within(self, max_steps: int, keep_free: int = 1) -> int:
        """Steps (the first already allocated) before any member could find fewer than
        ``keep_free`` free blocks: the largest ``s <= max_steps`` such that ``s - 1`` more
        steps leave ``keep_free`` blocks free (at least 1)."""
        free = self.kv.num_blocks - self.kv.used_blocks
        if max_steps <= 1 or free < keep_free:
            return 1
        budget, extra, bs = free - keep_free, max_steps - 1, self._bs
        n = len(self._members)
        if n * -(-extra // bs) <= budget:
            return max_steps
        # need(q * bs + r) = q * n + (blocks of the first r steps of a cycle)
        q, rem = divmod(budget, n)
        slack, s = self._slack, self.step
        r = taken = 0
        for j in range(1, bs):
            taken += slack[(s + j) % bs]
            if taken > rem:
                break
            r = j
        return min(q * bs + r, extra) + 1

    def kv_tokens(self) -> int:
        """Tokens the members' attention reads this step (cached prefixes included)."""
        return self._kv_offset + len(self._members) * self.step

    def longest_context(self) -> int:
        """The longest member context in tokens, cached prefix included (0 without members);
        O(log n) amortized."""
        heap = self._longest
        if heap is None:
            heap = self._longest = [(-(s.cached_len + s.ctx.tokens - s.tok_base), lid, s)
                                    for lid, s in self._members.items()]
            heapify(heap)
        while heap and heap[0][2].ledger_id != heap[0][1]:
            heappop(heap)
        return -heap[0][0] + self.step if heap else 0
