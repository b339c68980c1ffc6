"""Whether an engine can ever run a call: the feasibility check of admission.

An engine policy admits a call only when its prompt can be filled and its KV cache can hold
the call's context, so a call too large for an *empty* engine would wait there forever (and,
with FastChat's heartbeats, keep the run going forever). The manager asks
:meth:`parrotsim.sim.model.engine.Engine.admission_problem` before it hands a call to the engine
its scheduler chose; a call with a problem is *rejected*: the reason is recorded on the call
(the ``error`` column of the calls table) and its app fails. The engines of a cluster are alike,
so no other engine could run it either.

:func:`admission_problem` tests the call alone on an empty engine whose limits
(:class:`EngineLimits`) the engine policy's config derives from its knobs
(``EnginePolicyConfig.limits``). It tests necessary conditions only, so a call that could
finish is never rejected:

* the prompt's tokens to fill (less a shared prefix the engine caches, which must itself be
  fillable) fit one iteration when the policy never splits a prompt (vLLM 0.1.4:
  ``max_num_batched_tokens``), and their KV blocks, with the prefix's, fit the cache less the
  blocks the policy keeps free when it admits a prompt (vLLM's watermark);
* the call's context when its last token is produced fits the cache: its own prompt tokens
  plus its output tokens, less one when the iteration that completes the prompt emits the first
  token (vLLM, HF) rather than a decode step (Parrot); a policy that allocates prompt and output
  at admission (HF) needs all of it at once.

A prompt that vLLM 0.1.4 truncates (``capacity_tokens``: :func:`truncated_prompt`) is checked
at its truncated length: truncation is the engine's behaviour, not an error. Tokens are tokens,
memory is KV blocks of ``block_size`` tokens.
"""

from __future__ import annotations

from dataclasses import dataclass


def truncated_prompt(prompt: int, output: int, capacity: int | None) -> int:
    """vLLM 0.1.4 as the paper ran it (``VLLM_CAPACITY``): with a capacity, a prompt longer
    than ``capacity - output - 100`` tokens is cut to that length (when it is positive)."""
    if capacity is not None:
        limit = capacity - output - 100
        if prompt > limit > 0:
            return limit
    return prompt


@dataclass(frozen=True, slots=True)
class EngineLimits:
    """What one engine can ever hold (see module docstring); the defaults test memory only."""

    kv_blocks: int
    block_size: int
    #: most prompt tokens of one call one iteration fills, for a policy that never splits a
    #: prompt (None: prompts are split into chunks, or a long one is filled alone)
    max_fill_tokens: int | None = None
    #: blocks that must stay free after a prompt is admitted (vLLM's watermark)
    fill_reserve_blocks: int = 0
    #: the iteration that completes a prompt emits the first output token
    fill_emits_token: bool = True
    #: prompt and whole output are allocated when the call is admitted (HF)
    whole_call: bool = False
    #: vLLM 0.1.4's capacity, which truncates long prompts (:func:`truncated_prompt`)
    prompt_cap: int | None = None

    def blocks(self, tokens: int) -> int:
        """Blocks holding ``tokens`` tokens from a block boundary."""
        return -(-tokens // self.block_size)


def admission_problem(limits: EngineLimits, prompt: int, output: int,
                      cached: int = 0) -> str | None:
    """Why a call of ``prompt`` prompt tokens (``cached`` of them in a shared prefix the engine
    keeps) and ``output`` output tokens can never run on an engine with ``limits``, or None."""
    prompt = truncated_prompt(prompt, output, limits.prompt_cap)
    cached = min(cached, prompt)
    own, prefix_blocks, total = prompt - cached, limits.blocks(cached), limits.kv_blocks
    of = f"KV blocks of {limits.block_size} tokens"
    if limits.max_fill_tokens is not None:
        for what, n in (("prompt", own), ("shared prefix", cached)):
            if n > limits.max_fill_tokens:
                return (f"its {what} of {n} tokens is longer than the {limits.max_fill_tokens} "
                        "tokens one iteration fills, and the engine does not split prompts")
    if limits.whole_call:
        need = prefix_blocks + limits.blocks(own + output)
        if need > total:
            return f"its prompt and output need {need} {of} at once; the engine has {total}"
        return None
    need, room = prefix_blocks + limits.blocks(own), total - limits.fill_reserve_blocks
    if need > room:
        return f"its prompt needs {need} {of}; the engine admits a prompt into at most {room}"
    end = cached + own + output - (1 if limits.fill_emits_token else 0)
    need = prefix_blocks + limits.blocks(end - cached)
    if need > total:
        return f"its context grows to {end} tokens, {need} {of}; the engine has {total}"
    return None
