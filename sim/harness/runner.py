"""Run an experiment: skip cached runs, execute the rest on a backend, write the summary.

``OUT/summary.csv`` and ``OUT/summary.parquet`` hold one row per expanded run (in expansion
order): ``run_hash``, ``status`` (``ok`` or ``failed``), the labels (``variant``, one column per
sweep axis named by its dotted path, ``seed``), the metrics of ``RunResult.summary``, ``error``
(a failed run's whole exception message, its lines joined by `` | ``; the traceback is in
``runs/<hash>/error.txt``) and every field of the run's config as a dotted column
(``cluster.engines``, ``workload.rate``, ...). Labels and config values that are lists or
mappings are JSON text. ``OUT/experiment.json`` names the experiment and its label and metric
columns (``parrotsim show`` reads it).
"""

from __future__ import annotations

import contextlib
import errno
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pandas as pd
from filelock import FileLock

from parrotsim import __version__
from parrotsim.core.errors import UsageError
from parrotsim.sim.harness.backends import default_jobs, make_backend
from parrotsim.sim.harness.experiment import ExpandedRun, Experiment, expand, load_experiment
from parrotsim.sim.harness.resources import check_memory, estimate
from parrotsim.sim.harness.store import LOCKS, clean_stale, read_record, write_all_atomic

SUMMARY_CSV = "summary.csv"
SUMMARY_PARQUET = "summary.parquet"
META = "experiment.json"
#: a generous wall-clock limit per run (s): far above any shipped run (the longest take
#: seconds), it only stops a run that would never end
DEFAULT_RUN_TIMEOUT = 6 * 3600.0
#: errors of a write that no other run could do either: the sweep stops
FULL_OR_READ_ONLY = {errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EACCES, errno.EPERM}


class OutputError(UsageError):
    """An output folder that cannot be written (exit status 2)."""


def default_out(experiment: Experiment) -> Path:
    """``results/<experiment name>``, relative to the working directory."""
    return Path("results") / experiment.name


def plan(experiment: Experiment, out_dir: Path, force: bool = False
         ) -> tuple[list[ExpandedRun], dict[str, dict[str, Any]]]:
    """The expanded runs and the stored records of those that are cached (``status: ok``)."""
    runs = expand(experiment)
    cached: dict[str, dict[str, Any]] = {}
    if not force:
        for run in runs:
            record = read_record(out_dir / "runs", run.key)
            if record is not None and record["status"] == "ok":
                cached[run.key] = record
    return runs, cached


def run_experiment(experiment: Experiment | str | Path, out_dir: str | Path | None = None,
                   jobs: int | None = None, backend: str = "local", address: str | None = None,
                   force: bool = False, progress: bool = True,
                   run_timeout: float | None = DEFAULT_RUN_TIMEOUT,
                   max_memory: float | None = None) -> pd.DataFrame:
    """Run every expanded run not already stored and return (and write) the summary frame.

    ``jobs``: local worker processes (default: the cores available; 1 runs in this process).
    ``backend``: ``local`` or ``ray`` (``address``: an existing Ray cluster). ``force``: re-run
    cached runs too. ``progress``: a bar on stderr, shown only when stderr is a terminal.
    ``run_timeout``: wall-clock seconds after which a run is stopped and recorded as failed
    (None: no limit). ``max_memory``: bytes the runs in flight at once may need by
    :mod:`sim.harness.resources`' estimate (None: 80 % of the available memory; ``inf``: no
    check). The frame's ``attrs`` count the runs ``ran`` here and ``cached`` (stored before,
    or meanwhile by another sweep into the same folder).

    Raises ``ExperimentError`` for an invalid file, ``MemoryLimitError`` for runs too large
    and ``OutputError`` for an output folder that cannot be written (at the start, or when the
    disk fills up: the sweep stops, the runs stored so far are kept whole), all before writing
    anything or leaving the store consistent.
    """
    exp = experiment if isinstance(experiment, Experiment) else load_experiment(experiment)
    out = Path(out_dir) if out_dir is not None else default_out(exp)
    runs, cached = plan(exp, out, force)
    todo: dict[str, ExpandedRun] = {}
    for run in runs:
        if run.key not in cached:
            todo.setdefault(run.key, run)
    workers = 1 if backend == "local" and jobs == 1 else (jobs or default_jobs())
    check_memory([(_describe(run.labels), estimate(run.config)) for run in todo.values()],
                 workers, exp.source, max_memory)
    check_writable(out)
    executor = make_backend(backend, jobs, address)
    runs_dir = (out / "runs").resolve()
    try:
        runs_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{runs_dir}: cannot create: {exc.strerror or exc}") from None
    clean_stale(runs_dir)
    records = dict(cached)
    counts = {"ran": 0, "cached": len(cached), "failed": 0}
    bar = _progress(len(todo) + len(cached), len(cached), progress, exp.name)
    unwritable: dict[str, Any] | None = None
    try:
        tasks = [(key, run.config.model_dump(mode="json"), str(runs_dir), exp.plugins,
                  run_timeout, False, not force) for key, run in todo.items()]
        for _ in range(2):  # first skip runs that another sweep holds, then wait for them
            busy = []
            for record in executor.map(tasks):
                if record["status"] == "busy":
                    busy.append(record["key"])
                    continue
                if record.get("store_errno") in FULL_OR_READ_ONLY:
                    unwritable = record
                    break
                records[record["key"]] = record
                counts["cached" if record.get("reused") else "ran"] += 1
                counts["failed"] += record["status"] != "ok"
                bar.set_postfix_str(f"ran {counts['ran']}, cached {counts['cached']}, "
                                    f"failed {counts['failed']}", refresh=False)
                bar.update(1)
            if unwritable is not None or not busy:
                break
            tasks = [task[:5] + (True,) + task[6:] for task in tasks if task[0] in busy]
    finally:
        bar.close()
        executor.close()
        frame = summary_frame(runs, records)
        try:
            write_summary(out, exp, frame)
        except OSError as exc:
            if unwritable is None:
                raise OutputError(f"{out}: cannot write the summary: {exc.strerror or exc}; "
                                  "the runs stored so far are kept") from None
        frame.attrs.update(ran=counts["ran"], cached=counts["cached"])  # not in the files
    if unwritable is not None:
        raise OutputError(f"{runs_dir}: {unwritable['error']}; the sweep stopped with "
                          f"{counts['ran']} runs stored (kept whole); make room or choose "
                          "another --out, then run again")
    return frame


