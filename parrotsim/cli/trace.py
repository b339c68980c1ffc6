"""``parrotsim trace RUN_DIR``: a stored run's timeline as a Chrome/Perfetto trace (JSON).

Re-simulates the run from ``RUN_DIR/config.json`` (same config and seed: the same run) with the
engines' iterations recorded, checks that the per-call table equals the stored
``calls.parquet`` and writes the trace events of ``parrotsim.sim.harness.timeline`` (default
``RUN_DIR/trace.json``); open it in https://ui.perfetto.dev or chrome://tracing.

Exit status: 0 written; 2 RUN_DIR is missing or not a complete run, or the re-simulated calls
differ from the stored ones (the code or the profile changed since the run): one line
``PATH: message`` on stderr, nothing written.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

import pandas as pd
from pydantic import ValidationError

from parrotsim import __version__
from parrotsim.sim.harness import timeline
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.simulation import build_apps, simulate
from parrotsim.sim.harness.store import write_atomic
from parrotsim.sim.model.profile import profile_hash
from parrotsim.workloads.app import call_dependencies


class TraceError(Exception):
    """A problem with RUN_DIR: ``path`` and ``message`` make the one line printed."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{path}: {message}")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("trace", help="export one stored run's timeline for ui.perfetto.dev",
                              description="Export one stored run's timeline as Chrome/Perfetto "
                                          "trace events (JSON) for ui.perfetto.dev.")
    p.add_argument("run_dir", metavar="RUN_DIR", type=Path, help="a run folder, OUT/runs/<hash>")
    p.add_argument("--out", metavar="FILE", type=Path, help="default: RUN_DIR/trace.json")
    p.set_defaults(main=main)


def main(args: argparse.Namespace) -> int:
    try:
        path, text, counts = build_trace(args.run_dir, args.out)
    except TraceError as exc:
        print(exc, file=sys.stderr)
        return 2
    write_atomic(path, text)
    print(f"wrote {path} ({len(text.encode())} bytes, {counts}); open it in "
          "https://ui.perfetto.dev")
    return 0


def build_trace(run_dir: Path, out: Path | None = None) -> tuple[Path, str, str]:
    """Re-simulate ``run_dir``, check it against the stored calls and return (path to write,
    trace JSON, event counts); raises :class:`TraceError`."""

    cfg, meta = _load_config(run_dir)
    stored = _read_calls(run_dir)
    recorder = timeline.IterationRecorder()
    try:
        apps = build_apps(cfg)
        result = simulate(cfg, apps=apps, validate=False, recorder=recorder)
    except Exception as exc:  # a profile gone, a workload that no longer builds, ...
        raise TraceError(run_dir / "config.json", f"cannot re-simulate: {exc}") from None
    fresh = pd.read_parquet(io.BytesIO(result.calls.to_parquet(index=False)))
    if not fresh.equals(stored):
        raise TraceError(run_dir / "calls.parquet", "the re-simulated calls differ from the "
                         f"stored ones ({_first_difference(fresh, stored)}): "
                         f"{_what_changed(cfg, meta)} since this run; re-run it with "
                         "'parrotsim run --force' to trace what the code does now")
    deps = {(a.app_id, c.name): call_dependencies(a, c) for a in apps for c in a.calls}
    events = (timeline.engine_events(recorder.iterations, cfg.cluster.engines)
              + timeline.app_events(result.calls, deps, cfg.cluster.engines + 1))
    other = {"run": run_dir.resolve().name, "version": __version__, "units": "ts, dur: us",
             "config": cfg.model_dump(mode="json")}
    kinds = [e.get("cat") for e in events]
    counts = (f"{len(events)} events: {kinds.count('iteration')} engine iterations/stretches, "
              f"{kinds.count('call')} calls, {kinds.count('phase')} call phases")
    return out or run_dir / "trace.json", timeline.trace_json(events, other), counts


def _load_config(run_dir: Path):
    if not run_dir.is_dir():
        raise TraceError(run_dir, "no such run folder (give OUT/runs/<hash> of 'parrotsim run')")
    if (run_dir / "runs").is_dir():
        raise TraceError(run_dir, "an experiment's results: give one of its runs, "
                                  f"{run_dir / 'runs'}/<hash>")
    path = run_dir / "config.json"
    try:
        meta = json.loads(path.read_text())
        return RunConfig.model_validate(meta["config"]), meta
    except FileNotFoundError:
        raise TraceError(path, "missing: not a run folder of 'parrotsim run'") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise TraceError(path, f"invalid run config: {where}: {err['msg']}") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TraceError(path, f"unreadable run record: {type(exc).__name__}: {exc}") from None


def _read_calls(run_dir: Path) -> pd.DataFrame:
    path = run_dir / "calls.parquet"
    if not path.is_file():
        failed = (run_dir / "error.txt").is_file()
        raise TraceError(path, "missing: " + ("the run failed (see error.txt)" if failed
                                              else "the run is not complete"))
    try:
        return pd.read_parquet(path)
    except Exception as exc:
        raise TraceError(path, f"unreadable: {type(exc).__name__}: {exc}") from None


def _what_changed(cfg, meta: dict) -> str:
    changed = []
    if meta.get("version") != __version__:
        changed.append(f"the simulator ({meta.get('version')} -> {__version__})")
    if meta.get("profile_hash") != profile_hash(cfg.cluster.profile):
        changed.append(f"the profile {cfg.cluster.profile}")
    return " and ".join(changed) + " changed" if changed else "the code changed"


def _first_difference(fresh: pd.DataFrame, stored: pd.DataFrame) -> str:
    if fresh.shape != stored.shape or list(fresh.columns) != list(stored.columns):
        return f"now {fresh.shape[0]} calls x {fresh.shape[1]} columns, stored {stored.shape}"
    for col in fresh.columns:
        diff = fresh[col].ne(stored[col])
        if diff.any():
            i = int(diff.to_numpy().argmax())
            return (f"{int(diff.sum())} of {len(fresh)} differ in {col}, first "
                    f"{fresh['app_id'][i]}/{fresh['call'][i]}: stored {stored[col][i]}, "
                    f"now {fresh[col][i]}")
    return "dtypes differ"
