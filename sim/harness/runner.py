"""Run experiments: skip cached runs, execute the rest on a backend, write each summary.

:func:`run_experiment` runs one experiment. :func:`run_sweeps` runs the runs of several
experiments in one pool (the report's nine), so that no core waits between experiments: the
experiments are started heaviest first, each one's runs longest first (by the calls its
workload makes, :mod:`sim.harness.resources`), and each experiment's summary is written, and
its ``on_done`` called, as soon as its last run ends, while the pool goes on with the others.
The summary files are described in :mod:`sim.harness.summary`.
"""

from __future__ import annotations

import contextlib
import errno
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from parrotsim.core.errors import UsageError
from parrotsim.sim.harness.backends import Backend, default_jobs, make_backend
from parrotsim.sim.harness.experiment import ExpandedRun, Experiment, expand, load_experiment
from parrotsim.sim.harness.resources import RunSize, check_memory, estimate
from parrotsim.sim.harness.store import clean_stale, read_record
from parrotsim.sim.harness.summary import summary_frame, write_summary

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


@dataclass
class Sweep:
    """One experiment to run into ``out``: its runs, the records so far (the cached ones
    first), the runs still to simulate with their sizes, and what happened to them."""

    experiment: Experiment
    out: Path
    runs: list[ExpandedRun]
    records: dict[str, dict[str, Any]]
    todo: dict[str, ExpandedRun]
    sizes: dict[str, RunSize]
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def runs_dir(self) -> Path:
        return (self.out / "runs").resolve()

    @property
    def weight(self) -> int:
        """The calls its runs still to simulate make, a measure of their cost."""
        return sum(size.calls for size in self.sizes.values())

    def add(self, record: dict[str, Any]) -> None:
        self.records[record["key"]] = record
        self.counts["cached" if record.get("reused") else "ran"] += 1
        self.counts["failed"] += record["status"] != "ok"

    def finish(self) -> pd.DataFrame:
        """Write the summary of the records so far; return its frame."""
        frame = summary_frame(self.runs, self.records)
        write_summary(self.out, self.experiment, frame)
        frame.attrs.update(ran=self.counts["ran"], cached=self.counts["cached"])
        return frame


def prepare_sweep(experiment: Experiment | str | Path, out_dir: str | Path | None = None,
                  force: bool = False) -> Sweep:
    """The sweep of ``experiment`` into ``out_dir`` (default: :func:`default_out`): its runs,
    the cached ones and the sizes of the others; nothing is written."""
    exp = experiment if isinstance(experiment, Experiment) else load_experiment(experiment)
    out = Path(out_dir) if out_dir is not None else default_out(exp)
    runs, cached = plan(exp, out, force)
    todo: dict[str, ExpandedRun] = {}
    for run in runs:
        if run.key not in cached:
            todo.setdefault(run.key, run)
    return Sweep(exp, out, runs, dict(cached), todo,
                 {key: estimate(run.config) for key, run in todo.items()},
                 {"ran": 0, "cached": len(cached), "failed": 0})


def check_sweep_memory(sweeps: list[Sweep], workers: int, max_memory: float | None) -> None:
    """Raise ``MemoryLimitError`` when the ``workers`` largest runs still to do, of all the
    sweeps, would need more than ``max_memory`` bytes together (see
    :func:`~parrotsim.sim.harness.resources.check_memory`); the message names the file of
    the largest."""
    sizes = [(sweep, _describe(run.labels), sweep.sizes[key])
             for sweep in sweeps for key, run in sweep.todo.items()]
    if sizes:
        largest = max(sizes, key=lambda item: item[2].bytes)[0]
        check_memory([(labels, size) for _, labels, size in sizes], workers,
                     largest.experiment.source, max_memory)


def _open(sweep: Sweep) -> None:
    """Check that the sweep's folder can be written, make its runs folder, clear stale
    staging folders (raises :class:`OutputError`)."""
    check_writable(sweep.out)
    try:
        sweep.runs_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{sweep.runs_dir}: cannot create: {exc.strerror or exc}") from None
    clean_stale(sweep.runs_dir)


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
    sweep = prepare_sweep(experiment, out_dir, force)
    workers = 1 if backend == "local" and jobs == 1 else (jobs or default_jobs())
    check_sweep_memory([sweep], workers, max_memory)
    check_writable(sweep.out)
    executor = make_backend(backend, jobs, address)
    try:
        return run_sweeps([sweep], executor, progress, run_timeout, force)[0]
    finally:
        executor.close()


