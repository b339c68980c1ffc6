"""Where runs execute: in this process, in a local process pool, or as Ray tasks.

A backend maps :func:`parrotsim.sim.harness.store.execute` over tasks ``(key, config, runs_dir, plugins)`` and
yields the small records the workers return, in completion order. Workers import the
experiment's plugins, then write the run's tables into the store themselves, so only a few
hundred bytes per run travel back. A task that cannot even report (its worker process died)
yields a ``failed`` record built here, which is not stored, so the run is retried next time.

Ray is imported only by :class:`RayBackend`; with ``address`` it joins that cluster (the runs
directory must then be on a filesystem every node sees), without it it starts a local one or
reuses the one already initialised in this process.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

from parrotsim.core.errors import UsageError
from parrotsim.sim.harness.store import execute

Task = tuple[str, dict[str, Any], str, tuple[str, ...]]


def default_jobs() -> int:
    """The number of CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def lost(task: Task, exc: BaseException) -> dict[str, Any]:
    """The record of a task whose worker failed to report."""
    return {"key": task[0], "status": "failed", "metrics": {}, "elapsed_s": 0.0,
            "error": f"worker lost: {type(exc).__name__}: {exc}"}


class SerialBackend:
    """Runs every task in this process, one after the other (``--jobs 1``)."""

    def map(self, tasks: list[Task]) -> Iterator[dict[str, Any]]:
        for task in tasks:
            yield execute(*task)

    def close(self) -> None:
        """Nothing to release."""


class PoolBackend:
    """A local process pool of ``jobs`` workers.

    Workers come from a fork server that has already imported the simulator, so they start
    fast without inheriting this process's threads (tqdm's monitor, Arrow's pools).
    """

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs

    def map(self, tasks: list[Task]) -> Iterator[dict[str, Any]]:
        if not tasks:
            return
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        if "forkserver" in methods:
            ctx.set_forkserver_preload(["parrotsim.sim.harness.store", "parrotsim.sim.harness.simulation"])
        with ProcessPoolExecutor(min(self.jobs, len(tasks)), mp_context=ctx) as pool:
            pending = {pool.submit(execute, *task): task for task in tasks}
            try:
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        task = pending.pop(future)
                        try:
                            yield future.result()
                        except Exception as exc:
                            yield lost(task, exc)
            finally:
                for future in pending:
                    future.cancel()

    def close(self) -> None:
        """The pool closes when :meth:`map` finishes."""


class RayBackend:
    """Submits each task as a Ray task (one CPU each), at most ``window`` in flight."""

    def __init__(self, address: str | None = None, window: int = 1000) -> None:
        try:
            import ray
        except ImportError:
            raise UsageError("--backend ray needs the 'ray' package (pip install ray)") from None
        self.ray = ray
        self.window = window
        self.started = False
        if not ray.is_initialized():
            try:
                ray.init(address=address, log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise UsageError(f"cannot start or join Ray at {address or 'local'}: {exc}") \
                    from None
            self.started = True
        self.remote = ray.remote(num_cpus=1)(execute)

    def map(self, tasks: list[Task]) -> Iterator[dict[str, Any]]:
        ray = self.ray
        queue = list(reversed(tasks))
        pending: dict[Any, Task] = {}
        while queue or pending:
            while queue and len(pending) < self.window:
                task = queue.pop()
                pending[self.remote.remote(*task)] = task
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                task = pending.pop(ref)
                try:
                    yield ray.get(ref)
                except Exception as exc:
                    yield lost(task, exc)

    def close(self) -> None:
        """Shut Ray down if this backend started it."""
        if self.started:
            self.ray.shutdown()


Backend = SerialBackend | PoolBackend | RayBackend


def make_backend(name: str, jobs: int | None = None, address: str | None = None) -> Backend:
    """The backend called ``name`` (``local`` or ``ray``); ``local`` with one job is serial."""
    if name == "ray":
        return RayBackend(address)
    if name != "local":
        raise UsageError(f"unknown backend {name!r}; use 'local' or 'ray'")
    if address is not None:
        raise UsageError("--address is only for --backend ray")
    jobs = default_jobs() if jobs is None else jobs
    if jobs < 1:
        raise UsageError(f"--jobs must be at least 1, not {jobs}")
    return SerialBackend() if jobs == 1 else PoolBackend(jobs)
