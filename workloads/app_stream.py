"""A stream of single-call apps kept as per-app arrays and made into :class:`App` objects on demand.

Open-loop request streams (ShareGPT chats, GPTs requests) draw every random number up front as
numpy arrays (arrival times, token counts, which prompt); the simulator asks for app ``i`` only
when it arrives (:mod:`parrotsim.sim.harness.arrival_process`), so a million-request run never
holds a million :class:`App` objects at once. The stream is a read-only sequence: ``len``,
indexing and iteration give the same apps, bit for bit, as the list the builders returned before
(``stream == list`` compares app by app). Arrival times are in seconds and never decrease.

:class:`AppsThenStream` puts a few apps made up front (Fig 12a's chain) before such a stream
(its background load), so the stream's apps are still made only as they arrive.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from collections.abc import Sequence as AbcSequence
from typing import Any, overload

import numpy as np

from parrotsim.workloads.app import (
    App,
    AppError,
    CallHints,
    Piece,
    single_call_app,
    validate_apps,
)

NO_HINTS = CallHints()


class LazyApps(AbcSequence[App]):
    """A read-only sequence of apps made on demand: indexing and slicing make them with
    :meth:`_app` (``0 <= i < len``), and it equals any sequence of equal apps, as the list it
    stands for does."""

    def _app(self, i: int) -> App:
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> App: ...

    @overload
    def __getitem__(self, i: slice) -> list[App]: ...

    def __getitem__(self, i: int | slice) -> App | list[App]:
        if isinstance(i, slice):
            return [self._app(k) for k in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"app index {i} out of range for {n} apps")
        return self._app(i % n)

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, AbcSequence) or len(other) != len(self):
            return False
        return all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable-looking, like a list


class SingleCallApps(LazyApps):
    """``len(arrivals)`` single-call apps of one ``kind``: app ``i`` has id ``app_id(i)``,
    arrives at ``arrivals[i]`` s, sends ``prompt(i)`` and generates ``output_tokens[i]``
    tokens; ``prompt_tokens[i]`` is the length of ``prompt(i)`` (tokens), for validation and
    sizing without making the prompt. Every app is foreground, or every one ``background``."""

    def __init__(self, arrivals: np.ndarray, output_tokens: np.ndarray,
                 prompt_tokens: np.ndarray, app_id: Callable[[int], str],
                 prompt: Callable[[int], tuple[Piece, ...]], kind: str,
                 hints: CallHints = NO_HINTS, background: bool = False) -> None:
        self.arrivals = np.asarray(arrivals, dtype=np.float64)
        self.output_tokens = np.asarray(output_tokens, dtype=np.int64)
        self.prompt_tokens = np.asarray(prompt_tokens, dtype=np.int64)
        if not len(self.arrivals) == len(self.output_tokens) == len(self.prompt_tokens):
            raise ValueError("arrivals, output_tokens and prompt_tokens differ in length")
        self.app_id = app_id
        self.prompt = prompt
        self.kind = kind
        self.hints = hints
        self.background = background

    def __len__(self) -> int:
        return len(self.arrivals)

    def __iter__(self) -> Iterator[App]:
        return (self._app(i) for i in range(len(self)))

    def _app(self, i: int) -> App:
        return single_call_app(self.app_id(i), float(self.arrivals[i]), self.prompt(i),
                               int(self.output_tokens[i]), kind=self.kind, hints=self.hints,
                               background=self.background)

    def ids(self) -> list[str]:
        """Every app's id, in order (for the run's apps table)."""
        return [self.app_id(i) for i in range(len(self))]

    def validate(self) -> SingleCallApps:
        """Check on the arrays what :func:`~parrotsim.workloads.app.validate_apps` checks on
        apps (finite arrival times, positive token counts and hint) plus arrival times that
        never decrease (the simulator starts the apps in order); return the stream or raise
        :class:`AppError` naming the first bad app. Ids are distinct by construction."""
        bad = ~np.isfinite(self.arrivals)
        if bad.any():
            i = int(np.argmax(bad))
            raise AppError(f"app {self.app_id(i)}: arrival time must be a finite number of "
                           f"seconds, got {self.arrivals[i]}")
        for name, values in (("output_tokens", self.output_tokens),
                             ("prompt tokens", self.prompt_tokens)):
            if len(values) and values.min() <= 0:
                i = int(np.argmax(values <= 0))
                raise AppError(f"app {self.app_id(i)}, call 'call': {name} must be positive, "
                               f"got {values[i]}")
        hint = self.hints.max_requests_per_engine
        if hint is not None and hint <= 0 and len(self):
            raise AppError(f"app {self.app_id(0)}, call 'call': max_requests_per_engine must "
                           f"be positive, got {hint}")
        back = np.diff(self.arrivals) < 0
        if back.any():
            i = int(np.argmax(back)) + 1
            raise AppError(f"app {self.app_id(i)}: arrives at {self.arrivals[i]} s, before the "
                           "app ahead of it in the stream")
        return self


class AppsThenStream(LazyApps):
    """The apps of ``front`` (made up front), then those of ``stream``: a read-only sequence
    whose indexing and iteration give the apps the list ``front + list(stream)`` holds. The
    simulator starts the apps of ``front`` before the run, then the stream's as they arrive
    (:mod:`parrotsim.sim.harness.arrival_process`)."""

    def __init__(self, front: list[App], stream: SingleCallApps) -> None:
        self.front = list(front)
        self.stream = stream

    def __len__(self) -> int:
        return len(self.front) + len(self.stream)

    def __iter__(self) -> Iterator[App]:
        yield from self.front
        yield from self.stream

    def _app(self, i: int) -> App:
        k = len(self.front)
        return self.front[i] if i < k else self.stream._app(i - k)

    def validate(self) -> AppsThenStream:
        """Validate ``front`` as a list of apps (:func:`~parrotsim.workloads.app.validate_apps`)
        and the stream on its arrays; no id of ``front`` may be one of the stream's."""
        self.front = validate_apps(self.front)
        self.stream.validate()
        clash = {a.app_id for a in self.front} & set(self.stream.ids())
        if clash:
            raise AppError(f"two apps share the id {sorted(clash)[0]!r}")
        return self


def total_calls(apps: AbcSequence[App]) -> int:
    """Calls of ``apps`` (one per app of a stream, without making the apps)."""
    if isinstance(apps, SingleCallApps):
        return len(apps)
    if isinstance(apps, AppsThenStream):
        return sum(len(app.calls) for app in apps.front) + len(apps.stream)
    return sum(len(app.calls) for app in apps)
