"""The vectorized forward-batch builder gives build_batch's tensors (CPU torch)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from parrotsim.calibrate.replay.chunks import Chunk  # noqa: E402
from parrotsim.calibrate.replay.forward_batch import to_forward_batch  # noqa: E402
from parrotsim.kernels.llama_batch import SeqChunk, build_batch  # noqa: E402

FIELDS = ["input_ids", "positions", "slot_mapping", "logits_index", "prefill_cu_q",
          "prefill_ctx_lens", "prefill_block_tables", "decode_block_tables", "decode_seq_lens"]


def _chunks(rng, n, decode):
    out = []
    for _ in range(n):
        ctx = int(rng.integers(0, 60)) if decode or rng.random() < 0.5 else 0
        new = 1 if decode else int(rng.integers(1, 50))
        pages = rng.permutation(200)[:-(-(ctx + new) // 16)].tolist()
        out.append(Chunk(rng.integers(0, 1000, new), ctx, pages))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_same_tensors_as_build_batch(seed):
    rng = np.random.default_rng(seed)
    pre, dec = _chunks(rng, seed % 3, False), _chunks(rng, 1 + seed, True)
    width = max(len(c.table) for c in dec) + 2
    ours = to_forward_batch(pre, dec, "cpu", width)
    ref = build_batch([SeqChunk(c.token_ids.tolist(), c.ctx_len, c.table) for c in pre],
                      [SeqChunk(c.token_ids.tolist(), c.ctx_len, c.table) for c in dec],
                      "cpu", table_width=width)
    for f in FIELDS:
        a, b = getattr(ours, f), getattr(ref, f)
        assert (a is None) == (b is None), f
        if a is not None:
            assert a.dtype == b.dtype and torch.equal(a, b), f
    for f in ("num_prefill_tokens", "prefill_max_q", "prefill_q_lens", "prefill_no_context",
              "num_decode"):
        assert getattr(ours, f) == getattr(ref, f), f


def test_padding_rows_use_the_scratch_page_only():
    rng = np.random.default_rng(9)
    dec = _chunks(rng, 3, True)
    fb = to_forward_batch([], dec, "cpu", 8, pad_to=6, scratch=999)
    assert fb.num_decode == 6
    assert fb.decode_block_tables[3:, 0].tolist() == [999] * 3
    assert fb.decode_seq_lens[3:].tolist() == [1, 1, 1]
    assert fb.slot_mapping[3:].tolist() == [999 * 16] * 3
    assert fb.logits_index.tolist() == list(range(6))


def test_padding_rows_fork_the_shared_prefix_and_write_to_scratch():
    shared = [7, 8, 9]  # a 3-page prefix every row forks
    dec = [Chunk(np.array([5]), 48 + k, shared + [20 + k]) for k in range(3)]
    fb = to_forward_batch([], dec, "cpu", 6, pad_to=5, scratch=999, shared_pages=3)
    assert fb.num_shared_pages == 3
    assert fb.decode_block_tables[:, :3].tolist() == [shared] * 5
    assert fb.decode_block_tables[3:, 3].tolist() == [999, 999]
    assert fb.decode_seq_lens.tolist() == [49, 50, 51, 49, 49]  # pads: prefix + one token
    assert fb.slot_mapping[3:].tolist() == [999 * 16] * 2
