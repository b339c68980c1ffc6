"""Every shipped experiment file loads, expands, and its runs survive the store's round trip."""

from pathlib import Path

import pytest

from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.experiment import expand, load_experiment

ROOT = Path(__file__).resolve().parents[2] / "experiments"
FILES = sorted(ROOT.glob("*.yaml")) + sorted((ROOT / "paper").glob("*.yaml"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_experiment_expands_and_configs_round_trip(path):
    runs = expand(load_experiment(path))
    assert runs
    for run in runs:
        again = RunConfig.model_validate(run.config.model_dump(mode="json"))
        assert again == run.config
