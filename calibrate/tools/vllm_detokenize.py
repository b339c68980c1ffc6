"""Host time of vLLM 0.1.4's per-step detokenization, per sequence, as the output grows.

After every iteration, vLLM 0.1.4's ``LLMEngine._decode_sequences`` called
``detokenize_incrementally(tokenizer, seq.output_tokens, last_token_id)`` for every running
sequence, on the engine's thread, before the next iteration. That function copies the list of
output tokens so far and converts the *whole* list back to text: its cost grows with the number
of tokens the sequence has generated, so a sequence of L output tokens pays O(L^2) in total.
This script times that very function, imported from the vLLM 0.1.4 wheel (not a copy), with
a LLaMA fast tokenizer under two tokenizer stacks that bracket the artifact's runs: the
``requirements.txt`` pin of ParrotServe at the paper's time (transformers 4.32.0 / tokenizers
0.13.3) and the stack of the artifact evaluation (transformers 4.35.2 / tokenizers 0.15.0,
the one ``vllm_request_tracking.py`` uses). It fits ``seconds per call = a + b * L``.

Run (outside the project's environment; none of these packages is a project dependency)::

    npm install llama-tokenizer-js@1.2.2
    node calibrate/tools/llama_vocab.mjs SOME_ENGLISH_TEXT.txt /tmp/tok
    curl -sO https://files.pythonhosted.org/packages/51/25/169816837b6bd3a0657e55ac35196add9376f6c8f059e4d9bf080ef8283d/vllm-0.1.4-cp310-cp310-manylinux1_x86_64.whl
    unzip -q vllm-0.1.4-*.whl 'vllm/transformers_utils/*' -d /tmp/vllm014
    python3 -m venv /tmp/tv432 && /tmp/tv432/bin/pip install transformers==4.32.0 tokenizers==0.13.3 numpy
    /tmp/tv432/bin/python calibrate/tools/vllm_detokenize.py /tmp/tok /tmp/vllm014 OUT.csv

It prints, per output length L, the minimum over repetitions of one call (the minimum rejects
interference from other processes) and the fit; OUT.csv gets one row per L.
"""

from __future__ import annotations

import csv
import importlib.util
import logging
import sys
import time
import types
from pathlib import Path

import numpy as np
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vllm_request_tracking import build  # noqa: E402  (a sibling script, not a package)

LENGTHS = (1, 16, 64, 128, 256, 512, 1024, 2048)
REPEATS = 200


def load_detokenizer(wheel_dir: Path):
    """``detokenize_incrementally`` from the unpacked vLLM 0.1.4 wheel; its one import of the
    rest of vLLM (``vllm.logger``) is stood in for by the standard logger."""
    for name in ("vllm", "vllm.transformers_utils"):
        sys.modules.setdefault(name, types.ModuleType(name))
    logger = types.ModuleType("vllm.logger")
    logger.init_logger = logging.getLogger
    sys.modules["vllm.logger"] = logger
    path = wheel_dir / "vllm" / "transformers_utils" / "tokenizer.py"
    spec = importlib.util.spec_from_file_location("vllm.transformers_utils.tokenizer", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.detokenize_incrementally


def time_lengths(tok, detok, ids: list[int]) -> list[tuple[int, float]]:
    """Seconds of one ``detokenize_incrementally`` call once ``L - 1`` tokens were generated,
    built the way the engine builds ``seq.output_tokens`` (token strings, one per step)."""
    rows = []
    for length in LENGTHS:
        out = ids[1000:1000 + length]
        prev: list[str] = []
        for tid in out[:-1]:
            new, _ = detok(tok, prev, tid, skip_special_tokens=True)
            if new is not None:
                prev.append(new)
        best = float("inf")
        for _ in range(REPEATS):
            start = time.perf_counter()
            detok(tok, prev, out[-1], skip_special_tokens=True)
            best = min(best, time.perf_counter() - start)
        rows.append((length, best))
        print(f"L = {length:5d} output tokens: {best * 1e6:9.1f} us per call")
    return rows


def main(data: Path, wheel_dir: Path, out: Path) -> None:
    import json

    vocab = json.loads((data / "llama_vocab.json").read_text())
    ids = json.loads((data / "text_ids.json").read_text())
    tok = build(vocab, data / "llama_tokenizer")
    path = "slow per-token loop" if getattr(tok, "added_tokens_encoder", {}) else "fast path"
    print(f"transformers {transformers.__version__}: {type(tok).__name__}, "
          f"added_tokens_encoder {'non-empty' if path != 'fast path' else 'empty'} -> {path}")
    rows = time_lengths(tok, load_detokenizer(wheel_dir), ids)
    lengths = np.array([r[0] for r in rows], float)
    seconds = np.array([r[1] for r in rows])
    a, b = np.linalg.lstsq(np.stack([np.ones_like(lengths), lengths], 1), seconds,
                           rcond=None)[0]
    print(f"fit: {a * 1e6:.2f} us per call + {b * 1e6:.4f} us per output token so far")
    with out.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["transformers", "output_tokens", "seconds_per_call"])
        w.writerows([transformers.__version__, n, f"{s:.9f}"] for n, s in rows)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
