"""The artifact's printed results (calibrate/measurements/artifact_runs) line up with the shipped
experiments that bench/artifact_runs.py compares them with: every Fig 17 point is a swept rate of
an existing variant, every Fig 15 / Fig 18 point a swept batch size / file count, every Fig 19 system a variant, each
campaign 5 runs per system."""

from pathlib import Path

import pandas as pd

from parrotsim.api import load_experiment

DATA = Path(__file__).resolve().parents[2] / "calibrate" / "measurements" / "artifact_runs"


def test_fig17_points_are_swept():
    runs = {(r.labels["variant"], float(r.labels["workload.rate"]))
            for r in load_experiment("paper/fig17").runs}
    real = pd.read_csv(DATA / "fig17_normalized_latency.csv")
    points = {(r.series, float(r.rate)) for r in real.itertuples()}
    assert len(points) == len(real) == 16
    assert points <= runs


def test_fig15_points_are_swept():
    runs = {(r.labels["variant"], int(r.labels["cluster.scheduler.slots"]))
            for r in load_experiment("paper/fig15").runs}
    real = pd.read_csv(DATA / "fig15_latency.csv")
    points = {(r.system, int(r.batch)) for r in real.itertuples()}
    assert len(points) == len(real) == 10
    assert points <= runs
    assert (real["mean_latency_s"] < real["total_e2e_s"]).all()


def test_fig18_points_are_swept():
    runs = {(r.labels["variant"], int(r.labels["workload.files"]))
            for r in load_experiment("paper/fig18").runs}
    real = pd.read_csv(DATA / "fig18_jct.csv")
    points = {(r.system, int(r.files)) for r in real.itertuples()}
    assert len(points) == len(real) == 15
    assert points <= runs


def test_fig19_systems_and_runs():
    variants = {r.labels["variant"] for r in load_experiment("paper/fig19").runs}
    real = pd.read_csv(DATA / "fig19_runs.csv")
    assert set(real.system) == variants
    counts = real.groupby(["campaign", "system"]).size()
    assert len(counts) == 6 and (counts == 5).all()
    assert (real[["chat_normalized_latency_ms", "chat_decode_time_ms", "mr_jct_s"]] > 0).all().all()


def test_fig14_points_are_swept():
    runs = {(r.labels["variant"], int(r.labels["workload.output_len"]),
             int(r.labels["workload.chunk_size"])) for r in load_experiment("paper/fig14").runs}
    real = pd.read_csv(DATA / "fig14_output_len.csv")
    assert len(real) == 80 and set(real.doc) == set(range(10))
    assert {(r.system, int(r.output_len), int(r.chunk_size)) for r in real.itertuples()} <= runs
