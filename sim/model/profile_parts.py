"""The parts a cost profile (:mod:`parrotsim.sim.model.profile`) is made of.

* :class:`Curve` and :class:`Grid2D`: measured or fitted times in seconds for the whole model
  (every layer) of one engine, piecewise-linear in their axes; :class:`PagedGrid` and
  :class:`PagedWaves`: the paged decode kernel's grid and its wave structure;
* :class:`Curves`: every curve of a profile (linear layers, decode and prefill attention, the
  shared-prefix kernel) and the per-iteration overhead;
* :class:`GpuSpec` and :class:`ModelSpec`: the GPU's memory, bandwidth and tensor rate and the
  model's shape, from which KV and weight bytes follow;
* :class:`Runtime`: an engine software's per-iteration overheads (seconds);
* :class:`Calibration` and :class:`Extent`: what a calibration run measured and how far its
  grids reach.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from parrotsim.core.config import StrictConfig


class Curve(StrictConfig):
    """A piecewise-linear curve through measured points ``(x, seconds)``, x strictly rising."""

    x: list[float] = Field(min_length=2)
    seconds: list[float] = Field(min_length=2)

    @model_validator(mode="after")
    def _check(self) -> Curve:
        if len(self.x) != len(self.seconds):
            raise ValueError(f"x has {len(self.x)} points but seconds has {len(self.seconds)}")
        if any(b <= a for a, b in zip(self.x, self.x[1:], strict=False)):
            raise ValueError("x must be strictly increasing")
        if any(s < 0 for s in self.seconds):
            raise ValueError("seconds must be non-negative")
        return self


class Grid2D(StrictConfig):
    """Seconds on a rectangular grid: ``seconds[i][j]`` at ``(x[i], y[j])``, bilinear between."""

    x: list[float] = Field(min_length=2)
    y: list[float] = Field(min_length=2)
    seconds: list[list[float]]

    @model_validator(mode="after")
    def _check(self) -> Grid2D:
        if len(self.seconds) != len(self.x) or any(len(r) != len(self.y) for r in self.seconds):
            raise ValueError(f"seconds must be a {len(self.x)} x {len(self.y)} table")
        for axis in (self.x, self.y):
            if any(b <= a for a, b in zip(axis, axis[1:], strict=False)):
                raise ValueError("grid axes must be strictly increasing")
        return self


class PagedGrid(Grid2D):
    """Paged decode attention (whole model, seconds) vs ``x`` = decode sequences in the batch
    and ``y`` = KV tokens read per sequence: ``seconds[i][j]`` at ``(x[i], y[j])``.

    :class:`parrotsim.sim.model.costmodel.CostModel` interpolates linearly in ``y`` and log-log in ``x`` (at a
    fixed context, time is close to a power of the sequence count), so every ``x`` must be at
    least 1, every ``y`` non-negative and every value positive.
    """

    @model_validator(mode="after")
    def _check_paged(self) -> PagedGrid:
        if self.x[0] < 1:
            raise ValueError("x (decode sequences) must be >= 1")
        if self.y[0] < 0:
            raise ValueError("y (KV tokens per sequence) must be >= 0")
        if any(s <= 0 for row in self.seconds for s in row):
            raise ValueError("seconds must be positive (interpolated in log space)")
        return self

    def falling_row(self) -> float | None:
        """The sequence count of the first row whose time falls as the context grows, if any
        (the skewed-batch term, :class:`PagedWaves`, needs rows that do not)."""
        for x, row in zip(self.x, self.seconds, strict=True):
            if any(b < a for a, b in zip(row, row[1:], strict=False)):
                return x
        return None


class PagedWaves(StrictConfig):
    """How the paged decode kernel's programs fill the GPU (optional; see
    :mod:`parrotsim.sim.model.paged_waves`): ``sms`` multiprocessors, each running at most
    ``programs_per_sm`` of the kernel's programs at once (its occupancy: registers, shared
    memory and threads per program against the SM's). Both are measured facts of the GPU and
    the compiled kernel. When given (with a ``decode_paged_grid``), a decode batch of unequal
    contexts costs more than ``n`` sequences of its mean context: its longest sequence's
    programs set the kernel's critical path while the batch fits in few waves."""

    sms: int = Field(gt=0)
    programs_per_sm: int = Field(gt=0)


class GpuSpec(StrictConfig):
    """Datasheet (or measured) facts of the GPU."""

    name: str
    memory_gib: float = Field(gt=0)
    hbm_tb_s: float = Field(gt=0)
    bf16_tflops: float = Field(gt=0)


class ModelSpec(StrictConfig):
    """Shape of the LLaMA-style model the profile was made for."""

    name: str
    layers: int = Field(gt=0)
    hidden: int = Field(gt=0)
    heads: int = Field(gt=0)
    kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    intermediate: int = Field(gt=0)
    vocab: int = Field(gt=0)
    params: float = Field(gt=0)

    @property
    def kv_bytes_per_token(self) -> int:
        """fp16/bf16 K and V of every layer for one token."""
        return 2 * self.layers * self.kv_heads * self.head_dim * 2

    @property
    def weight_bytes(self) -> float:
        return 2 * self.params


