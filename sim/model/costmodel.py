"""Iteration time of an engine from a cost profile.

``iteration_time`` composes the profile's curves for one iteration (continuous batching runs
prompt chunks and decode tokens together):

    t = runtime.overhead + runtime.scale * (overhead + linear(tokens)
          + max(prefill_attention(sum new*(ctx + (new+1)/2)), slowest chunk on the optional
                prefill_attention_grid)
          + paged(decodes, KV tokens read by the paged kernel) + per_seq * decodes
          + sum over shared-prefix groups of shared_prefix(prefix, group size))

(an iteration that fills prompt tokens uses the runtime's prefill overhead and scale instead,
and lasts at least the runtime's ``prefill_launch_floor_s`` past that overhead, plus its
``decode_launch_s`` when it also decodes and ``group_launch_s`` per forked group the
shared-prefix kernel serves).

``paged(n, kv)`` is the profile's ``decode_paged`` curve at ``kv`` or, when the profile has a
``decode_paged_grid`` (sequences x KV tokens per sequence), that grid at ``n`` sequences and
their *mean* context ``kv / n``: linear in the context between grid columns, log-log in the
sequence count between grid rows. A heterogeneous batch is thus costed as ``n`` sequences of
its mean length (the split-KV kernel's work is the total KV read, spread over ``n`` rows of
programs); at a fixed ``n`` the time stays piecewise linear in ``kv``, which keeps the
decode-stretch closed form below exact. When the profile also has ``decode_paged_waves`` and
the caller gives the batch's longest context (decodes without shared-prefix groups), the
paged kernel's critical-path excess of :mod:`parrotsim.sim.model.paged_waves` is added:
``paged(n, kv) + excess(n, kv, longest)``; it is piecewise linear in the step too. With the
shared-prefix kernel the suffix phase is that paged split-KV kernel over the suffixes, so a
batch with forked groups gets the excess too, ``longest`` being the most tokens the paged
phase reads for one decode (its context less its group's prefix; :attr:`suffix_waves`). The
paged kernel over shared pages prices each forked group on its one-prefix grid; groups of
different prompt lengths still make a skewed batch, so it gets the excess over whole contexts
(:attr:`group_waves`; measured by ``kernels/bench_paged_prefixes.py``).

With the shared-prefix kernel a group's suffixes are read by the paged kernel, its prefix once
by the shared kernel; with the paged kernel every sequence reads its whole context, unless the
profile measured the paged kernel over shared pages (``paged_shared_prefix``, where the group's
prefix reads mostly hit L2): then a group costs its suffixes plus that grid at (prefix, group).
Curves are interpolated linearly between measured points and extended linearly past the ends
(the paged grid: linearly past its contexts, log-log past its largest sequence count);
every evaluation past the measured range is counted in :attr:`CostModel.extrapolated`, which
runs report, so extrapolation is never silent. When the profile records the extent of its
calibration grids, :attr:`CostModel.beyond` also keeps, per axis of that extent, the largest
query past it (noted only where a curve extrapolates: no cost on in-range iterations); the
harness and ``parrotsim validate`` warn with it.

``decode_stretch`` describes ``k`` consecutive decode-only iterations (each step every sequence
reads one more token) whose total length has a closed form, so the engine can fast-forward
through them in one event; a stretch of one step is exactly one stepped iteration.
"""

from __future__ import annotations

import numpy as np

from parrotsim.sim.model import era_kernels as era
from parrotsim.sim.model.curves import NO_TIME, Interp, PagedRows, bilinear
from parrotsim.sim.model.decode_stretch import DecodeStretch
from parrotsim.sim.model.paged_waves import ExcessSeries, WaveModel
from parrotsim.sim.model.profile import Profile
from parrotsim.sim.model.profile_parts import PagedGrid
from parrotsim.sim.model.sequence import Batch

SharedGroup = tuple[int, int]  # (prefix tokens read once, sequences in the group)
#: distinct decode-batch groupings whose shared-prefix time one cost model remembers
SHARED_MEMO_KEPT = 4096
#: prompt chunks whose time alone on the prefill grid the cost models of a run remember
CHUNK_MEMO_KEPT = 65536


