"""calibrate/forward_breakdown.py off the GPU: its --batch specs, the KV pages they need, and
a bad spec stopping before any GPU work (the timing itself needs CUDA)."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from parrotsim.calibrate import forward_breakdown as fb  # noqa: E402
from parrotsim.calibrate.grids import forward_pages  # noqa: E402
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
    """A model with the pages :func:`grids.forward_pages` counts (the calibration's count too),
    less its 64 spare, builds every batch (the builder raises when a batch's pages run past the
    cache)."""
    points = [fb.point(*fb.parse_batch(b)) for b in ("24@0;40@8+3x50", "+6x90")]
    model = LlamaModel(LlamaConfig.preset("tiny"), num_pages=forward_pages(points) - 64,
                       device="cpu", prefill_backend="sdpa")
    for p in points:
        _forward_batch(model, p)
    default = forward_pages([fb.point(*b) for b in fb.BATCHES])
    assert default > 64 * 2048 // 16  # the default miss: 64 decodes of 2,048 tokens


def test_a_bad_batch_exits_2_before_any_gpu_work(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        fb.main(["--out", str(tmp_path / "o"), "--batch", "128@0+64"])
    assert exit_info.value.code == 2
    assert "expected NEW@CTX" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
