"""The split-KV paged decode kernel's critical path in a batch of unequal contexts.

The paged kernel (``kernels/paged_decode.py``) runs one program per (sequence, KV head, split).
The split count ``s`` is the same for the whole batch (:func:`kernel_splits`, the kernel's
``choose_num_splits``: enough splits that the programs fill :data:`SPLIT_WAVES` waves of SMs, at
most one per :data:`MIN_SPLIT_TOKENS` of the longest sequence, at most :data:`MAX_SPLITS`), and
every split of a sequence holds ``1/s`` of *that* sequence's tokens. The GPU runs at most
``sms * programs_per_sm`` programs at once (one wave), the programs of

    w = sms * programs_per_sm / (kv_heads * s)

sequences. The profile's ``decode_paged_grid`` measured batches of equal contexts: ``g(n, c)``
seconds for ``n`` sequences of ``c`` tokens. A batch of ``n`` sequences whose mean context is
``m`` and longest ``L`` costs

    g(n, m) + excess,   excess = g(w', L) - g(w', m),   w' = min(max(w, 1), n)

the uniform cost at the mean plus what the longest sequence's programs add to the one wave
that holds them: that wave lasts as long as a wave of ``L``-token programs instead of
``m``-token ones. While the batch fits in one wave (``n <= w``) the batch costs ``g(n, L)``,
as if every sequence were the longest; over many waves the excess (one wave's) becomes a
vanishing share of ``g(n, m)``, which grows with ``n``. No parameter is fitted: ``sms`` and
``programs_per_sm`` are measured (:class:`~parrotsim.sim.model.profile_parts.PagedWaves`), the split
rule is the kernel's code and ``g`` the uniform measurements.

:class:`ExcessSeries` gives the excess of consecutive decode steps in which every context
grows by the same number of tokens (the longest and the mean grow alike): piecewise linear in
the step, with breaks at the grid's contexts and where the split count changes, so the decode
stretch's closed form stays exact.
"""

from __future__ import annotations

import math
from bisect import bisect_right

from parrotsim.sim.model.curves import Interp, PagedRows
from parrotsim.sim.model.profile_parts import PagedGrid, PagedWaves

#: ``kernels/paged_decode.choose_num_splits``'s defaults (a test checks they agree)
SPLIT_WAVES = 2.0
MIN_SPLIT_TOKENS = 256
MAX_SPLITS = 64


def kernel_splits(programs: int, max_len: int, sms: int) -> int:
    """KV splits the paged kernel chooses for ``programs`` (sequences x KV heads) over a
    longest sequence of ``max_len`` tokens on ``sms`` multiprocessors."""
    want = -(-int(SPLIT_WAVES * sms) // max(programs, 1))
    cap = max(1, -(-max_len // MIN_SPLIT_TOKENS))
    return int(max(1, min(want, cap, MAX_SPLITS)))


class WaveModel:
    """The excess of a skewed decode batch over the profile's grid (see module docstring)."""

    def __init__(self, grid: PagedGrid, waves: PagedWaves, kv_heads: int) -> None:
        self.grid, self.kv_heads = grid, kv_heads
        self.sms = waves.sms
        self.slots = waves.sms * waves.programs_per_sm
        self.max_context = grid.y[-1]
        self._rows = PagedRows(grid, Interp([0.0, 1.0], [0.0, 0.0]))
        #: sequences per wave -> the grid's row there, in seconds vs KV tokens *per sequence*
        self._by_width: dict[float, Interp] = {}

    def splits(self, n_seqs: int, longest: float) -> int:
        """The kernel's split count for ``n_seqs`` sequences, the longest ``longest`` tokens."""
        return kernel_splits(n_seqs * self.kv_heads, math.ceil(longest), self.sms)

    def row(self, n_seqs: int, splits: int) -> Interp:
        """The grid's row (seconds vs context per sequence) at the sequences of one wave of
        ``splits``-split programs, at most ``n_seqs`` and at least 1."""
        width = min(max(self.slots / (self.kv_heads * splits), 1.0), float(n_seqs))
        try:
            return self._by_width[width]
        except KeyError:
            row = Interp(list(self.grid.y), self._rows.row(width).ys)
            self._by_width[width] = row
            return row

    def excess(self, n_seqs: int, kv_tokens: float, longest: float) -> float:
        """Seconds the longest sequence adds to ``n_seqs`` sequences of ``kv_tokens`` in all."""
        if n_seqs < 2:
            return 0.0
        row = self.row(n_seqs, self.splits(n_seqs, longest))
        return row.scalar(longest) - row.scalar(kv_tokens / n_seqs)


def _piece(row: Interp, c0: float, dc: float, j: int) -> tuple[float, float, float]:
    """``row`` at ``c0 + dc * j``: (value, change per step, first step past the segment)."""
    xs, ys, last = row.xs, row.ys, row.last
    c = c0 + dc * j
    seg = min(max(bisect_right(xs, c) - 1, 0), last)
    slope = (ys[seg + 1] - ys[seg]) / (xs[seg + 1] - xs[seg])
    end = math.inf
    if seg < last and dc > 0:
        end = max(j + 1, math.ceil((xs[seg + 1] - c0) / dc))
    return ys[seg] + slope * (c - xs[seg]), slope * dc, end


class ExcessSeries:
    """The excess of consecutive decode steps of ``n_seqs`` sequences: step ``j`` reads
    ``kv0 + growth * j`` tokens in all, its longest sequence ``longest0 + growth / n * j``."""

    __slots__ = ("model", "n", "kv0", "growth", "longest0")

    def __init__(self, model: WaveModel, n_seqs: int, kv0: float, growth: float,
                 longest0: float) -> None:
        self.model, self.n, self.kv0, self.growth = model, n_seqs, kv0, growth
        self.longest0 = longest0

    def at(self, j: int) -> float:
        """The excess of step ``j`` (seconds)."""
        n = self.n
        return self.model.excess(n, self.kv0 + self.growth * j,
                                 self.longest0 + self.growth / n * j)

    def piece(self, j: int) -> tuple[float, float, float]:
        """(excess at step ``j``, its change per step, the first step where that line ends):
        the excess is ``a + b * (k - j)`` for ``j <= k < end``."""
        model, n = self.model, self.n
        per_seq = self.growth / n
        longest = self.longest0 + per_seq * j
        splits = model.splits(n, longest)
        row = model.row(n, splits)
        a_long, b_long, end_long = _piece(row, self.longest0, per_seq, j)
        a_mean, b_mean, end_mean = _piece(row, self.kv0 / n, per_seq, j)
        end = min(end_long, end_mean, self._splits_change(j, splits))
        return a_long - a_mean, b_long - b_mean, end

    def _splits_change(self, j: int, splits: int) -> float:
        """The first step after ``j`` whose longest sequence changes the split count."""
        per_seq = self.growth / self.n
        if per_seq <= 0 or splits >= MAX_SPLITS:
            return math.inf
        longest = math.ceil(self.longest0 + per_seq * j)
        cap = max(1, -(-longest // MIN_SPLIT_TOKENS))
        if cap > splits:  # the cap does not bind: the count never changes as contexts grow
            return math.inf
        # the cap grows once the longest passes cap * MIN_SPLIT_TOKENS tokens
        return max(j + 1, math.floor((cap * MIN_SPLIT_TOKENS - self.longest0) / per_seq) + 1)