class Curves(StrictConfig):
    """The curves :class:`parrotsim.sim.model.costmodel.CostModel` composes (whole model, seconds)."""

    iteration_overhead_s: float = Field(ge=0)
    linear: Curve
    decode_paged: Curve
    decode_per_seq_s: float = Field(default=0.0, ge=0)
    #: optional (calibration; schema 1 compatible): the paged kernel vs (decode sequences, KV
    #: tokens per sequence). When given it replaces ``decode_paged`` in the cost model (which
    #: evaluates it at the batch's sequence count and mean context); ``decode_per_seq_s`` is
    #: added either way
    decode_paged_grid: PagedGrid | None = None
    #: optional (schema 1 compatible): the paged kernel's slots on the GPU; with it a batch's
    #: longest context adds the critical-path excess of :mod:`parrotsim.sim.model.paged_waves`
    #: (needs ``decode_paged_grid``, whose rows must not fall with the context)
    decode_paged_waves: PagedWaves | None = None
    shared_prefix: Grid2D
    #: optional (schema 1 compatible): the same decomposition for the *paged* kernel over
    #: block tables that point at one group's shared prefix pages: its time beyond the
    #: suffixes' paged time, vs (prefix tokens, sequences in the group). The paged kernel
    #: runs the programs of a group's sequences together (batch index fastest,
    #: kernels/paged_decode.py), so most reads of a shared page after the first hit L2: on the
    #: H200 such a group costs well under ``n`` private copies of the prefix. When given, an
    #: engine with the paged kernel and a prefix cache costs its forked groups with it; when
    #: absent, every sequence reads its whole context from memory
    paged_shared_prefix: Grid2D | None = None
    prefill_attention: Curve
    #: optional (calibration; schema 1 compatible): seconds of ONE prompt chunk's attention
    #: run alone, on a grid of (new tokens, context tokens before the chunk). A chunk of few
    #: new tokens over a long context keeps few multiprocessors busy, so when the grid is
    #: given an iteration's prefill attention is the larger of ``prefill_attention`` of the
    #: summed work and the slowest of its chunks on this grid
    prefill_attention_grid: Grid2D | None = None

    @model_validator(mode="after")
    def _check_waves(self) -> Curves:
        if self.decode_paged_waves is None:
            return self
        g = self.decode_paged_grid
        if g is None:
            raise ValueError("decode_paged_waves needs decode_paged_grid")
        x = g.falling_row()
        if x is not None:
            raise ValueError(f"decode_paged_grid: the row of {x:g} sequences falls with the "
                             "context (decode_paged_waves needs rows that do not)")
        return self


class Runtime(StrictConfig):
    """How a serving runtime (vLLM 0.1.4, Parrot's engine, HF transformers, parrotsim's own
    replay loop) differs from the kernels: ``iteration_time = overhead_s + scale *
    model_time``, and for an iteration that fills prompt tokens ``prefill_overhead_s +
    max(prefill_scale * model_time, prefill_launch_floor_s)`` instead; both plus
    ``overhead_per_seq_s`` per sequence in the batch.

    ``prefill_launch_floor_s`` (seconds): a runtime that runs prompt-filling iterations
    eagerly (no CUDA graph) issues every kernel launch from the host one by one, so such an
    iteration lasts at least as long as issuing them takes, however little work the GPU has.
    0 (the default) for runtimes where it was not measured. An eager iteration that also
    decodes issues the decode-attention launches of every layer too: the floor grows by
    ``decode_launch_s``, and by ``group_launch_s`` per forked group that the shared-prefix
    kernel serves (its prefix pass is a launch per group and layer); both measured as
    differences by :mod:`parrotsim.calibrate.replay.launch_bench`, 0 by default."""

    overhead_s: float = Field(default=0.0, ge=0)
    scale: float = Field(default=1.0, gt=0)
    prefill_overhead_s: float = Field(default=0.0, ge=0)
    prefill_scale: float = Field(default=1.0, gt=0)
    prefill_launch_floor_s: float = Field(default=0.0, ge=0)
    decode_launch_s: float = Field(default=0.0, ge=0)
    group_launch_s: float = Field(default=0.0, ge=0)
    #: host seconds per sequence in the batch, every iteration (input building, page tables,
    #: emission: the runtime's per-sequence Python work); 0 where not measured
    overhead_per_seq_s: float = Field(default=0.0, ge=0)
    #: host seconds per context token of every sequence in the batch, every iteration (a
    #: runtime that rebuilds per-token address lists of whole contexts each iteration, as
    #: Parrot's engine did; shared prefixes count once per sequence); 0 where not measured
    overhead_per_context_token_s: float = Field(default=0.0, ge=0)


class Extent(StrictConfig):
    """The largest quantities a calibration measured, per axis of its grids (whole numbers of
    tokens or sequences). The curves are fitted on these grids, so a query past one of them is
    an extrapolation: :class:`parrotsim.sim.model.costmodel.CostModel` notes it
    (``CostModel.beyond``) and runs and ``parrotsim validate`` warn about it."""

    batch_tokens: int = Field(gt=0)  #: tokens through the linear layers in one iteration
    prefill_chunk_tokens: int = Field(gt=0)  #: new tokens of one prompt chunk
    prefill_context: int = Field(ge=0)  #: tokens cached before a prompt chunk
    decode_batch: int = Field(gt=0)  #: decoding sequences of the paged kernel
    decode_context: int = Field(gt=0)  #: KV tokens per decoding sequence
    shared_prefix: int = Field(gt=0)  #: prefix tokens of the shared-prefix kernel
    shared_batch: int = Field(gt=0)  #: sequences sharing one prefix


class Calibration(StrictConfig):
    """What a calibration run measured besides the curves (optional: written by ``parrotsim
    calibrate`` since issue 18; older and projected profiles have none). The ``gpu`` block
    keeps the datasheet figures (projection to other GPUs takes ratios of those); the rates
    here were measured in the same run, on the same device."""

    extent: Extent | None = None
    #: best streaming-read bandwidth (TB/s) of the run's probe
    stream_read_tb_s: float | None = Field(default=None, gt=0)
    #: bf16 GEMM rate (TFLOP/s, 8192^3 cuBLAS) of the run's probe
    gemm_bf16_tflops: float | None = Field(default=None, gt=0)
