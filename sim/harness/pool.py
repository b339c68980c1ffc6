"""The local process pool backend, which survives the death of a worker process.

When a worker process dies (killed, out of memory, a crash in native code) Python's
``ProcessPoolExecutor`` is broken for good: every run in flight and every run queued behind
them fails with ``BrokenProcessPool``. :class:`PoolBackend` keeps at most ``2 * jobs`` runs in
flight, so a death touches no other run; the runs in flight at that moment are suspects: the
pool is replaced by a fresh one and each suspect is retried *alone* (one run in flight), so a
second death pins down its run. A run whose worker died with it twice (once among the
suspects, once alone) fails with that reason; every other run goes on, and the other runs
of the sweep are run in parallel again once the suspects are cleared. A failed record built
here is not stored, so the run is retried by the next ``parrotsim run``.
"""

from __future__ import annotations

import gc
import multiprocessing
from collections import deque
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import forkserver
from typing import Any

from parrotsim.sim.harness.store import execute

#: the arguments of :func:`~parrotsim.sim.harness.store.execute`: key, config, runs folder,
#: plugins, then optionally the run's timeout (s), whether to wait for its lock and whether to
#: reuse a run stored meanwhile
Task = tuple[Any, ...]
PRELOAD = ["parrotsim.sim.harness.store", "parrotsim.sim.harness.simulation"]


def lost(task: Task, exc: BaseException, what: str = "worker lost") -> dict[str, Any]:
    """The record of a task whose worker failed to report."""
    return {"key": task[0], "status": "failed", "metrics": {}, "elapsed_s": 0.0,
            "error": f"{what}: {type(exc).__name__}: {exc}"}


class PoolBackend:
    """A local process pool of ``jobs`` workers (see module docstring).

    Workers come from a fork server that has already imported the simulator, so they start
    fast without inheriting this process's threads (tqdm's monitor, Arrow's pools).
    """

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        _start_fork_server()

    def map(self, tasks: list[Task]) -> Iterator[dict[str, Any]]:
        return (record for _, record in self.imap(tasks))

    def imap(self, tasks: list[Task]) -> Iterator[tuple[int, dict[str, Any]]]:
        """Run ``tasks`` in their order; yield ``(index of the task, record)`` as each ends."""
        todo: deque[tuple[int, Task]] = deque(enumerate(tasks))
        suspects: deque[tuple[int, Task]] = deque()
        while todo or suspects:
            workers = min(self.jobs, len(todo) + len(suspects))
            with ProcessPoolExecutor(workers, mp_context=_context(),
                                     initializer=gc.freeze) as pool:
                yield from self._drain(pool, todo, suspects)

    def _drain(self, pool: ProcessPoolExecutor, todo: deque[tuple[int, Task]],
               suspects: deque[tuple[int, Task]]) -> Iterator[tuple[int, dict[str, Any]]]:
        """Run suspects alone, then the rest in parallel, until done or the pool breaks (the
        runs then in flight join ``suspects``; a suspect that breaks it again fails)."""
        flight: dict[Future, tuple[int, Task]] = {}
        try:
            while todo or suspects or flight:
                alone = bool(suspects)
                while len(flight) < (1 if alone else 2 * self.jobs) and (suspects or todo):
                    item = (suspects if alone else todo).popleft()
                    flight[pool.submit(execute, *item[1])] = item
                done, _ = wait(flight, return_when=FIRST_COMPLETED)
                if any(isinstance(f.exception(), BrokenProcessPool) for f in done):
                    done = set(wait(flight).done)  # a broken pool fails all it had at once
                broken: list[tuple[tuple[int, Task], BaseException]] = []
                for future in done:
                    (index, task), exc = flight.pop(future), future.exception()
                    if isinstance(exc, BrokenProcessPool):
                        broken.append(((index, task), exc))
                    else:
                        yield index, future.result() if exc is None else lost(task, exc)
                if broken and alone:  # its second death: this run is the one that kills
                    (index, task), exc = broken[0]
                    yield index, lost(task, exc, "worker lost twice (its process died with "
                                                 "this run, also when the run was retried alone)")
                elif broken:
                    suspects.extend(item for item, _ in broken)
                if broken:
                    return  # this pool is broken: go on with a fresh one
        finally:
            for future in flight:
                future.cancel()

    def close(self) -> None:
        """Each pool closes when :meth:`map` is done with it."""


def _start_fork_server() -> None:
    """Start the fork server now, without waiting for it: it imports the simulator while this
    process goes on (loading experiments), instead of when the first run is submitted."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        _context()
        forkserver.ensure_running()


def _context() -> Any:
    """A fork-server context that preloads the simulator (spawn where there is none)."""
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if "forkserver" in methods:
        ctx.set_forkserver_preload(PRELOAD)
    return ctx
