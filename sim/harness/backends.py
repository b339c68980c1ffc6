"""Where runs execute: in this process, in a local process pool, or as Ray tasks.

A backend maps :func:`parrotsim.sim.harness.store.execute` over tasks ``(key, config, runs_dir,
plugins, timeout, wait, reuse)`` and yields the small records the workers return, in completion
order (``map``), or each with the index of its task (``imap``: runs of several experiments in
one pool, where two experiments may hold the same key). Tasks are started in the order given. Workers import the
experiment's plugins, then write the run's tables into the store themselves, so only a few
hundred bytes per run travel back. A task that cannot even report yields a ``failed`` record
built here, which is not stored, so the run is retried next time; the local pool first retries
a run whose worker process died, alone on a fresh worker (:mod:`parrotsim.sim.harness.pool`).

Ray is imported only by :class:`RayBackend`; with ``address`` it joins that cluster (the runs
directory must then be on a filesystem every node sees), without it it starts a local one or
reuses the one already initialised in this process.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from parrotsim.core.errors import UsageError
from parrotsim.sim.harness.pool import PoolBackend, Task, lost
from parrotsim.sim.harness.store import execute


def default_jobs() -> int:
    """The number of CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class SerialBackend:
    """Runs every task in this process, one after the other (``--jobs 1``)."""

    def map(self, tasks: list[Task]) -> Iterator[dict[str, Any]]:
        return (record for _, record in self.imap(tasks))

    def imap(self, tasks: list[Task]) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(index of the task, record)`` for each task, in order."""
        for index, task in enumerate(tasks):
            yield index, execute(*task)

    def close(self) -> None:
        """Nothing to release."""


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
        return (record for _, record in self.imap(tasks))

    def imap(self, tasks: list[Task]) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(index of the task, record)`` for each task, in completion order."""
        ray = self.ray
        queue = list(reversed(list(enumerate(tasks))))
        pending: dict[Any, tuple[int, Task]] = {}
        while queue or pending:
            while queue and len(pending) < self.window:
                index, task = queue.pop()
                pending[self.remote.remote(*task)] = (index, task)
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                index, task = pending.pop(ref)
                try:
                    yield index, ray.get(ref)
                except Exception as exc:
                    yield index, lost(task, exc)

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
