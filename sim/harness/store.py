"""The results store: one directory per run, keyed by a hash of everything that decides its result.

Layout under the output directory ``OUT``::

    OUT/runs/<key>/calls.parquet     per-call table (see parrotsim.sim.model.metrics)
    OUT/runs/<key>/apps.parquet      per-app table
    OUT/runs/<key>/engines.parquet   per-engine table
    OUT/runs/<key>/config.json       the fully-defaulted RunConfig, profile hash and version
    OUT/runs/<key>/error.txt         the traceback, for a failed run
    OUT/runs/<key>/summary.json      status, metrics, error and the size and checksum of
                                     every other file; written last (the completion marker)

A run is simulated under the lock of its key (``OUT/.locks/<key>.lock``), so two sweeps
into one folder never simulate the same run twice (:func:`execute`). A worker writes every file into a private staging directory ``OUT/runs/.tmp-<key>-...`` and
renames it to ``<key>`` when all files are complete, so a run directory is either absent or
whole; a run directory without ``summary.json`` (from another tool, or damaged) counts as absent
and is replaced. A killed worker leaves only a staging directory, which nothing reads and which
is removed once its process is gone. Only runs with ``status: ok`` whose files all have their
recorded sizes and checksums (:mod:`parrotsim.sim.harness.run_files`) are cache hits; failed or
damaged runs are run again.

The key is ``sha256`` (first 16 hex digits) over the sorted-key JSON of the run's
``model_dump(mode="json")``, the content hash of its cost profile, ``sim.__version__`` and the
fingerprints of :mod:`parrotsim.sim.fingerprint`: the simulator's source and package data, the plugin
modules its parts come from and the content of every input file it names (trace files). Editing
the code or an input file therefore re-runs the runs it affects.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import socket
import time
import traceback
import uuid
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from parrotsim import __version__
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.fingerprint import input_hashes, plugin_hashes, source_hash
from parrotsim.sim.harness.plugins import load_plugins
from parrotsim.sim.harness.run_files import FileWriter, intact
from parrotsim.sim.harness.simulation import simulate
from parrotsim.sim.harness.time_limit import RunTimeout, time_limit
from parrotsim.sim.model.profile import profile_hash

MARKER = "summary.json"
LOCKS = ".locks"
TABLES = ("calls", "apps", "engines")


def run_key(config: RunConfig) -> str:
    """The cache key of one run (see module docstring)."""
    payload = {"config": config.model_dump(mode="json"),
               "profile": profile_hash(config.cluster.profile), "version": __version__,
               "source": source_hash(), "plugins": plugin_hashes(config),
               "inputs": input_hashes(config)}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def read_record(runs_dir: Path, key: str) -> dict[str, Any] | None:
    """The ``summary.json`` record of a complete run, or None when the run is not (yet) stored
    or one of its files is missing or damaged (its size or checksum differs from the record)."""
    folder = Path(runs_dir) / key
    try:
        record = json.loads((folder / MARKER).read_text())
        record["metrics"] = {k: math.nan if v is None else v
                             for k, v in record["metrics"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if record.get("status") not in ("ok", "failed") or not intact(folder, record.get("files")):
        return None
    return record


def execute(key: str, config: dict[str, Any], runs_dir: str, plugins: tuple[str, ...] = (),
            timeout: float | None = None, wait: bool = True, reuse: bool = False
            ) -> dict[str, Any]:
    """Run one simulation, store its tables under ``runs_dir/key`` and return its small record.

    This is the unit of work every backend ships to a worker; ``plugins`` (resolved entries,
    see :mod:`sim.plugins`) are imported first. The run holds the lock of its key
    (:func:`run_lock`) from before it looks for a stored result until its folder is published,
    so two sweeps into one folder never simulate one key at once: with ``wait`` False a key
    locked by another process returns ``status: busy`` at once (nothing done, the caller tries
    again later); with ``reuse`` a run that another sweep stored meanwhile (``status: ok``) is
    returned as stored, with ``reused: True``, instead of being simulated again.

    A run that raises, or runs longer than ``timeout`` wall-clock seconds
    (:mod:`sim.harness.time_limit`), is stored and returned with ``status: failed`` and the
    exception's whole message as ``error`` (its traceback goes to ``error.txt``); it never
    raises itself. A run some of whose calls were rejected (no engine can run them) is
    ``failed`` too, without metrics, but its tables are stored: the calls table's ``error``
    column says why each rejected call was. A run that cannot be stored (a full or read-only
    disk) is returned ``failed`` with ``store_errno``, the error number of the failed write.
    """
    try:
        lock = run_lock(Path(runs_dir), key)
        lock.acquire(timeout=-1 if wait else 0)
    except Timeout:
        return {"key": key, "status": "busy", "metrics": {}, "error": "", "elapsed_s": 0.0}
    except OSError as exc:  # the lock cannot even be made: a read-only or full disk
        return {"key": key, "status": "failed", "metrics": {}, "elapsed_s": 0.0,
                "error": f"could not store the run: {_message(exc)}", "store_errno": exc.errno}
    try:
        if reuse:
            record = read_record(Path(runs_dir), key)
            if record is not None and record["status"] == "ok":
                return dict(record, reused=True)
        return _execute(key, config, runs_dir, plugins, timeout)
    finally:
        lock.release()


def run_lock(runs_dir: Path, key: str) -> FileLock:
    """The lock of one run key: a ``fcntl`` lock on ``OUT/.locks/<key>.lock`` (``runs_dir`` is
    ``OUT/runs``), which the system releases when its process dies (so a killed sweep leaves
    no stale lock)."""
    folder = runs_dir.parent / LOCKS
    folder.mkdir(parents=True, exist_ok=True)
    return FileLock(folder / f"{key}.lock")


def _execute(key: str, config: dict[str, Any], runs_dir: str, plugins: tuple[str, ...],
             timeout: float | None) -> dict[str, Any]:
    start = time.perf_counter()
    result, trace = None, ""
    try:
        with time_limit(timeout):
            load_plugins(plugins)
            result = simulate(RunConfig.model_validate(config))
        status, metrics, error = "ok", dict(result.summary), ""
        if len(result.rejected):  # metrics would leave the failed apps out: none are given
            status, metrics, error = "failed", {}, f"RejectedCalls: {result.rejection_message()}"
    except (Exception, RunTimeout) as exc:
        status, metrics, error = "failed", {}, _message(exc)
        trace = traceback.format_exc()
    record = {"key": key, "status": status, "metrics": metrics, "error": error,
              "elapsed_s": time.perf_counter() - start}
    try:
        write_run(Path(runs_dir), key, config, result, record, trace)
    except Exception as exc:
        record.update(status="failed", metrics={},
                      error=f"could not store the run: {_message(exc)}")
        if isinstance(exc, OSError) and exc.errno is not None:
            record["store_errno"] = exc.errno
    return record


def _message(exc: BaseException) -> str:
    """The exception as the last lines of its traceback show it (type and whole message)."""
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


def write_run(runs_dir: Path, key: str, config: dict[str, Any], result: Any,
              record: dict[str, Any], trace: str = "") -> None:
    """Write a run's files into a staging directory, then publish it as ``runs_dir/key``
    (``trace``: the traceback of a failed run, written to ``error.txt``)."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    stage = runs_dir / f".tmp-{key}-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    stage.mkdir()
    files = FileWriter(stage)
    try:
        if result is not None:
            for name in TABLES:
                files.write(f"{name}.parquet", getattr(result, name).to_parquet(
                    None, index=False, compression="zstd"))
        meta = {"config": config, "profile_hash": profile_hash(config["cluster"]["profile"]),
                "version": __version__, "source_hash": source_hash()}
        files.write("config.json", json.dumps(meta, indent=1, sort_keys=True))
        if record["error"]:
            files.write("error.txt", trace or record["error"])
        stored = dict(record, metrics={k: None if isinstance(v, float) and math.isnan(v) else v
                                       for k, v in record["metrics"].items()},
                      files=files.files)
        (stage / MARKER).write_text(json.dumps(stored, indent=1))
        _publish(stage, runs_dir / key)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)


