"""calibrate/forward_breakdown.py off the GPU: its --batch specs, the KV pages they need, and
a bad spec stopping before any GPU work (the timing itself needs CUDA)."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from parrotsim.calibrate import forward_breakdown as fb  # noqa: E402
from parrotsim.calibrate.sections_model import _forward_batch  # noqa: E402
from parrotsim.kernels.llama import LlamaConfig, LlamaModel  # noqa: E402


def test_batch_specs():
    assert fb.parse_batch("128@0;256@0+64x2048") == ("128@0;256@0", 64, 2048)
    assert fb.parse_batch("+64x2048") == ("", 64, 2048)
    assert fb.parse_batch(" 512@1024 ") == ("512@1024", 0, 0)
    for bad in ("", "abc", "128@0+64", "0@0", "128@0+64x0", "+-1x16"):
        with pytest.raises(ValueError, match="batch"):
            fb.parse_batch(bad)


def test_pages_cover_the_largest_batch():
    """A model with the pages :func:`pages_needed` counts, less its 64 spare, builds every batch
    (the builder raises when a batch's pages run past the cache)."""
    batches = [fb.parse_batch("24@0;40@8+3x50"), fb.parse_batch("+6x90")]
    model = LlamaModel(LlamaConfig.preset("tiny"), num_pages=fb.pages_needed(batches) - 64,
                       device="cpu", prefill_backend="sdpa")
    for pre, dec, ctx in batches:
        _forward_batch(model, fb.point(pre, dec, ctx))
    assert fb.pages_needed(fb.BATCHES) > 64 * 2048 // 16  # the default miss: 64 x 2,048 tokens


def test_a_bad_batch_exits_2_before_any_gpu_work(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        fb.main(["--out", str(tmp_path / "o"), "--batch", "128@0+64"])
    assert exit_info.value.code == 2
    assert "expected NEW@CTX" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