def run_sweeps(sweeps: list[Sweep], executor: Backend, progress: bool = True,
               run_timeout: float | None = DEFAULT_RUN_TIMEOUT, force: bool = False,
               on_done: Callable[[int, pd.DataFrame], None] | None = None
               ) -> list[pd.DataFrame]:
    """Run the runs still to do of every sweep on ``executor`` (see module docstring); write
    each sweep's summary and call ``on_done(index of the sweep, its frame)`` as soon as its
    runs are all in. Returns the summary frames, in the order of ``sweeps``. A folder that
    cannot be written raises :class:`OutputError` before any run starts; a full or read-only
    disk stops every sweep (:class:`OutputError`; the summaries of the runs stored so far are
    written)."""
    for sweep in sweeps:
        _open(sweep)
    frames: dict[int, pd.DataFrame] = {}
    pending = [len(s.todo) for s in sweeps]
    total = sum(len(s.todo) + s.counts["cached"] for s in sweeps)
    label = sweeps[0].experiment.name if len(sweeps) == 1 else f"{len(sweeps)} experiments"
    bar = _progress(total, sum(s.counts["cached"] for s in sweeps), progress, label)
    unwritable: tuple[int, dict[str, Any]] | None = None

    def done(i: int) -> None:
        try:
            frames[i] = sweeps[i].finish()
        except OSError as exc:
            raise OutputError(f"{sweeps[i].out}: cannot write the summary: "
                              f"{exc.strerror or exc}; the runs stored so far are kept") from None
        if on_done is not None:
            on_done(i, frames[i])

    try:
        for i in range(len(sweeps)):
            if not pending[i]:
                done(i)
        tasks = [(i, (key, run.config.model_dump(mode="json"), str(sweeps[i].runs_dir),
                      sweeps[i].experiment.plugins, run_timeout, False, not force))
                 for i, key, run in _longest_first(sweeps)]
        for _ in range(2):  # first skip runs that another sweep holds, then wait for them
            busy = []
            for index, record in executor.imap([task for _, task in tasks]):
                i = tasks[index][0]
                if record["status"] == "busy":
                    busy.append(tasks[index])
                    continue
                if record.get("store_errno") in FULL_OR_READ_ONLY:
                    unwritable = (i, record)
                    break
                sweeps[i].add(record)
                counts = [sum(s.counts[k] for s in sweeps) for k in ("ran", "cached", "failed")]
                bar.set_postfix_str("ran {}, cached {}, failed {}".format(*counts),
                                    refresh=False)
                bar.update(1)
                pending[i] -= 1
                if not pending[i]:
                    done(i)
            if unwritable is not None or not busy:
                break
            tasks = [(i, task[:5] + (True,) + task[6:]) for i, task in busy]
    finally:
        bar.close()
        for i, sweep in enumerate(sweeps):
            if i not in frames and sweep.runs_dir.is_dir():
                _finish_anyway(sweep, unwritable is not None)
    if unwritable is not None:
        sweep, record = sweeps[unwritable[0]], unwritable[1]
        raise OutputError(f"{sweep.runs_dir}: {record['error']}; the sweep stopped with "
                          f"{sweep.counts['ran']} runs stored (kept whole); make room or "
                          "choose another --out, then run again")
    return [frames[i] for i in range(len(sweeps))]


def _finish_anyway(sweep: Sweep, disk_failed: bool) -> None:
    """Write the summary of a sweep that was stopped (the runs stored so far)."""
    try:
        sweep.finish()
    except OSError as exc:
        if not disk_failed:
            raise OutputError(f"{sweep.out}: cannot write the summary: {exc.strerror or exc}; "
                              "the runs stored so far are kept") from None


def _longest_first(sweeps: list[Sweep]) -> list[tuple[int, str, ExpandedRun]]:
    """``(sweep index, key, run)`` of every run to do: the sweeps in order of their weight,
    heaviest first, and each sweep's runs by their calls, most first (stable)."""
    order = sorted(range(len(sweeps)), key=lambda i: -sweeps[i].weight)
    return [(i, key, sweeps[i].todo[key]) for i in order
            for key in sorted(sweeps[i].todo, key=lambda k: -sweeps[i].sizes[k].calls)]


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