def _publish(stage: Path, final: Path) -> None:
    """Rename ``stage`` to ``final``, moving aside whatever is there (a stale or older run)."""
    for _ in range(5):
        try:
            os.rename(stage, final)
            return
        except OSError:
            if not final.exists():
                raise
        old = final.with_name(f".old-{final.name}-{uuid.uuid4().hex[:8]}")
        with contextlib.suppress(FileNotFoundError):
            os.rename(final, old)
        shutil.rmtree(old, ignore_errors=True)
    raise OSError(f"could not publish {final}")


def clean_stale(runs_dir: Path) -> int:
    """Remove staging directories left by killed workers of this host; returns how many."""
    host, removed = socket.gethostname(), 0
    if not runs_dir.is_dir():
        return 0
    for entry in runs_dir.iterdir():
        if entry.name.startswith(".old-"):
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
        if not entry.name.startswith(".tmp-"):
            continue
        parts = entry.name.split("-")
        try:
            entry_host, pid = "-".join(parts[2:-2]), int(parts[-2])
        except (IndexError, ValueError):
            continue
        if entry_host == host and not _alive(pid):
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write ``path`` through a temporary file in the same directory and a rename."""
    write_all_atomic({path: data})


def write_all_atomic(files: dict[Path, bytes | str]) -> None:
    """Write every file through a temporary file beside it, then rename each into place once
    all are written: a failed write (a full disk) replaces none of them."""
    staged: list[tuple[Path, Path]] = []
    try:
        for path, data in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".tmp-{path.name}-{uuid.uuid4().hex[:8]}")
            staged.append((tmp, path))
            if isinstance(data, str):
                tmp.write_text(data)
            else:
                tmp.write_bytes(data)
        for tmp, path in staged:
            os.replace(tmp, path)
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
