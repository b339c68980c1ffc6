"""The artifact's A6000 results (calibrate/measurements/artifact_a6000) line up with the shipped
experiments that bench/a6000_artifact.py compares them with: every Fig 17 point is a swept rate of
an existing variant, every Fig 19 system a variant, each campaign 5 runs per system."""

from pathlib import Path

import pandas as pd

from parrotsim.api import load_experiment

DATA = Path(__file__).resolve().parents[2] / "calibrate" / "measurements" / "artifact_a6000"


def test_fig17_points_are_swept():
    runs = {(r.labels["variant"], float(r.labels["workload.rate"]))
            for r in load_experiment("paper/fig17").runs}
    real = pd.read_csv(DATA / "fig17_normalized_latency.csv")
    points = {(r.series, float(r.rate)) for r in real.itertuples()}
    assert len(points) == len(real) == 16
    assert points <= runs


def test_fig19_systems_and_runs():
    variants = {r.labels["variant"] for r in load_experiment("paper/fig19").runs}
    real = pd.read_csv(DATA / "fig19_runs.csv")
    assert set(real.system) == variants
    counts = real.groupby(["campaign", "system"]).size()
    assert len(counts) == 6 and (counts == 5).all()
    assert (real[["chat_normalized_latency_ms", "chat_decode_time_ms", "mr_jct_s"]] > 0).all().all()
