"""The arXiv-March-2023 documents of the paper, as token counts of their chunks.

Facts come from ``workloads/data/arxiv_chunks.csv``: per document and nominal chunk size, the
number of chunks and the mean, min and max real tokens per chunk that LangChain's
``CharacterTextSplitter`` produced with the LLaMA tokenizer (it holds only about 0.44x the
nominal size, see experiments.md section 2). Set ``arxiv_march_10`` holds the 10 documents of
Figs 11, 12a, 14 and 19; ``arxiv_march_30`` the 30 shorter ones of Fig 12b (chunk 2048 only).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

DocSet = Literal["arxiv_march_10", "arxiv_march_30"]
CHUNK_SIZES = (512, 1024, 1536, 2048)


@dataclass(frozen=True, slots=True)
class ChunkFacts:
    """Measured chunking of one document at one nominal chunk size (tokens)."""

    doc_tokens: int
    chunks: int
    mean_tokens: float
    min_tokens: int
    max_tokens: int


@cache
def chunk_table() -> dict[tuple[str, int, int], ChunkFacts]:
    """All rows of the shipped table keyed by (doc_set, doc, chunk_size)."""
    text = resources.files("parrotsim.workloads.data").joinpath("arxiv_chunks.csv").read_text()
    table = {}
    for row in csv.DictReader(text.splitlines()):
        key = (row["doc_set"], int(row["doc"]), int(row["chunk_size"]))
        table[key] = ChunkFacts(
            doc_tokens=int(row["doc_tokens"]),
            chunks=int(row["chunks"]),
            mean_tokens=float(row["mean_chunk_tokens"]),
            min_tokens=int(row["min_chunk_tokens"]),
            max_tokens=int(row["max_chunk_tokens"]),
        )
    return table


def num_docs(doc_set: DocSet) -> int:
    """Number of documents in a set."""
    return len({doc for (s, doc, _) in chunk_table() if s == doc_set})


def chunk_facts(doc_set: DocSet, doc: int, chunk_size: int) -> ChunkFacts:
    """Facts for one document, or a ``KeyError`` naming what is missing."""
    try:
        return chunk_table()[(doc_set, doc, chunk_size)]
    except KeyError:
        raise KeyError(f"no chunking facts for {doc_set} document {doc} at chunk size "
                       f"{chunk_size}") from None


def chunk_tokens(doc_set: DocSet, doc: int, chunk_size: int) -> list[int]:
    """Token count of each chunk, deterministic, matching the measured count, mean, min and max.

    The splitter's chunks are near-equal except for a short tail, so the first chunk gets the
    maximum, the last the minimum, and the others share the rest evenly (total = round(n*mean)).
    """
    f = chunk_facts(doc_set, doc, chunk_size)
    total = round(f.chunks * f.mean_tokens)
    if f.chunks == 1:
        return [total]
    if f.chunks == 2:
        return [total - f.min_tokens, f.min_tokens]
    middle = f.chunks - 2
    rest = total - f.max_tokens - f.min_tokens
    base, extra = divmod(rest, middle)
    return [f.max_tokens] + [base + (1 if i < extra else 0) for i in range(middle)] + [f.min_tokens]
