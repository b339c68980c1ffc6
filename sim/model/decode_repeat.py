"""Decode iterations an engine policy decides alike, stepped without asking it again.

A Parrot engine short of KV blocks decodes the same sequences iteration after iteration (Fig
17's GPTs at 256 engines: runs of 15 iterations, until every one needs a new block), but its
held-back jobs make a fast-forwarded stretch inexact: the closed-form length of ``k`` steps
matches ``k`` stepped iterations only up to float rounding. When the policy says the next
``k`` iterations would be decided alike (:meth:`~parrotsim.sim.model.engine_policy.EnginePolicy.repeated_decode_steps`),
the engine still runs them one SimPy event each, timed exactly as stepping times them (each
iteration's cost-model call at its own KV tokens, its end added to the clock), but skips the
policy's decision and defers the per-sequence work: the tokens the others emit and the slots
they take are applied in one pass when the run ends (first tokens are stamped at the end of
the first iteration, as stepping stamps them).

The run ends early, after the iteration in progress, when something outside the engine acts:
a call arrives or a waiting call becomes ready (the engine is notified), or the engine's queue
lengths or KV use change (a prefix dropped by the cache) before an iteration ends.
"""

from __future__ import annotations

from dataclasses import dataclass

from parrotsim.sim.model.costmodel import SharedGroup
from parrotsim.sim.model.sequence import Sequence


@dataclass(slots=True)
class RepeatedDecodes:
    """``steps`` iterations of one decode batch (the one running now is ``step``, 0-based);
    the first ended at ``first_end`` (s). Iteration ``j`` reads ``kv0 + n * j`` KV tokens
    (``n`` decodes, each one token longer a step) in the paged kernel and the ``groups``'
    prefixes once each; its longest read is ``longest0 + j`` (None: not costed).
    ``running``, ``waiting``, ``used_blocks``: the engine state the policy decided on."""

    steps: int
    first_end: float
    kv0: int
    longest0: int | None
    groups: list[SharedGroup]
    running: int
    waiting: int
    used_blocks: int
    unstamped: list[Sequence]
    step: int = 0
