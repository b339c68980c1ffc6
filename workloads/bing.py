"""Bing Copilot requests with a long shared system prompt (Figs 15 and 16).

Only the final response-generating request of a Copilot turn is modelled, as in the paper. The
facts (``workloads/data/bing_prompt_lengths.csv``, ``bing_sampled_requests.csv``) are the
artifact's: 288 prompt lengths (5224-7492 tokens) of which the first ``shared_prefix`` = 5107
tokens are the same text for every request, and the 64 (prompt, output) pairs hard-coded in its
Fig 15 script, whose output column (183-800 tokens) Fig 15 uses.

* ``requests: sampled`` (Fig 15): the 288 prompts shuffled as the artifact did
  (``np.random.seed(2023); np.random.shuffle(...)``, reproduced exactly with the legacy
  ``RandomState(2023)``, whose shuffle draws the same sequence for a list and an array), the
  first 64 kept, request i gets output i of the 64 pairs. ``output_len`` overrides the outputs
  (Fig 16b: the artifact's one-wave script ran these 64 prompts with a fixed output).
* ``requests: all`` (Fig 16a): all 288 prompts in file order, each generating ``output_len``.

Each request is a single-call app (kind ``bing``, id ``bing-{i}``) arriving at t = 0 s, in FIFO
order; its prompt is ``Text("bing/system", 5107)`` then a unique suffix of prompt - 5107
tokens. The artifact ran this as an engine-level microbenchmark with a fixed pool of batch
slots refilled FIFO; that driver is the ``slots`` cluster scheduler (``cluster.scheduler.slots``).
``batch_size`` is read by nothing: it is kept only so that stored results keep their run keys and
summary columns. The run's ``rng`` is not used: the workload is fixed.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from parrotsim.workloads.app import App, Text, single_call_app
from parrotsim.workloads.registry import WorkloadConfig, register_workload
from parrotsim.workloads.tables import read_table

SHARED_PREFIX_TOKENS = 5107
SHUFFLE_SEED = 2023


def prompt_lengths() -> list[int]:
    """The 288 prompt lengths (tokens) in the artifact's file order."""
    return [int(r["prompt_tokens"]) for r in read_table("bing_prompt_lengths.csv")]


def sampled_outputs() -> list[int]:
    """Output lengths (tokens) of the 64 hard-coded Fig 15 requests, in order."""
    return [int(r["output_tokens"]) for r in read_table("bing_sampled_requests.csv")]


def shuffled_prompt_lengths() -> list[int]:
    """The prompt lengths after the artifact's seeded shuffle (seed 2023)."""
    lengths = np.array(prompt_lengths())
    np.random.RandomState(SHUFFLE_SEED).shuffle(lengths)
    return [int(v) for v in lengths]


def bing_requests(requests: str, output_len: int | None) -> list[tuple[int, int]]:
    """(prompt tokens, output tokens) of each request, in submission order."""
    if requests == "sampled":
        outputs = sampled_outputs()
        prompts = shuffled_prompt_lengths()[:len(outputs)]
        if output_len is not None:
            outputs = [output_len] * len(outputs)
        return list(zip(prompts, outputs, strict=True))
    if output_len is None:
        raise ValueError("requests 'all' needs a fixed output_len")
    return [(p, output_len) for p in prompt_lengths()]


@register_workload
class BingCopilot(WorkloadConfig):
    """Bing Copilot requests sharing a 5107-token system prompt, all arriving at t = 0.

    Fig 15: ``requests: sampled`` with 8/16/32/64 slots. Fig 16: ``requests: all`` with
    ``output_len`` 200-800 (32 slots), and ``requests: sampled`` with 100-480 (64 slots: one
    wave). ``batch_size`` is unused (see the module docstring); the slots are
    ``cluster.scheduler.slots``.
    """

    kind: Literal["bing"] = "bing"
    figure: ClassVar[str] = "15, 16"
    requests: Literal["sampled", "all"] = "sampled"
    output_len: int | None = Field(default=None, gt=0)
    batch_size: int = Field(default=32, gt=0)
    shared_prefix: int = Field(default=SHARED_PREFIX_TOKENS, gt=0)

    @model_validator(mode="after")
    def _check(self) -> BingCopilot:
        if self.requests == "all" and self.output_len is None:
            raise ValueError("requests 'all' (Fig 16) needs a fixed output_len")
        shortest = min(prompt_lengths())
        if self.shared_prefix >= shortest:
            raise ValueError(f"shared_prefix {self.shared_prefix} must be shorter than the "
                             f"shortest prompt ({shortest} tokens)")
        return self

    def build(self, rng: np.random.Generator) -> list[App]:
        system = Text("bing/system", self.shared_prefix)
        return [single_call_app(f"bing-{i}", 0.0,
                                (system, Text(f"bing/{i}/context", p - self.shared_prefix)), o,
                                kind="bing")
                for i, (p, o) in enumerate(bing_requests(self.requests, self.output_len))]
