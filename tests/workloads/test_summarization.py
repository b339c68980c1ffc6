"""Chain and map-reduce summarization match the arXiv chunking facts exactly."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from pydantic import ValidationError

from parrotsim.workloads.app import Ref, Text, prompt_tokens, validate_app
from parrotsim.workloads.arxiv import chunk_facts, chunk_tokens
from parrotsim.workloads.summarization import ChainSummary, MapReduceSummary

RNG = np.random.default_rng(0)


def _jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("doc_set,file", [("arxiv_march_10", "arxiv_sampled_chunks.jsonl"),
                                          ("arxiv_march_30", "arxiv_sampled1_chunks.jsonl")])
def test_documents_and_chunks_match_facts(parrot_data, doc_set, file):
    rows = _jsonl(parrot_data / file)
    assert len(rows) == (10 if doc_set == "arxiv_march_10" else 30)
    for row in rows:
        doc = int(row["file"].removeprefix("article_").removesuffix(".txt"))
        for key, facts in row.items():
            if not key.startswith("cs"):
                continue
            cs = int(key[2:])
            f = chunk_facts(doc_set, doc, cs)
            assert f.doc_tokens == row["full_tokens"]
            assert f.chunks == facts["n"]
            chunks = chunk_tokens(doc_set, doc, cs)
            assert len(chunks) == facts["n"]
            assert max(chunks) == facts["max"] and min(chunks) == facts["min"]
            assert sum(chunks) == round(facts["n"] * facts["mean_real_tokens"])


def test_ten_doc_lengths_match_token_table(parrot_data):
    with open(parrot_data / "parrot_arxiv_march_10docs_tokens.csv") as f:
        for row in csv.DictReader(f):
            doc = int(row["doc"].removeprefix("article_"))
            # the table counts without BOS, the chunk facts with it
            assert chunk_facts("arxiv_march_10", doc, 1024).doc_tokens == \
                int(row["llama_tokens_no_bos"]) + 1


def test_chain_structure_and_template_tokens():
    app = ChainSummary(docs=[0], chunk_size=1024, output_len=25).build(RNG)[0]
    validate_app(app)
    chunks = chunk_tokens("arxiv_march_10", 0, 1024)
    assert len(app.calls) == len(chunks) == 75
    first, second = app.calls[0], app.calls[1]
    assert prompt_tokens(app, first) == 30 + chunks[0]
    assert prompt_tokens(app, second) == 96 + 25 + chunks[1]
    assert Ref("summary_0") in second.prompt
    assert all(c.output_tokens == 25 for c in app.calls)
    assert app.outputs == ("summary_74",) and app.submit == "sequential"


def test_map_reduce_structure():
    app = MapReduceSummary(docs=[3], chunk_size=512, output_len=100).build(RNG)[0]
    validate_app(app)
    n = chunk_facts("arxiv_march_10", 3, 512).chunks
    assert len(app.calls) == n + 1
    assert app.stages == (tuple(f"map_{i}" for i in range(n)), ("reduce",))
    reduce = app.calls[-1]
    assert [p.var for p in reduce.prompt if isinstance(p, Ref)] == [f"summary_{i}"
                                                                    for i in range(n)]
    assert prompt_tokens(app, reduce) == 33 + n * 100
    assert all(isinstance(c.prompt[0], Text) and c.prompt[0].content_id == "sum/first/head"
               for c in app.calls[:-1])


def test_fig12b_first_docs_of_the_30_set():
    cfg = ChainSummary(doc_set="arxiv_march_30", first_docs=25, chunk_size=2048,
                       submit="concurrent")
    apps = cfg.build(RNG)
    assert [a.app_id for a in apps] == [f"chain-{i}" for i in range(25)]
    assert all(a.arrival == 0.0 and a.submit == "concurrent" for a in apps)
    assert [len(a.calls) for a in apps] == [chunk_facts("arxiv_march_30", i, 2048).chunks
                                            for i in range(25)]


@pytest.mark.parametrize("kwargs,needle", [
    ({"doc_set": "arxiv_march_30", "chunk_size": 1024}, "chunk size 1024"),
    ({"docs": [10]}, "no document 10"),
    ({"docs": [1], "first_docs": 2}, "either docs or first_docs"),
    ({"doc_set": "arxiv_march_10", "first_docs": 11}, "no document 10"),
])
def test_bad_documents_are_rejected(kwargs, needle):
    with pytest.raises(ValidationError, match=needle):
        ChainSummary(**kwargs)
