"""calibrate.paged_shared on a session-9-style benchmark (no shared-prefix kernel column): the
grid comes from the named column, and the timing check compares the benchmark's paged kernel
over private pages with the raw calibration's paged grid."""

import pandas as pd
import pytest

from parrotsim.calibrate import grids
from parrotsim.calibrate.paged_shared import paged_shared_grid
from tests.calibrate.synth import paged_layer_us, paged_shared_layer_us, write_raw


def _bench(slower: float) -> pd.DataFrame:
    rows = [{"model": "llama-7b", "batch": p["batch"], "prefix": p["prefix"],
             "suffix": p["suffix"],
             "split_shared_us": paged_shared_layer_us(p["batch"], p["prefix"], p["suffix"]),
             "split_private_us": slower * paged_layer_us(
                 p["batch"], p["batch"] * (p["prefix"] + p["suffix"]))}
            for p in grids.shared_grid(False)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("slower", [1.0, 1.25])
def test_column_and_private_timing_check(tmp_path, slower):
    raw = write_raw(tmp_path / "raw")
    grid, rms, check = paged_shared_grid(_bench(slower), raw, "llama-7b",
                                         column="split_shared_us")
    assert check == pytest.approx(slower, rel=0.03)  # a benchmark timed 25 % slow shows
    assert rms < 0.05
    assert grid.x[0] == 0.0 and all(s == 0.0 for s in grid.seconds[0])
