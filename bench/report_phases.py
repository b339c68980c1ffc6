"""Benchmark: where the paper report's time goes, per experiment and per phase, on one core.

    python bench/report_phases.py [--figures fig12a,fig19] [--top 5]

Runs every run of the report's experiments one after the other in this process (as
``parrotsim report --jobs 1`` does, into a temporary folder) with a wall-clock timer around
each phase of a run: ``build`` (the workload's apps, generated and validated), ``simulate``
(the SimPy model, from the apps to the end of the run), ``tables`` (the per-call, per-app and
per-engine tables and the summary) and ``store`` (the run's Parquet and JSON files); then
around the report's own phases: importing the CLI (in a fresh interpreter), loading the
experiment files, the summaries, and drawing the figures. Prints one row per experiment
(runs, seconds per phase, the longest run) and the ``--top`` longest runs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from parrotsim.reports import build
from parrotsim.sim.harness import backends, simulation, store

PHASES = ("build", "simulate", "tables", "store")
_spent: dict[str, float] = defaultdict(float)


def _timed(phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` adding its wall time to ``_spent[phase]``."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _spent[phase] += time.perf_counter() - start
    return wrapper


def import_seconds() -> float:
    """Wall time of importing the CLI in a fresh interpreter."""
    code = "import time; t = time.perf_counter(); import parrotsim.cli; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd=tempfile.gettempdir())
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", help="comma-separated figure ids (default: all)")
    parser.add_argument("--top", type=int, default=5)
    args = parser.parse_args()
    figures = args.figures.split(",") if args.figures else None
    rows: list[dict[str, Any]] = []
    runs: list[tuple[float, str, dict]] = []
    execute = store.execute

    def one_run(key, config, runs_dir, *rest):
        _spent.clear()
        start = time.perf_counter()
        record = execute(key, config, runs_dir, *rest)
        total = time.perf_counter() - start
        # simulate's own timer holds build and tables: take them out
        _spent["simulate"] -= _spent["build"] + _spent["tables"]
        rows.append({"experiment": Path(runs_dir).parent.name, **_spent, "total": total})
        runs.append((total, Path(runs_dir).parent.name, config))
        return record

    simulation.build_apps = _timed("build", simulation.build_apps)
    simulation.run_result = _timed("tables", simulation.run_result)
    store.simulate = _timed("simulate", store.simulate)
    store.write_run = _timed("store", store.write_run)
    backends.execute = one_run  # what the serial backend runs
    report_phases: dict[str, float] = defaultdict(float)
    build.prepare_sweep = _timed_into(report_phases, "load experiments", build.prepare_sweep)
    build._with_profile = _timed_into(report_phases, "load experiments", build._with_profile)
    build.draw = _timed_into(report_phases, "draw figures", build.draw)
    build.panel_rows = _timed_into(report_phases, "derive rows", build.panel_rows)
    build.Sweep.finish = _timed_into(report_phases, "summaries", build.Sweep.finish)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        build.build_report(Path(tmp), figures, jobs=1, progress=False)
        whole = time.perf_counter() - start
    frame = pd.DataFrame(rows).fillna(0.0)
    table = frame.groupby("experiment").agg(
        runs=("total", "size"), **{p: (p, "sum") for p in PHASES}, total=("total", "sum"),
        longest=("total", "max"))
    table.loc["all"] = [table["runs"].sum(), *(table[p].sum() for p in PHASES),
                        table["total"].sum(), table["longest"].max()]
    pd.set_option("display.width", 160)
    print("runs, one after the other in one process (s):")
    print(table.sort_values("total", ascending=False).round(2).to_string())
    print(f"\nreport phases outside the runs (s): import of the CLI {import_seconds():.2f}, "
          + ", ".join(f"{k} {v:.2f}" for k, v in report_phases.items())
          + f"; whole build_report {whole:.1f}")
    print(f"\nthe {args.top} longest runs:")
    for total, exp, config in sorted(runs, key=lambda r: r[0], reverse=True)[:args.top]:
        print(f"  {total:6.2f} s  {exp}: engine {config['cluster']['engine']['policy']}, "
              f"workload {config['workload']}")


def _timed_into(into: dict[str, float], phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            into[phase] += time.perf_counter() - start
    return wrapper


if __name__ == "__main__":
    main()
