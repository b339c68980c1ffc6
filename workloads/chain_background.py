"""Fig 12a: one chain-summary app with a background stream of synthetic requests.

The foreground is the chain of ``parrotsim.workloads.summarization`` (chunk 1024, output 50 in the paper;
Parrot posts its calls as one batch, hence ``submit: concurrent``). The background is NOT
ShareGPT: the artifact sends the prompt ``"Test " * 512`` (513 LLaMA tokens with BOS) and asks for
exactly 50 output tokens, with exponential inter-arrival gaps of mean 1/``background_rate``
seconds, starting together with the chain. Every background prompt is the same text, so all
carry one content id (``background/test512``); whether a policy shares it is the policy's
business (vLLM 0.1.4 and the artifact's Parrot did not).

The artifact kills the stream when the chain ends. Here background apps are ``background=True``
(the simulator stops when every foreground app is done) and arrive over ``background_horizon``
seconds, which must outlast the chain (default 1800 s; the slowest baseline chain in the paper
takes a few minutes). They come as a stream after the chain (:class:`AppsThenStream`): the
simulator makes each one as it arrives, so the arrivals past the chain's end cost nothing.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from parrotsim.workloads.app import App, Call, SubmitMode, Text
from parrotsim.workloads.app_stream import AppsThenStream, SingleCallApps
from parrotsim.workloads.arrivals import ArrivalProcess, arrivals_until
from parrotsim.workloads.arxiv import DocSet
from parrotsim.workloads.registry import WorkloadConfig, register_workload
from parrotsim.workloads.summarization import chain_summary_app, check_docs

BACKGROUND_PROMPT_TOKENS = 513  # "Test " * 512 with the LLaMA tokenizer, BOS included
BACKGROUND_OUTPUT_TOKENS = 50


def background_apps(times: np.ndarray, prompt_tokens: int = BACKGROUND_PROMPT_TOKENS,
                    output_tokens: int = BACKGROUND_OUTPUT_TOKENS) -> list[App]:
    """One single-call ``background`` app per arrival time (s), ids ``bg-{i}``."""
    prompt = (Text(f"background/test{prompt_tokens - 1}", prompt_tokens),)
    return [App(app_id=f"bg-{i}", arrival=float(t),
                calls=(Call("call", prompt, "out", output_tokens),), outputs=("out",),
                kind="background", background=True)
            for i, t in enumerate(times)]


def background_stream(times: np.ndarray, prompt_tokens: int = BACKGROUND_PROMPT_TOKENS,
                      output_tokens: int = BACKGROUND_OUTPUT_TOKENS) -> SingleCallApps:
    """The apps :func:`background_apps` lists, as a stream made on demand."""
    prompt = (Text(f"background/test{prompt_tokens - 1}", prompt_tokens),)
    n = len(times)
    return SingleCallApps(times, np.full(n, output_tokens), np.full(n, prompt_tokens),
                          app_id="bg-{}".format, prompt=lambda _i: prompt, kind="background",
                          background=True)


@register_workload
class ChainWithBackground(WorkloadConfig):
    """Chain summary of each listed document (Fig 12a: one at a time) plus background load at
    ``background_rate`` requests/s (0, 1, 2, 3, 3.5 in the paper)."""

    kind: Literal["chain_with_background"] = "chain_with_background"
    figure: ClassVar[str] = "12a"
    doc_set: DocSet = "arxiv_march_10"
    docs: list[int] = Field(default=[0], min_length=1)
    chunk_size: Literal[512, 1024, 1536, 2048] = 1024
    output_len: int = Field(default=50, gt=0)
    start: float = Field(default=0.0, ge=0)
    submit: SubmitMode = "concurrent"
    background_rate: float = Field(default=1.0, ge=0)
    background_arrival: ArrivalProcess = "poisson"
    background_prompt_tokens: int = Field(default=BACKGROUND_PROMPT_TOKENS, gt=0)
    background_output_len: int = Field(default=BACKGROUND_OUTPUT_TOKENS, gt=0)
    background_horizon: float = Field(default=1800.0, gt=0)

    @model_validator(mode="after")
    def _check(self) -> ChainWithBackground:
        check_docs(self.doc_set, self.docs, self.chunk_size)
        return self

    def build(self, rng: np.random.Generator) -> AppsThenStream:
        apps = [chain_summary_app(f"chain-{d}", self.start, self.doc_set, d, self.chunk_size,
                                  self.output_len, self.submit) for d in self.docs]
        times = arrivals_until(rng, self.background_rate, self.background_horizon,
                               self.background_arrival, start=self.start)
        return AppsThenStream(apps, background_stream(times, self.background_prompt_tokens,
                                                      self.background_output_len))
