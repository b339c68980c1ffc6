"""The 2023 decode kernels the Parrot artifact ran, as costs composed from a profile's own curves.

A profile's curves are today's kernels (split-KV paged decode, the project's shared-prefix
kernel). The paper's runs used older ones; ``cluster.paged_kernel`` and ``cluster.kernel``
choose them (:class:`parrotsim.sim.harness.config.ClusterConfig`).

**vLLM 0.1.4's paged kernel** (``paged_kernel: vllm_0_1_4``; vLLM and Parrot's 2023 engine
alike, which ran vLLM's kernel for its decodes) had no KV split: one thread block per
(sequence, KV head) walks the whole context. While the batch has fewer programs than the GPU
holds at full bandwidth, each program streams at its own latency-bound rate and the kernel
takes as long as at the batch that saturates the GPU's bandwidth; past it, it is a
bandwidth-bound kernel a constant factor slower than the split-KV one. So, from the profile's
split-KV curve ``paged(n, context)``::

    no_split(n, context) = BANDWIDTH_FACTOR * paged(max(n, n_sat), context)
    n_sat = PROGRAMS_PER_TBS * HBM bandwidth (TB/s, datasheet) / kv_heads

Measured basis: ``kernels/results/session5/era_paged.csv`` (H200, 132 SMs: a no-split proxy
of vLLM 0.1.4's kernel vs the split-KV kernel, LLaMA-7B and 13B heads, batch 1-256, context
128-16384); ``python -m parrotsim.calibrate.era_fit`` fits the two constants (contexts >= 512:
median |error| 5 %, worst +39 % at 512 tokens and batch 1, -22 % at 7B batch 8 and 16K).
(the H200 fit is 2.25 programs per SM, 297 programs, at the datasheet's 4.8 TB/s). Assumption
for other GPUs: a program's rate is latency-bound (one thread block's loads in flight over the
memory latency), the same on every GPU, so the programs needed to saturate the bandwidth, and
``n_sat``, scale with the bandwidth (A100/13B 3.2 sequences, A6000/7B 1.5). The other reading,
a saturating occupancy per SM the same on every GPU (``n_sat`` by SM count: 6.1 and 5.9), was
tried against the paper's Fig 10 table (vLLM 0.1.4 on the A100), the one A100 fact sensitive to
it: with the fit of ``calibrate/project.py`` it gives median |error| 16.3 % against 10.8 %
(9.2 % with the split-KV kernel). At a fixed ``n`` the cost stays piecewise linear in the KV
read, so the decode-stretch closed form holds.

**Parrot's 2023 shared-prefix kernel** (``kernel: parrot_2023``): a Triton prefix pass (the
batch's queries as the rows of a tile, the prefix in 256-token splits), a reduce of the
splits, then vLLM 0.1.4's no-split paged pass over each sequence's own suffix merging the
prefix state. The prefix pass and reduce cost::

    prefix_pass(prefix, n) = PREFIX_FACTOR(n) * shared_prefix(prefix, n)
                             + layers * REDUCE_LAUNCH_S   (prefix over one 256-token split)

``shared_prefix`` being the profile's curve of the project's prefix pass, and the suffix pass
the no-split kernel above. The artifact took the prefix of ``jobs[0]`` for the whole batch (one
prefix per batch); here a batch whose decodes do not all share one cached prefix falls back
to the paged kernel over every whole context (:func:`one_prefix`). That fallback is not what
the artifact's code did: ParrotServe e8541c4's ``xFormersFill_SharedPromptsGenerate`` served
*every* Generate the first job's prefix (a Fill's when the iteration had one), each reading its
own context past that many tokens, so decodes forking other prompts got wrong outputs. Costed
that way (measured 2026-12-04, not shipped), Fig 17's Parrot crosses 100 ms/token only at 24
req/s and is 44 % fast at 8 req/s against the artifact's re-run, which saturated near 6.9
req/s; with the fallback it crosses at 5.2. What limited the real engine is not found, and the
fallback stays as the model nearer the runs. Measured basis:
``kernels/results/session5/parrot2023.csv`` (H200, LLaMA-7B heads, batch 1-256, prefix
512-16384, suffix 64/512) against the H200 profile's ``shared_prefix``; fitted by the same
command (least squares in microseconds on the suffix-512 points, the suffix pass taken as the
measured no-split kernel at 512 tokens). ``PREFIX_FACTOR`` is 1.1 up to 16 rows (the same
work, a launch more) and grows to 1.74 at 256 rows (the artifact's fixed 128 x 64 tile against
the project's tuned prefix kernel). Composed through the cost model on ``h200_llama-7b``, the
whole kernel is within median 4.3 % of all 108 measured points (worst +27 % at 256 sequences
over a 512-token prefix, -5 %). Taken as the kernels' own on every GPU (both prefix passes
are bound by the same tiles over the same prefix reads).
"""

