"""Build the report: run each figure's experiment through the results store, derive the tidy
rows, draw the figures and write ``figures.csv``, ``claims.csv``, ``ground_truth.csv`` (with
its plot: the runs set against the artifact's printed ones) and ``index.html``.

Results are cached in ``OUT/results/<experiment>/`` (a re-run only simulates what is missing).
``profile`` swaps the hardware of every run: a profile family such as ``h200`` turns
``a100-80gb_llama-13b`` into ``h200_llama-13b`` (the model is kept), and runs today's kernels
where the paper figures run the artifact's (:data:`TODAYS_KERNELS`: Parrot's 2023 kernel becomes
the project's shared-prefix kernel, which serves any number of prefixes per batch, and vLLM
0.1.4's no-split paged kernel the split-KV one): what Parrot buys on that GPU now.
"""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from parrotsim.reports import claims as claims_mod
from parrotsim.reports import ground_truth
from parrotsim.reports.derive import TIDY_COLUMNS, panel_rows, panel_runs
from parrotsim.reports.ground_truth_plot import draw_parity
from parrotsim.reports.html import page
from parrotsim.reports.plot import draw
from parrotsim.reports.rerun_claims import rerun_claims
from parrotsim.reports.spec import FIGURES, PANELS, Panel
from parrotsim.sim.harness.backends import default_jobs, make_backend
from parrotsim.sim.harness.experiment import experiment_from_data, load_experiment
from parrotsim.sim.harness.runner import Sweep, check_sweep_memory, prepare_sweep, run_sweeps
from parrotsim.sim.harness.shipped import shipped_experiments
from parrotsim.sim.harness.store import write_atomic
from parrotsim.sim.model.profile import PROFILE_DIR_ENV, ProfileError, shipped_profiles

#: dotted override -> {the artifact's kernel: today's}, applied to every variant by ``--profile``
TODAYS_KERNELS = {"cluster.kernel": {"parrot_2023": "shared_prefix"},
                  "cluster.paged_kernel": {"vllm_0_1_4": "split_kv"}}


def todays_kernels(variants: dict) -> dict:
    """``variants`` (an experiment's, dotted keys) with the artifact's kernels replaced by
    today's (:data:`TODAYS_KERNELS`)."""
    return {name: {key: TODAYS_KERNELS.get(key, {}).get(value, value) if isinstance(value, str)
                   else value for key, value in (overrides or {}).items()}
            for name, overrides in variants.items()}


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
        families = sorted(n.removesuffix(f"_{model}") for n in shipped_profiles()
                          if n.endswith(f"_{model}"))
        raise ProfileError(f"--profile {family}: no shipped profile {name!r} for {path.name} "
                           f"(families with {model}: {', '.join(families)})")
    cluster["profile"] = name
    data["variants"] = todays_kernels(data.get("variants") or {})
    data["name"] = f"{data['name']}_{family}"
    return experiment_from_data(data, str(path))


def build_report(out: Path, figures: list[str] | None = None, profile: str | None = None,
                 jobs: int | None = None, progress: bool = True) -> pd.DataFrame:
    """Regenerate ``figures`` (default: all) into ``out``; returns the claims table.

    The runs of every experiment go to one pool (:func:`~parrotsim.sim.harness.runner.run_sweeps`:
    heaviest experiment first, longest runs first); a figure is drawn, in a thread of this
    process, as soon as the experiments of its panels are done, while the pool runs the
    others."""
    wanted = figures or FIGURES
    unknown = sorted(set(wanted) - set(FIGURES))
    if unknown:
        raise ValueError(f"unknown figure(s) {', '.join(unknown)}; known: {', '.join(FIGURES)}")
    start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    executor = make_backend("local", jobs)  # its fork server starts importing now
    try:
        panels = [p for p in PANELS if p.figure in wanted]
        names = list(dict.fromkeys(p.experiment for p in panels))
        sweeps = []
        for name in names:
            exp = _with_profile(shipped_experiments()[f"paper/{name}"], profile)
            if progress:
                print(f"[report] {exp.name}: {exp.spec.description}", file=sys.stderr,
                      flush=True)
            sweeps.append(prepare_sweep(exp, out / "results" / exp.name))
        check_sweep_memory(sweeps, 1 if jobs == 1 else (jobs or default_jobs()), None)
        figures_of = _FigureDrawer(wanted, panels, names, sweeps, out)
        # derive and draw in a thread: the loop handing runs to the pool never waits on a plot
        with ThreadPoolExecutor(1) as drawer:
            drawn = []
            run_sweeps(sweeps, executor, progress, on_done=lambda i, frame: drawn.append(
                drawer.submit(figures_of.experiment_done, i, frame)))
            for future in drawn:
                future.result()
    finally:
        executor.close()
    tidy = pd.DataFrame([row for i in range(len(panels)) for row in figures_of.rows[i]],
                        columns=TIDY_COLUMNS)
    per_run = [row for i in range(len(panels)) for row in figures_of.runs[i]]
    truth = check_ground_truth(figures_of.summaries, profile, out)
    claims = claims_mod.evaluate(tidy, pd.DataFrame(per_run), rerun_claims(truth))
    claims = claims[claims["figure"].isin(wanted)]
    write_atomic(out / "figures.csv", tidy.to_csv(index=False))
    write_atomic(out / "claims.csv", claims.to_csv(index=False))
    elapsed = time.perf_counter() - start
    setups = [(f, next(p.setup for p in panels if p.figure == f and p.setup)) for f in wanted]
    write_atomic(out / "index.html", page(setups, claims, profile_note(profile),
                                          f"Built in {elapsed:.0f} s.", truth))
    return claims


