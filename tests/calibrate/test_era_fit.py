"""The era-kernel constants are what calibrate/era_fit.py fits to the committed H200 data."""

from pathlib import Path

import pandas as pd
import pytest

from parrotsim.calibrate import era_fit
from parrotsim.sim.model import era_kernels as era

# the measurements are repository data, not package data: read them from the checkout (the
# packaging tests run this suite against a non-editable install)
DATA = Path(__file__).resolve().parents[2] / "kernels" / "results" / "session5"


def test_constants_are_the_fit_of_the_committed_measurements():
    paged = pd.read_csv(DATA / "era_paged.csv")
    parrot = pd.read_csv(DATA / "parrot2023.csv")
    programs, factor, err = era_fit.fit_no_split(paged)
    assert era_fit.programs_per_tbs(programs) == era.NO_SPLIT_PROGRAMS_PER_TBS
    assert factor == era.NO_SPLIT_BANDWIDTH_FACTOR
    assert float(abs(err).max()) < 0.4  # worst point of the fit (+39 %)
    launch, factors, _ = era_fit.fit_parrot_prefix(parrot, paged)
    assert launch == pytest.approx(era.PARROT_REDUCE_LAUNCH_S, rel=0.05)
    assert [(b, round(f, 2)) for b, f in factors.items()] == list(era.PARROT_PREFIX_FACTOR)
    composed = era_fit.composed_errors(parrot)
    assert composed["error"].abs().median() < 0.05