def _describe(labels: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in labels.items())


def check_writable(out: Path) -> None:
    """Raise :class:`OutputError` unless files can be made in ``out`` (or, if it does not
    exist yet, in its nearest existing parent); leaves nothing behind."""
    existing = next((p for p in (out, *out.parents) if p.exists()), Path("."))
    probe = existing / f".parrotsim-write-test-{uuid.uuid4().hex[:8]}"
    try:
        probe.write_bytes(b"")
    except OSError as exc:
        raise OutputError(f"{out}: --out: cannot write into {existing}: "
                          f"{exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()


def _progress(total: int, initial: int, enabled: bool, label: str) -> Any:
    """A tqdm bar on stderr named ``label``; off when not ``enabled`` or stderr is no terminal."""
    from tqdm import tqdm

    bar = tqdm(total=total, initial=initial, unit="run", file=sys.stderr, desc=label,
               disable=None if enabled else True, dynamic_ncols=True)
    bar.set_postfix_str(f"ran 0, cached {initial}, failed 0")
    return bar


def summary_frame(runs: list[ExpandedRun], records: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """One row per run with a record (see module docstring for the columns)."""
    rows, metric_names = [], []
    for run in runs:
        for name in records.get(run.key, {}).get("metrics", {}):
            if name not in metric_names:
                metric_names.append(name)
    for run in runs:
        record = records.get(run.key)
        if record is None:
            continue
        row: dict[str, Any] = {"run_hash": run.key, "status": record["status"]}
        row.update({k: _cell(v) for k, v in run.labels.items()})
        row.update({m: record["metrics"].get(m, float("nan")) for m in metric_names})
        row["error"] = _one_line(record.get("error", ""))
        for k, v in flatten(run.config.model_dump(mode="json")).items():
            row.setdefault(k, _cell(v))
        rows.append(row)
    return pd.DataFrame(rows)


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as one level of dotted keys."""
    out: dict[str, Any] = {}
    for k, v in data.items():
        if isinstance(v, dict) and v:
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _cell(v: Any) -> Any:
    return json.dumps(v, sort_keys=True) if isinstance(v, (list, dict, tuple)) else v


def _one_line(text: str) -> str:
    return " | ".join(ln.strip() for ln in text.strip().splitlines() if ln.strip())


def write_summary(out: Path, exp: Experiment, frame: pd.DataFrame) -> None:
    """Write ``summary.csv``, ``summary.parquet`` and ``experiment.json``: all three into
    temporary files first, then each renamed over the old one (``os.replace``), under a lock
    of the folder so that two sweeps finishing at once do not interleave their files; a
    write that fails (a full disk) leaves the previous summary as it was."""
    cols = list(frame.columns)
    head = cols[:cols.index("error")] if "error" in cols else []
    metrics = [c for c in head if c not in ("run_hash", "status", *exp.label_names)]
    meta = {"name": exp.name, "description": exp.spec.description, "source": exp.source,
            "labels": exp.label_names, "axes": list(exp.spec.sweep), "version": __version__,
            "runs": len(frame), "metrics": metrics}
    (out / LOCKS).mkdir(parents=True, exist_ok=True)
    with FileLock(out / LOCKS / "summary.lock"):
        write_all_atomic({out / SUMMARY_CSV: frame.to_csv(index=False),
                          out / SUMMARY_PARQUET: _parquet_safe(frame).to_parquet(index=False),
                          out / META: json.dumps(meta, indent=1)})


def _parquet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Object columns mixing types (a label that is a number in one run, text in another)
    become JSON text, which Parquet can store."""
    frame = frame.copy()
    for col in frame.columns:
        if frame[col].dtype == object:
            kinds = {type(v) for v in frame[col] if v is not None and v == v}
            if len(kinds) > 1 or (kinds and not kinds <= {str}):
                frame[col] = [None if v is None else json.dumps(v) for v in frame[col]]
    return frame