def check_ground_truth(summaries: dict[str, pd.DataFrame], profile: str | None,
                       out: Path) -> pd.DataFrame | None:
    """The simulated runs against the artifact's printed ones
    (:mod:`parrotsim.reports.ground_truth`): writes ``ground_truth.csv`` and
    ``ground_truth.png`` and returns the table; ``None`` under another ``profile`` family
    (those runs were on the paper's GPUs) or when none of the figures has printed runs, and
    then no such files are left from an earlier build in ``out``."""
    table = None if profile else ground_truth.compare(summaries)
    if table is None or table.empty:
        for name in ("ground_truth.csv", "ground_truth.png"):
            (out / name).unlink(missing_ok=True)
        return None
    write_atomic(out / "ground_truth.csv", table.to_csv(index=False))
    draw_parity(table, out / "ground_truth.png")
    return table


def profile_note(profile: str | None) -> str:
    """The report's line on which hardware profiles ran it: the ``profile`` family, else the
    shipped paper profiles, naming those a ``PARROTSIM_PROFILE_DIR`` folder replaced."""
    if profile:
        return f"Hardware profiles: {profile} family."
    note = ("Hardware profiles: the shipped A100-80GB / RTX A6000 profiles, projected from "
            "curves measured on an H200 and fitted to the paper's calibration facts "
            "(calibrate/profiles).")
    folder = os.environ.get(PROFILE_DIR_ENV)
    if folder:
        names = sorted(p.stem for p in Path(folder).glob("*.yaml"))
        note += (f" {PROFILE_DIR_ENV}={folder} replaced those of its names: "
                 f"{', '.join(names) or 'none'}.")
    return note


class _FigureDrawer:
    """Derives each panel's tidy rows when its experiment is done (``rows``, ``runs``: by the
    panel's index), and draws each figure when the experiments of all its panels are."""

    def __init__(self, wanted: list[str], panels: list[Panel], names: list[str],
                 sweeps: list[Sweep], out: Path) -> None:
        self.wanted, self.panels, self.names, self.sweeps, self.out = (
            wanted, panels, names, sweeps, out)
        self.rows: dict[int, list[dict]] = {}
        self.runs: dict[int, list[dict]] = {}
        self.summaries: dict[str, pd.DataFrame] = {}  # experiment name (paper/ stripped) -> runs

    def experiment_done(self, index: int, summary: pd.DataFrame) -> None:
        name, results = self.names[index], self.sweeps[index].out
        self.summaries[name] = summary
        for i, p in enumerate(self.panels):
            if p.experiment == name:
                self.rows[i] = panel_rows(p, summary, results)
                self.runs[i] = panel_runs(p, summary)
        for fig in self.wanted:
            mine = [i for i, p in enumerate(self.panels) if p.figure == fig]
            if (any(self.panels[i].experiment == name for i in mine)
                    and all(i in self.rows for i in mine)):
                rows = [row for i in mine for row in self.rows[i]]
                draw(fig, [self.panels[i] for i in mine],
                     pd.DataFrame(rows, columns=TIDY_COLUMNS), self.out)