class CostModel:
    """Per-iteration time (seconds) of one engine running ``runtime`` with ``profile``."""

    def __init__(self, profile: Profile, runtime: str = "vllm",
                 prefill_memo: dict[tuple[int, int], tuple[float, int]] | None = None,
                 decode_rows: dict[int, tuple[Interp, float, bool]] | None = None,
                 kernel: str = "shared_prefix", paged_kernel: str = "split_kv",
                 chunk_memo: dict[tuple[int, int], tuple[float, bool]] | None = None) -> None:
        """``prefill_memo``, ``decode_rows`` and ``chunk_memo`` may be shared by the cost models
        of one profile and kernel choice (the engines of a run): the first maps a lone prompt
        chunk to its attention time and extrapolation count, the second a decode batch's
        sequence count to its cost row, the third a prompt chunk of a batch to its time alone
        on the prefill grid and whether it lies outside the grid (emptied at
        :data:`CHUNK_MEMO_KEPT` entries). ``kernel``, the engine's decode kernel, says how forked groups are costed:
        ``shared_prefix`` (the profile's curve), ``parrot_2023``
        (:mod:`parrotsim.sim.model.era_kernels`) or ``paged`` (on the profile's
        ``paged_shared_prefix`` grid when it has one, :attr:`paged_groups`; else not at all).
        ``paged_kernel``: ``split_kv`` (the profile's curves) or ``vllm_0_1_4``."""
        c = profile.curves
        rt = profile.runtime(runtime)
        self.profile = profile
        self.scale = rt.scale
        self.fixed = rt.overhead_s
        self.prefill_scale = rt.prefill_scale
        self.prefill_fixed = rt.prefill_overhead_s
        self.prefill_floor = rt.prefill_launch_floor_s
        self.decode_launch = rt.decode_launch_s
        #: per forked group: only the shared-prefix kernels launch a pass per group
        self.group_launch = 0.0 if kernel == "paged" else rt.group_launch_s
        self.host_per_seq = rt.overhead_per_seq_s
        self.host_per_token = rt.overhead_per_context_token_s
        self.overhead = c.iteration_overhead_s
        self.per_seq = c.decode_per_seq_s
        self._linear = Interp.of(c.linear)
        self._paged = Interp.of(c.decode_paged)
        #: sequence count -> (the paged kernel's seconds vs KV tokens, the decode step's
        #: KV-independent seconds, whether that count is past the linear curve): a plain dict,
        #: the fastest lookup; a row is built once per sequence count by :meth:`_decode_row`
        self._decode_rows: dict[int, tuple[Interp, float, bool]] = (
            {} if decode_rows is None else decode_rows)
        self._paged_table = self._paged_rows(paged_kernel)
        self._parrot_2023 = self._check_shared_kernel(
            "parrot_2023" if kernel == "parrot_2023" else "shared_prefix")
        split_kv = paged_kernel == "split_kv"
        #: the skewed-batch excess of the split-KV kernel (None: batches cost as ``n``
        #: sequences of the mean context)
        self.waves = (WaveModel(c.decode_paged_grid, c.decode_paged_waves, profile.model.kv_heads)
                      if split_kv and c.decode_paged_waves is not None
                      and c.decode_paged_grid is not None else None)
        self._prefill = Interp.of(c.prefill_attention)
        #: the paged kernel's groups over shared pages are costed (``kernel="paged"`` and the
        #: profile measured them): an engine with that kernel then passes its forked groups
        self.paged_groups = (kernel == "paged" and paged_kernel == "split_kv"
                             and c.paged_shared_prefix is not None)
        self._shared = c.paged_shared_prefix if self.paged_groups else c.shared_prefix
        #: forked groups of the project's shared-prefix kernel: its suffix phase is the
        #: split-KV kernel over the suffixes, so the skewed-batch excess applies to them (not
        #: to the paged kernel over shared pages, whose grid prices whole groups, nor to
        #: Parrot 2023's unsplit suffix)
        self.suffix_waves = (self.waves is not None and not self.paged_groups
                             and not self._parrot_2023)
        #: forked groups of the paged kernel over shared pages: its grid prices each group as
        #: rows of one context, but groups forking prompts of different lengths make a skewed
        #: batch, whose longest *whole* context sets the split-KV kernel's critical path; the
        #: excess is taken over the KV tokens the kernel reads (prefixes counted per row)
        self.group_waves = self.waves is not None and self.paged_groups
        self._prefill_grid = c.prefill_attention_grid
        self._prefill_memo = {} if prefill_memo is None else prefill_memo
        #: a prompt chunk ``(new tokens, context tokens)`` -> its time alone on the prefill
        #: grid and whether it lies outside the grid (chunks repeat: batches of several
        #: prompts are not remembered whole, their chunks are)
        self._chunk_alone = {} if chunk_memo is None else chunk_memo
        self.extrapolated = 0
        calibration = profile.calibration
        self._extent = calibration.extent if calibration is not None else None
        self._shared_hi = (self._shared.x[-1], self._shared.y[-1])
        #: axis of the profile's measured extent -> the largest query past it this model saw
        self.beyond: dict[str, float] = {}
        self._shared_memo: dict[tuple[SharedGroup, ...], float] = {}

    def _paged_rows(self, kernel: str) -> PagedRows | era.NoSplitRows:
        """The paged kernel's rows: the profile's (split-KV) or vLLM 0.1.4's no-split ones."""
        split = PagedRows(self.profile.curves.decode_paged_grid, self._paged)
        if kernel == "split_kv":
            return split
        if kernel != "vllm_0_1_4":
            raise ValueError(f"unknown paged kernel {kernel!r}; one of {era.PAGED_KERNELS}")
        return era.NoSplitRows(split, era.saturating_sequences(self.profile.gpu.hbm_tb_s,
                                                              self.profile.model.kv_heads))

    @staticmethod
    def _check_shared_kernel(kernel: str) -> bool:
        """Whether ``kernel`` is Parrot's 2023 shared-prefix kernel (else the profile's)."""
        if kernel not in ("shared_prefix", "parrot_2023"):
            raise ValueError(f"unknown shared-prefix kernel {kernel!r}")
        return kernel == "parrot_2023"

    def _count(self, interp: Interp, x: float, axis: str | None = None) -> None:
        if x < interp.lo or x > interp.hi:
            self.extrapolated += 1
            if axis is not None:
                self._past(axis, x)

    def _past(self, axis: str, value: float) -> None:
        """Note ``value`` on ``axis`` of the profile's extent if it lies past it."""
        ext = self._extent
        if ext is not None and value > getattr(ext, axis) and value > self.beyond.get(axis, 0):
            self.beyond[axis] = value

    def _past_paged(self, n_seqs: int, kv_tokens: float) -> None:
        if n_seqs > 0:
            self._past("decode_batch", n_seqs)
            self._past("decode_context", kv_tokens / n_seqs)

    def _decode_row(self, n_seqs: int) -> tuple[Interp, float, bool]:
        lin = self._linear
        base = self.overhead + lin.scalar(n_seqs) + self.per_seq * n_seqs
        row = self._decode_rows[n_seqs] = (self._paged_table.row(n_seqs), base,
                                           not lin.lo <= n_seqs <= lin.hi)
        return row

    def paged_time(self, n_seqs: int, kv_tokens: float) -> float:
        """Seconds of paged decode attention for ``n_seqs`` decodes reading ``kv_tokens`` (no
        per-sequence cost, no runtime terms; counted if extrapolated)."""
        try:
            interp = self._decode_rows[n_seqs][0]
        except KeyError:
            interp = self._decode_row(n_seqs)[0]
        if kv_tokens < interp.lo or kv_tokens > interp.hi:
            self.extrapolated += 1
            self._past_paged(n_seqs, kv_tokens)
        return interp.scalar(kv_tokens)

    def paged_excess(self, n_seqs: int, kv_tokens: float, longest: float) -> float:
        """Seconds the longest of ``n_seqs`` decodes (``longest`` KV tokens; ``kv_tokens`` in
        all) adds to :meth:`paged_time` (0 without the profile's ``decode_paged_waves``)."""
        waves = self.waves
        if waves is None or n_seqs < 2:
            return 0.0
        self._count_longest(longest)
        return waves.excess(n_seqs, kv_tokens, longest)

    def _count_longest(self, longest: float) -> None:
        """Count a longest context past the paged grid's (the excess extrapolates there)."""
        if longest > self.waves.max_context:  # type: ignore[union-attr]
            self.extrapolated += 1
            self._past("decode_context", longest)

    def shared_prefix_time(self, groups: list[SharedGroup]) -> float:
        """Seconds the decode kernel spends on the shared prefixes of ``groups`` (read once per
        group by the shared-prefix kernel; by the paged kernel, through L2, see ``kernel``).

        Remembered per groups (an engine short of KV blocks repeats the same groups for many
        iterations); the memo is emptied when it holds :data:`SHARED_MEMO_KEPT` entries. A
        repeat adds nothing to :attr:`beyond`, which keeps the largest value seen."""
        key = tuple(groups)
        memo = self._shared_memo
        t = memo.get(key)
        if t is None:
            if len(memo) >= SHARED_MEMO_KEPT:
                memo.clear()
            t = memo[key] = self._shared_prefix_time(groups)
        return t

    def _shared_prefix_time(self, groups: list[SharedGroup]) -> float:
        total = 0.0
        hi_prefix, hi_batch = self._shared_hi
        for prefix, n in groups:
            if self._parrot_2023:
                total += self._parrot_prefix_pass(prefix, n)
            else:
                total += bilinear(self._shared, prefix, n)
            if prefix > hi_prefix or n > hi_batch:
                self._past("shared_prefix", prefix)
                self._past("shared_batch", n)
        return total

    def _parrot_prefix_pass(self, prefix: int, n: int) -> float:
        """Seconds of Parrot's 2023 prefix pass and reduce for ``n`` sequences sharing
        ``prefix`` tokens: the profile's prefix pass scaled by the artifact's tile factor."""
        return (era.parrot_prefix_factor(n) * bilinear(self._shared, prefix, n)
                + era.parrot_reduce_s(prefix, self.profile.model.layers))

    def prefill_attention_time(self, chunks: list[tuple[int, int]]) -> float:
        """Seconds of prefill attention for prompt chunks ``(new tokens, context tokens)``.

        A lone chunk's time is remembered (prompt lengths repeat across a trace's calls),
        together with the extrapolations it counted, which a repeat counts again."""
        if len(chunks) != 1:
            return self._prefill_attention(chunks)
        key = chunks[0]
        try:
            t, counted = self._prefill_memo[key]
        except KeyError:
            before = self.extrapolated
            t = self._prefill_attention(chunks)
            counted = self.extrapolated - before
            self._prefill_memo[key] = (t, counted)
            return t
        self.extrapolated += counted
        return t

    def _prefill_attention(self, chunks: list[tuple[int, int]]) -> float:
        work = sum(n * (ctx + (n + 1) / 2) for n, ctx in chunks)
        self._count(self._prefill, work)
        t = self._prefill.scalar(work)
        g = self._prefill_grid
        if g is not None:  # no faster than the slowest chunk alone
            alone = self._chunk_alone
            for chunk in chunks:
                try:
                    chunk_t, outside = alone[chunk]
                except KeyError:
                    n, ctx = chunk
                    outside = not (g.x[0] <= n <= g.x[-1] and g.y[0] <= ctx <= g.y[-1])
                    chunk_t = bilinear(g, n, ctx, extend_y=True)
                    if len(alone) >= CHUNK_MEMO_KEPT:
                        alone.clear()
                    alone[chunk] = (chunk_t, outside)
                if outside:
                    self.extrapolated += 1
                    self._past("prefill_chunk_tokens", chunk[0])
                    self._past("prefill_context", chunk[1])
                t = max(t, chunk_t)
        return t

    def iteration_time(self, batch: Batch, shared: list[SharedGroup] | None = None,
                       shared_tokens: int = 0, longest: int | None = None) -> float:
        """Seconds for one iteration of ``batch``.

        ``shared`` lists the shared-prefix groups among the decodes and ``shared_tokens`` the
        prefix tokens they cover (read once per group instead of once per sequence).
        ``longest``: the most KV tokens the paged kernel reads for one decode (with groups:
        its context less its group's prefix, or its whole context with :attr:`group_waves`);
        by default the longest context without groups, and no skewed-batch excess with them.
        """
        decodes = batch.decodes
        # Sequence.kv_tokens, inlined (a mixed batch may hold ~100 decodes)
        kv = sum([s.cached_len + (s.ctx.tokens if s.ctx is not None else 0)
                  for s in decodes]) - shared_tokens if decodes else 0
        if self.waves is None or not decodes or (
                shared and not (self.suffix_waves or self.group_waves)):
            longest = None
        elif longest is None and not shared:
            longest = max([s.kv_tokens for s in decodes])
        if not batch.prefills:
            return self.decode_stretch(len(decodes), kv, 0, shared or [], longest).duration(1)
        tokens = len(decodes)
        chunks = []
        for seq, n in batch.prefills:
            tokens += n
            chunks.append((n, seq.kv_tokens - n))
        self._count(self._linear, tokens, "batch_tokens")
        t = self.overhead + self._linear.scalar(tokens) + self.prefill_attention_time(chunks)
        if decodes:
            t += self.paged_time(len(decodes), kv) + self.per_seq * len(decodes)
            if longest is not None:
                read = kv + shared_tokens if shared and self.group_waves else kv
                t += self.paged_excess(len(decodes), read, longest)
            if shared:
                t += self.shared_prefix_time(shared)
        host = self.prefill_fixed + self.host_per_seq * (len(batch.prefills) + len(decodes))
        if self.host_per_token:  # every sequence's whole context, its chunk included
            host += self.host_per_token * ((kv + shared_tokens if decodes else 0)
                                          + sum([c + n for n, c in chunks]))
        floor = self.prefill_floor
        if decodes:
            floor += self.decode_launch + self.group_launch * len(shared or ())
        return host + max(self.prefill_scale * t, floor)

    def decode_stretch(self, n_seqs: int, kv_tokens: int, kv_growth: int,
                       shared: list[SharedGroup], longest: int | None = None) -> DecodeStretch:
        """Consecutive decode-only iterations of ``n_seqs`` sequences: step ``j`` reads
        ``kv_tokens + kv_growth * j`` tokens with the paged kernel, plus the ``shared``
        prefixes once each. ``longest``: the most KV tokens the paged kernel reads for one
        sequence at step 0 (with ``shared`` groups: its context less its group's prefix; every
        sequence grows by ``kv_growth / n_seqs`` tokens a step), for the skewed-batch excess
        (ignored without the profile's ``decode_paged_waves``, and with ``shared`` groups
        unless :attr:`suffix_waves`, or :attr:`group_waves`: then ``longest`` is a whole
        context and the excess is taken over the prefixes' tokens too)."""
        base, paged, excess, context = self._stretch_terms(n_seqs, kv_tokens, kv_growth,
                                                           shared, longest)
        return DecodeStretch(self, base, kv_tokens, kv_growth, paged, n_seqs, excess, context)

    def decode_step(self, n_seqs: int, kv_tokens: int, kv_growth: int,
                    shared: list[SharedGroup], longest: int | None = None) -> float:
        """Seconds of the first step of :meth:`decode_stretch` with these arguments, counted
        alike, without building the stretch (a repeated iteration of an engine short of KV
        blocks needs only that step)."""
        base, paged, excess, context = self._stretch_terms(n_seqs, kv_tokens, kv_growth,
                                                           shared, longest)
        return DecodeStretch.first_step(self, base, kv_tokens, paged, n_seqs, excess, context)

    def _stretch_terms(self, n_seqs: int, kv_tokens: int, kv_growth: int,
                       shared: list[SharedGroup], longest: int | None
                       ) -> tuple[float, Interp, ExcessSeries | None, int]:
        """(KV-independent seconds of a step, the paged curve at ``n_seqs``, the skewed-batch
        excess or None, the context tokens the runtime's per-token host time counts at step 0)
        of :meth:`decode_stretch`, counting its extrapolations."""
        try:
            paged, base, linear_extrapolated = self._decode_rows[n_seqs]
        except KeyError:
            paged, base, linear_extrapolated = self._decode_row(n_seqs)
        if linear_extrapolated:
            self.extrapolated += 1
            self._past("batch_tokens", n_seqs)
        if kv_tokens < paged.lo or kv_tokens > paged.hi:
            self.extrapolated += 1
            self._past_paged(n_seqs, kv_tokens)
        read = kv_tokens
        if shared:
            base += self.shared_prefix_time(shared)
            if self.group_waves:
                read += sum(p * n for p, n in shared)
            elif not self.suffix_waves:
                longest = None
        excess = None
        if longest is not None and self.waves is not None and n_seqs >= 2:
            excess = ExcessSeries(self.waves, n_seqs, read, kv_growth, longest)
            self._count_longest(longest)
        context = kv_tokens + sum([p * n for p, n in shared]) if self.host_per_token else 0
        return base, paged, excess, context

    def decode_times(self, n_seqs: int, kv_tokens: int, kv_growth: int,
                     shared: list[SharedGroup], steps: int,
                     longest: int | None = None) -> np.ndarray:
        """Durations (s) of ``steps`` decode-only iterations, one by one (for tests, plots)."""
        stretch = self.decode_stretch(n_seqs, kv_tokens, kv_growth, shared, longest)
        return np.array([stretch.step(j) for j in range(steps)])


def paged_grid_time(grid: PagedGrid, n_seqs: int, kv_tokens: float) -> float:
    """Seconds of ``grid`` for ``n_seqs`` decodes reading ``kv_tokens`` in all, by the cost
    model's rule (for fitting and plots; the cost model caches its rows instead)."""
    return PagedRows(grid, NO_TIME).row(n_seqs).scalar(kv_tokens)
