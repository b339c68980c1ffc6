"""Kernel variants measured slower than the defaults, kept to reproduce the session tables, and
diagnostics not yet measured.

Nothing outside this package and the benchmarks imports it; :class:`parrotsim.kernels.llama.LlamaModel`
runs one linear path (fused GEMVs for one-token steps, cuBLAS otherwise) without them.

* :mod:`.l2_prefetch` and :mod:`.gemv_prefetch`: the one-token GEMV whose programs prefetch the
  rest of their weight rows (and optionally later programs' rows) into L2 before
  ``griddepcontrol.wait`` (session 4: slower in every form, kernels/NOTES.md);
* :mod:`.skinny`: the fused skinny GEMM for decode batches of <= 16 rows (4.89 vs 4.46 ms per
  7B decode step against cuBLAS, kernels/NOTES.md);
* :mod:`.llama_variants`: :class:`~.llama_variants.LlamaVariants`, the model with the switches
  that select them (``skinny_max_tokens``, ``gemv_prefetch``, ``o_tiles``), used by
  ``kernels/bench_decode.py`` and ``kernels/bench_llama.py`` to re-time the session tables;
* :mod:`.prefix_desc` and :mod:`.decode_desc`: the cascade's prefix phase and the paged tile over
  KV in consecutive pages, read through tensor descriptors (``kernels/bench_desc.py``: what the
  page gather costs; written without a GPU lent, not yet run on one).
"""