from __future__ import annotations

import math
from bisect import bisect_right

from parrotsim.sim.model.curves import Interp, PagedRows

#: programs (sequence x KV head) per TB/s of HBM bandwidth at which the no-split kernel reaches
#: it (H200: 2.25 programs per SM x 132 SMs / 4.8 TB/s)
NO_SPLIT_PROGRAMS_PER_TBS = 61.875
#: the no-split kernel's time over the split-KV kernel's once bandwidth-bound
NO_SPLIT_BANDWIDTH_FACTOR = 1.185
#: the artifact's prefix pass over the project's, by batch (rows of the tile); log-linear in
#: the batch between points, constant past the ends
PARROT_PREFIX_FACTOR: tuple[tuple[int, float], ...] = (
    (1, 1.11), (2, 1.11), (4, 1.10), (8, 1.12), (16, 1.15), (32, 1.27), (64, 1.46),
    (128, 1.65), (256, 1.74))
#: the artifact's reduce of the prefix splits, one launch per layer (seconds)
PARROT_REDUCE_LAUNCH_S = 2.8e-6
#: tokens per prefix split of the artifact's kernel (16 pages of 16 tokens)
PARROT_SPLIT_TOKENS = 256

PAGED_KERNELS = ("split_kv", "vllm_0_1_4")
SHARED_KERNELS = ("paged", "shared_prefix", "parrot_2023")


def saturating_sequences(hbm_tb_s: float, kv_heads: int) -> float:
    """Sequences at which the no-split kernel's programs saturate a GPU of ``hbm_tb_s`` TB/s
    (``n_sat``)."""
    return hbm_tb_s * NO_SPLIT_PROGRAMS_PER_TBS / kv_heads


class NoSplitRows:
    """Sequence count -> vLLM 0.1.4's no-split paged kernel's seconds vs KV tokens, from the
    split-KV kernel's rows (same interface as :class:`PagedRows`)."""

    def __init__(self, split: PagedRows, n_sat: float,
                 factor: float = NO_SPLIT_BANDWIDTH_FACTOR) -> None:
        self.split, self.n_sat, self.factor = split, n_sat, factor

    def row(self, n: int) -> Interp:
        """The row of ``n`` sequences: the split-KV row of ``max(n, n_sat)`` sequences at the
        same context per sequence, times the bandwidth factor."""
        if n <= 0 or n >= self.n_sat:
            base, stretch = self.split.row(n), 1.0
        else:
            base, stretch = self.split.row(self.n_sat), n / self.n_sat
        if n <= 0:
            return base
        # a 1-D curve (no grid) is the same for every count: vs total KV, so read it at the
        # saturating batch's total, n_sat / n times the batch's
        row = Interp([x * stretch for x in base.xs], [y * self.factor for y in base.ys])
        row.lo = base.lo * stretch
        return row


def parrot_prefix_factor(n: int) -> float:
    """:data:`PARROT_PREFIX_FACTOR` at ``n`` rows."""
    pts = PARROT_PREFIX_FACTOR
    if n <= pts[0][0]:
        return pts[0][1]
    if n >= pts[-1][0]:
        return pts[-1][1]
    i = bisect_right([b for b, _ in pts], n) - 1
    (b0, f0), (b1, f1) = pts[i], pts[i + 1]
    return f0 + (f1 - f0) * math.log(n / b0) / math.log(b1 / b0)


def parrot_reduce_s(prefix: int, layers: int) -> float:
    """Seconds of the artifact's reduce of the prefix splits (none for one split)."""
    return layers * PARROT_REDUCE_LAUNCH_S if prefix > PARROT_SPLIT_TOKENS else 0.0


def one_prefix(groups: list[tuple[int, int]], decodes: int) -> list[tuple[int, int]]:
    """The shared-prefix groups Parrot's 2023 kernel serves: the one group when every decode
    of the batch shares it, else none (the batch is costed with the paged kernel)."""
    if len(groups) == 1 and groups[0][1] == decodes:
        return groups
    return []


__all__ = ["NO_SPLIT_BANDWIDTH_FACTOR", "NO_SPLIT_PROGRAMS_PER_TBS", "NoSplitRows",
           "PAGED_KERNELS", "PARROT_PREFIX_FACTOR", "PARROT_REDUCE_LAUNCH_S", "SHARED_KERNELS",
           "one_prefix", "parrot_prefix_factor", "parrot_reduce_s", "saturating_sequences"]
