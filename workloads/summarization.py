"""Long-document summarization apps over arXiv chunks: chain (refine) and map-reduce.

Serves Figs 11, 12a, 12b (chain) and 14, 19 (map-reduce). Template token counts are the
paper's (experiments.md section 2): the first/map prompt has about 30 constant tokens around the
chunk, the refine prompt about 96 (40 before the previous summary), the reduce prompt about 33
plus the N map summaries. Every call generates exactly ``output_len`` tokens.

Chunk lengths are the splitter's real token counts (``parrotsim.workloads.arxiv``), not the nominal chunk
size: at nominal 1024 a chunk holds about 450 tokens. Fig 11's Parrot client posts the chain's
calls one after another (``submit: sequential``); Figs 12a/12b post them as one batch
(``submit: concurrent``). Fig 12b runs the first N documents of ``arxiv_march_30`` at once
(``first_docs: N``, chunk 2048).
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from parrotsim.workloads.app import App, Call, CallHints, Ref, SubmitMode, Text
from parrotsim.workloads.arxiv import DocSet, chunk_table, chunk_tokens, num_docs
from parrotsim.workloads.registry import WorkloadConfig, register_workload

NO_HINTS = CallHints()

# Constant template tokens around the variable parts (LLaMA tokens):
# first/map: "Write an one-sentence summary ... of the following:" {chunk} "CONCISE SUMMARY:"
FIRST_HEAD, FIRST_TAIL = 23, 7
# refine: head {previous summary} mid {chunk} tail
REFINE_HEAD, REFINE_MID, REFINE_TAIL = 40, 20, 36
# reduce: "The following is set of summaries:" {summaries} "Take these and distill ..."
REDUCE_HEAD, REDUCE_TAIL = 8, 25


def _chunk_inputs(doc_set: DocSet, doc: int, chunk_size: int) -> dict[str, int]:
    return {f"chunk_{i}": n for i, n in enumerate(chunk_tokens(doc_set, doc, chunk_size))}


def check_docs(doc_set: DocSet, docs: list[int], chunk_size: int) -> None:
    """Raise ``ValueError`` naming the first document of ``docs`` with no chunking facts."""
    table = chunk_table()
    for d in docs:
        if (doc_set, d, chunk_size) not in table:
            have = sorted({cs for (s, _, cs) in table if s == doc_set})
            raise ValueError(f"{doc_set} has no document {d} at chunk size {chunk_size} "
                             f"(documents 0..{num_docs(doc_set) - 1}, chunk sizes {have})")


def chain_summary_app(app_id: str, arrival: float, doc_set: DocSet, doc: int, chunk_size: int,
                      output_len: int, submit: SubmitMode = "sequential") -> App:
    """One refine chain: summarize chunk 0, then refine the summary with each next chunk."""
    inputs = _chunk_inputs(doc_set, doc, chunk_size)
    calls = [Call("first", (Text("sum/first/head", FIRST_HEAD), Ref("chunk_0"),
                            Text("sum/first/tail", FIRST_TAIL)), "summary_0", output_len)]
    for i in range(1, len(inputs)):
        prompt = (Text("sum/refine/head", REFINE_HEAD), Ref(f"summary_{i - 1}"),
                  Text("sum/refine/mid", REFINE_MID), Ref(f"chunk_{i}"),
                  Text("sum/refine/tail", REFINE_TAIL))
        calls.append(Call(f"refine_{i}", prompt, f"summary_{i}", output_len))
    last = calls[-1].output
    return App(app_id=app_id, arrival=arrival, calls=tuple(calls), outputs=(last,), inputs=inputs,
               submit=submit, kind="chain_summary")


def map_reduce_app(app_id: str, arrival: float, doc_set: DocSet, doc: int, chunk_size: int,
                   output_len: int, map_hints: CallHints = NO_HINTS,
                   reduce_hints: CallHints = NO_HINTS) -> App:
    """Map every chunk to a summary concurrently, then reduce all summaries into one.

    Stage 1 holds the N map calls, stage 2 the reduce, whose prompt references all N summaries
    (33 + N * ``output_len`` tokens). Fig 19 gives the reduce ``max_requests_per_engine=32``.
    """
    inputs = _chunk_inputs(doc_set, doc, chunk_size)
    maps = [Call(f"map_{i}", (Text("sum/first/head", FIRST_HEAD), Ref(f"chunk_{i}"),
                              Text("sum/first/tail", FIRST_TAIL)), f"summary_{i}", output_len,
                 hints=map_hints)
            for i in range(len(inputs))]
    reduce_prompt = (Text("sum/reduce/head", REDUCE_HEAD),
                     *(Ref(m.output) for m in maps), Text("sum/reduce/tail", REDUCE_TAIL))
    reduce = Call("reduce", reduce_prompt, "final", output_len, hints=reduce_hints)
    return App(app_id=app_id, arrival=arrival, calls=(*maps, reduce), outputs=("final",),
               inputs=inputs, stages=(tuple(m.name for m in maps), ("reduce",)),
               kind="map_reduce")


@register_workload
class ChainSummary(WorkloadConfig):
    """Chain (refine) summarization of arXiv documents; one app per document, all arriving at
    ``start`` (Fig 11: one document per run; Fig 12b: ``first_docs`` N of ``arxiv_march_30``).

    ``docs`` lists document indices (default: document 0); ``first_docs: N`` means 0..N-1.
    """

    kind: Literal["chain_summary"] = "chain_summary"
    figure: ClassVar[str] = "11, 12b, 13"
    doc_set: DocSet = "arxiv_march_10"
    docs: list[int] | None = Field(default=None, min_length=1)
    first_docs: int | None = Field(default=None, gt=0)
    chunk_size: Literal[512, 1024, 1536, 2048] = 1024
    output_len: int = Field(default=50, gt=0)
    start: float = Field(default=0.0, ge=0)
    submit: SubmitMode = "sequential"

    @model_validator(mode="after")
    def _check(self) -> ChainSummary:
        if self.first_docs is not None and self.docs is not None:
            raise ValueError("give either docs or first_docs, not both")
        check_docs(self.doc_set, self.doc_list(), self.chunk_size)
        return self

    def doc_list(self) -> list[int]:
        """The documents summarized, one app each."""
        if self.first_docs is not None:
            return list(range(self.first_docs))
        return list(self.docs) if self.docs is not None else [0]

    def build(self, rng: np.random.Generator) -> list[App]:
        return [chain_summary_app(f"chain-{d}", self.start, self.doc_set, d, self.chunk_size,
                                  self.output_len, self.submit) for d in self.doc_list()]


@register_workload
class MapReduceSummary(WorkloadConfig):
    """Map-reduce summarization of arXiv documents; one app per listed document (Fig 14)."""

    kind: Literal["map_reduce"] = "map_reduce"
    figure: ClassVar[str] = "14"
    doc_set: DocSet = "arxiv_march_10"
    docs: list[int] = Field(default=[0], min_length=1)
    chunk_size: Literal[512, 1024, 1536, 2048] = 1024
    output_len: int = Field(default=50, gt=0)
    start: float = Field(default=0.0, ge=0)

    @model_validator(mode="after")
    def _check(self) -> MapReduceSummary:
        check_docs(self.doc_set, self.docs, self.chunk_size)
        return self

    def build(self, rng: np.random.Generator) -> list[App]:
        return [map_reduce_app(f"mapreduce-{d}", self.start, self.doc_set, d, self.chunk_size,
                               self.output_len) for d in self.docs]
