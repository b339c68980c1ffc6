"""The paper's published calibration facts for its hardware (experiments.md section 8).

Interim and projected profiles are fitted to these; reports compare against them. Times in
seconds unless the name says ms.
"""

from __future__ import annotations

#: LLaMA-13B on an A100-80GB, batch about 1, context up to about 1.2K: one decode step
DECODE_STEP_13B_A100_S = 0.0211
#: context length at which that step time was observed (tokens, approximate)
DECODE_STEP_CONTEXT = 1200
#: engine-side time of one chain-summary step's prompt iteration (prompt ~616 tokens on
#: LLaMA-13B/A100): fixed costs per step of 90 ms (Parrot) and 325 ms minus the 244 ms round
#: trip (vLLM + FastChat) on top of 50 decode steps; vLLM's prompt iteration also emits the
#: first token, so it stands for one decode step more
CHAIN_PROMPT_TOKENS = 616
PARROT_FILL_S = 0.090
VLLM_PROMPT_ITERATION_S = 0.325 - 0.244 + DECODE_STEP_13B_A100_S
#: the HuggingFace worker: about 29 ms per decode step and 430 ms fixed per chain step
#: (round trip included)
HF_DECODE_STEP_S = 0.029
HF_PROMPT_ITERATION_S = 0.430 - 0.244 + HF_DECODE_STEP_S
#: LLaMA-7B on an A100: filling the 5107-token Bing Copilot prefix (Parrot engine)
BING_PREFIX_TOKENS = 5107
BING_PREFIX_FILL_7B_A100_S = 0.70

#: Fig 10: mean ms per output token of vLLM 0.1.4 (LLaMA-13B, A100, ShareGPT, 100 prompts,
#: Poisson, max_num_batched_tokens 2560) by VLLM_CAPACITY (rows) and request rate (columns)
FIG10_RATES = (5, 10, 15, 20, 25)
FIG10_TPOT_MS = {
    2048: (25.2, 24.4, 24.8, 24.9, 27.6),
    4096: (27.1, 26.1, 26.8, 29.4, 30.4),
    6144: (27.3, 28.2, 30.5, 33.1, 33.4),
    8192: (28.9, 31.1, 33.1, 35.1, 38.6),
    10240: (30.1, 33.8, 35.9, 39.9, 40.2),
    12288: (31.4, 34.7, 40.3, 40.5, 45.0),
}
