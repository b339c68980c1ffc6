"""The launch benchmark's runtime terms, on a hand-made timing table."""

import pandas as pd
import pytest

from parrotsim.calibrate.replay.launch_bench import terms


def test_terms_are_differences_within_the_run():
    rows = [("fill", 0.010), ("fill+paged", 0.013)]
    rows += [(f"fill+{k} groups", 0.013 + 0.0005 * k) for k in range(1, 5)]
    table = pd.DataFrame([{"case": c, "launch_s": t + d, "gpu_s": 0.0}
                          for c, t in rows for d in (-1e-4, 0.0, 5e-4)])  # medians: t
    got = terms(table)
    assert got["decode_launch_s"] == pytest.approx(0.003)
    assert got["group_launch_s"] == pytest.approx(0.0005)
