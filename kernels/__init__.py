"""Real GPU kernels for parrotsim's calibration harness.

Triton paged split-KV decode attention (the fair baseline), Parrot's shared-prefix ("cascade")
decode attention, causal prefill attention over a paged KV cache, torch references for all of
them, the 2023-era kernels the Parrot artifact ran (``era_kernels``), a per-GPU table of split
and tile choices by shape (``tuning_table``, built by ``python -m parrotsim.kernels.tune``; the
one-command GPU session is ``parrotsim.kernels.session``), a single-token GEMV with
programmatic dependent launch (``parrotsim.kernels.gemv``), and a LLaMA forward pass with
random bf16 weights (``parrotsim.kernels.llama``).
"""
