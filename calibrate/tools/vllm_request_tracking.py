"""Host time of vLLM 0.1.4's request tracking (the paper artifact's ``VLLM_REQ_TRACK=1``).

The vendored vLLM worker of the artifact decoded the prompt of every sequence of a batch with
a LLaMA tokenizer (transformers' ``AutoTokenizer``) after each prefill iteration, synchronously
on the engine's thread. This script times that work on this CPU with the tokenizer stack of the
paper's time (transformers 4.35.2 / tokenizers 0.15.0, ``LlamaTokenizerFast`` over the LLaMA
vocabulary) and fits ``seconds = a * prompts + b * prompt tokens``.

Run (outside the project's environment; the two packages are not project dependencies)::

    npm install llama-tokenizer-js@1.2.2
    python3 -m venv /tmp/tokvenv && /tmp/tokvenv/bin/pip install transformers==4.35.2 tokenizers==0.15.0
    node calibrate/tools/llama_vocab.mjs SOME_ENGLISH_TEXT.txt /tmp/tok
    /tmp/tokvenv/bin/python calibrate/tools/vllm_request_tracking.py /tmp/tok

It prints the minimum of 15 repetitions per batch shape (the minimum rejects interference
from other processes) and the fit that ``policies/engine/vllm.py`` uses.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer, decoders, models, normalizers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

SHAPES = [(1, 512), (1, 2048), (1, 6000), (4, 2000), (15, 530), (16, 500), (64, 125)]


def build(vocab: list[str], where: Path) -> PreTrainedTokenizerFast:
    """A LLaMA fast tokenizer (byte-fallback BPE, the LLaMA decoder chain) saved and reloaded
    the way the worker loaded it; prints the load time."""
    bpe = models.BPE(vocab={t: i for i, t in enumerate(vocab)}, merges=[], unk_token="<unk>",
                     byte_fallback=True, fuse_unk=True)
    tok = Tokenizer(bpe)
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                           normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                            unk_token="<unk>").save_pretrained(where)
    cfg = json.loads((where / "tokenizer_config.json").read_text())
    cfg["tokenizer_class"] = "LlamaTokenizerFast"
    (where / "tokenizer_config.json").write_text(json.dumps(cfg))
    start = time.perf_counter()
    loaded = AutoTokenizer.from_pretrained(where)
    print(f"AutoTokenizer.from_pretrained: {(time.perf_counter() - start) * 1e3:.1f} ms "
          f"({type(loaded).__name__})")
    return loaded


def main(data: Path) -> None:
    vocab = json.loads((data / "llama_vocab.json").read_text())
    ids = json.loads((data / "text_ids.json").read_text())
    tok = build(vocab, data / "llama_tokenizer")
    rows = []
    for n, length in SHAPES:
        batch = [ids[(k * 997) % (len(ids) - length):][:length] for k in range(n)]
        times = []
        for _ in range(15):
            start = time.perf_counter()
            for prompt in batch:
                tok.decode(prompt)
            times.append(time.perf_counter() - start)
        rows.append((n, n * length, min(times)))
        print(f"{n:3d} prompts x {length:5d} tokens: {min(times) * 1e3:7.2f} ms")
    a, b = np.linalg.lstsq(np.array([[r[0], r[1]] for r in rows], float),
                           np.array([r[2] for r in rows]), rcond=None)[0]
    print(f"fit: {a * 1e6:.1f} us per prompt + {b * 1e6:.3f} us per prompt token")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
