"""Host (CPU) time the paper's serving software spent every iteration outside the forward pass.

Measured, not fitted: the GPU idles through all of it, and none of the paper's published facts
sees it (they were taken at batch 1, where it is a fraction of a millisecond). The projected
paper profiles (:mod:`parrotsim.calibrate.project`) carry these as runtime terms, the same on
every GPU (it is the engine software's cost), and their fitted prompt-iteration overheads
leave room for them. Seconds.
"""

from __future__ import annotations

#: vLLM 0.1.4 through ``AsyncLLMEngine`` (FastChat's worker, vLLM's api_server), per running
#: sequence per iteration: the per-group sampler's GPU round trips, input building, output
#: handling, one consumer coroutine per request. ``calibrate/measurements/vllm_step_host``:
#: 104.0 and 94.5 us per sequence at 200- and 2,000-token prompts (H200 host); their mean.
VLLM_HOST_PER_SEQ_S = 99e-6

#: Parrot's engine, per job and per context token of the batch, per iteration (it rebuilds
#: per-token address lists of every job's whole context, a forked one's prefix included).
#: ``calibrate/measurements/parrot_iteration_host``: least squares over both attention
#: layouts, batch 1-256, contexts 500-8,000 (the shared-prompts layout alone: 4.8 us and
#: 15.4 ns; the paged one: 5.5 us and 21.0 ns).
PARROT_HOST_PER_JOB_S = 5.15e-6
PARROT_HOST_PER_CONTEXT_TOKEN_S = 18.2e-9
