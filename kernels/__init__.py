"""Real GPU kernels for parrotsim's calibration harness.

Triton paged split-KV decode attention (the fair baseline), Parrot's shared-prefix ("cascade")
decode attention, causal prefill attention over a paged KV cache, torch references for all of
them, a single-token GEMV with programmatic dependent launch (``parrotsim.kernels.gemv``), and a LLaMA
forward pass with random bf16 weights (``parrotsim.kernels.llama``).
"""
