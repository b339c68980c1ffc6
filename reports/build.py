"""Build the report: run each figure's experiment through the results store, derive the tidy
rows, draw the figures and write ``figures.csv``, ``claims.csv`` and ``index.html``.

Results are cached in ``OUT/results/<experiment>/`` (a re-run only simulates what is missing).
``profile`` swaps the hardware of every run: a profile family such as ``h200`` turns
``a100-80gb_llama-13b`` into ``h200_llama-13b`` (the model is kept).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pandas as pd

from parrotsim.reports import claims as claims_mod
from parrotsim.reports.derive import TIDY_COLUMNS, panel_rows, panel_runs
from parrotsim.reports.html import page
from parrotsim.reports.plot import draw
from parrotsim.reports.spec import FIGURES, PANELS
from parrotsim.sim.harness.experiment import experiment_from_data, load_experiment
from parrotsim.sim.harness.runner import run_experiment
from parrotsim.sim.harness.shipped import shipped_experiments
from parrotsim.sim.harness.store import write_atomic
from parrotsim.sim.model.profile import ProfileError, shipped_profiles


def _with_profile(path: Path, family: str | None):
    exp = load_experiment(path)
    if family is None:
        return exp
    from ruamel.yaml import YAML

    data = YAML(typ="safe", pure=True).load(path.read_text())
    cluster = data.setdefault("run", {}).setdefault("cluster", {})
    current = cluster.get("profile", "a100-80gb_llama-13b")
    model = current.split("_", 1)[1]
    name = f"{family}_{model}"
    if name not in shipped_profiles():
        raise ProfileError(f"--profile {family}: no shipped profile {name!r} for {path.name}")
    cluster["profile"] = name
    data["name"] = f"{data['name']}_{family}"
    return experiment_from_data(data, str(path))


def build_report(out: Path, figures: list[str] | None = None, profile: str | None = None,
                 jobs: int | None = None, progress: bool = True) -> pd.DataFrame:
    """Regenerate ``figures`` (default: all) into ``out``; returns the claims table."""
    wanted = figures or FIGURES
    unknown = sorted(set(wanted) - set(FIGURES))
    if unknown:
        raise ValueError(f"unknown figure(s) {', '.join(unknown)}; known: {', '.join(FIGURES)}")
    start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    panels = [p for p in PANELS if p.figure in wanted]
    summaries: dict[str, tuple[pd.DataFrame, Path]] = {}
    for name in dict.fromkeys(p.experiment for p in panels):
        exp = _with_profile(shipped_experiments()[f"paper/{name}"], profile)
        results = out / "results" / exp.name
        if progress:
            print(f"[report] {exp.name}: {exp.spec.description}", file=sys.stderr, flush=True)
        summary = run_experiment(exp, results, jobs=jobs, progress=progress)
        summaries[name] = (summary, results)
    rows, per_run = [], []
    for p in panels:
        summary, results = summaries[p.experiment]
        rows += panel_rows(p, summary, results)
        per_run += panel_runs(p, summary)
    tidy = pd.DataFrame(rows, columns=TIDY_COLUMNS)
    for fig in wanted:
        draw(fig, [p for p in panels if p.figure == fig], tidy, out)
    claims = claims_mod.evaluate(tidy, pd.DataFrame(per_run))
    claims = claims[claims["figure"].isin(wanted)]
    write_atomic(out / "figures.csv", tidy.to_csv(index=False))
    write_atomic(out / "claims.csv", claims.to_csv(index=False))
    elapsed = time.perf_counter() - start
    setups = [(f, next(p.setup for p in panels if p.figure == f and p.setup)) for f in wanted]
    note = (f"Hardware profiles: {profile} family." if profile else
            "Hardware profiles: the shipped A100-80GB / RTX A6000 profiles, projected from "
            "curves measured on an H200 and fitted to the paper's calibration facts "
            "(calibrate/profiles).")
    write_atomic(out / "index.html", page(setups, claims, note, f"Built in {elapsed:.0f} s."))
    return claims
