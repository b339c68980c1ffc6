"""The application model: LLM applications as DAGs of calls over semantic variables.

Everything is token counts and content identities; no text is simulated.

* :class:`Text` is constant prompt text. Equal text has an equal ``content_id`` (for example every
  Productivity-GPT request starts with ``gpts/productivity/system``), so a prefix cache can see the
  sharing.
* :class:`Ref` points at a semantic variable (:class:`Var`) whose value is produced by one call of
  the app, or is an input of the app with a known length.
* :class:`Call` is one LLM request: prompt pieces, the variable it produces, how many tokens it
  generates (outputs always run to their length, as in the paper) and optional dispatch hints.
* :class:`App` is one application instance: its arrival time, its calls, the final outputs it
  fetches with a performance criterion, and how its client submits calls.

:func:`validate_app` rejects cycles, dangling references, variables with two producers and
non-positive lengths with an :class:`AppError` that names the app and the call.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

Criterion = Literal["latency", "throughput"]


class AppError(ValueError):
    """An application DAG that cannot be simulated (the message names the app and call)."""


@dataclass(frozen=True, slots=True)
class Text:
    """Constant prompt text of ``tokens`` tokens; equal text has an equal ``content_id``."""

    content_id: str
    tokens: int


@dataclass(frozen=True, slots=True)
class Ref:
    """A placeholder in a prompt, filled with the value of semantic variable ``var``."""

    var: str


Piece = Text | Ref


@dataclass(frozen=True, slots=True)
class Var:
    """A semantic variable. Inputs of the app carry their length in tokens; outputs of calls don't."""

    name: str
    tokens: int | None = None


@dataclass(frozen=True, slots=True)
class CallHints:
    """Per-call dispatch hints (Parrot's ``DispatchAnnotation``).

    ``max_requests_per_engine``: the call only runs on an engine holding fewer requests than this
    (Fig 19 marks chat calls 16 and the reduce 32). ``None`` means no hint.
    """

    max_requests_per_engine: int | None = None


@dataclass(frozen=True, slots=True)
class Call:
    """One LLM request: prompt pieces, output variable and output length (tokens).

    ``after`` names calls that must finish before this one starts although their outputs are not
    in its prompt (a data-free edge, e.g. MetaGPT's round barrier, where the history enters the
    next round's prompt as constant text of the logged length).
    """

    name: str
    prompt: tuple[Piece, ...]
    output: str
    output_tokens: int
    hints: CallHints = CallHints()
    after: tuple[str, ...] = ()


SubmitMode = Literal["concurrent", "sequential"]


@dataclass(slots=True)
class App:
    """One application instance arriving at ``arrival`` seconds.

    ``inputs`` maps input variables to their length in tokens. ``outputs`` are the variables the
    client fetches at the end, with ``criterion``. ``stages`` (optional) groups call names into the
    submission batches a Parrot client sends one after another (e.g. map calls, then the reduce);
    the default is one stage holding every call. ``submit`` says whether the calls of a stage are
    posted concurrently (Parrot's batch mode) or one after another. A ``background`` app (Fig
    12a's load) does not count towards the run's end: the run stops when every foreground app is
    done.
    """

    app_id: str
    arrival: float
    calls: tuple[Call, ...]
    outputs: tuple[str, ...]
    inputs: dict[str, int] = field(default_factory=dict)
    criterion: Criterion = "latency"
    stages: tuple[tuple[str, ...], ...] = ()
    submit: SubmitMode = "concurrent"
    kind: str = "app"
    background: bool = False

    def producer_of(self) -> dict[str, Call]:
        """Map each produced variable to the call producing it."""
        return {c.output: c for c in self.calls}

    def var_tokens(self, var: str) -> int:
        """Length of a variable's value in tokens (input length or producer's output length)."""
        if var in self.inputs:
            return self.inputs[var]
        for c in self.calls:
            if c.output == var:
                return c.output_tokens
        raise AppError(f"app {self.app_id}: unknown variable {var!r}")


def prompt_tokens(app: App, call: Call, lengths: dict[str, int] | None = None) -> int:
    """Total prompt length of ``call`` in tokens, with references resolved."""
    lengths = lengths if lengths is not None else var_lengths(app)
    return sum(p.tokens if isinstance(p, Text) else lengths[p.var] for p in call.prompt)


def var_lengths(app: App) -> dict[str, int]:
    """Length in tokens of every variable of ``app``."""
    out = dict(app.inputs)
    out.update({c.output: c.output_tokens for c in app.calls})
    return out


def call_inputs(call: Call) -> tuple[str, ...]:
    """Variables referenced by ``call``'s prompt, in prompt order, without repeats."""
    seen: dict[str, None] = {}
    for p in call.prompt:
        if isinstance(p, Ref):
            seen.setdefault(p.var, None)
    return tuple(seen)


def call_dependencies(app: App, call: Call,
                      producers: dict[str, str] | None = None) -> tuple[str, ...]:
    """Names of the calls that must finish before ``call``: producers of its inputs, then the
    calls in ``call.after``; without repeats. ``producers`` (variable -> call name) may be
    passed when asking for many calls of one app."""
    if producers is None:
        producers = {c.output: c.name for c in app.calls}
    deps: dict[str, None] = {}
    for var in call_inputs(call):
        if var in producers:
            deps.setdefault(producers[var], None)
    for name in call.after:
        deps.setdefault(name, None)
    return tuple(deps)


def topological_order(app: App) -> list[Call]:
    """Calls of ``app`` in an order where producers come before consumers (stable)."""
    by_name = {c.name: c for c in app.calls}
    producers = {c.output: c.name for c in app.calls}
    order: list[Call] = []
    state: dict[str, int] = {}  # 1 = visiting, 2 = done

    def visit(call: Call, path: list[str]) -> None:
        mark = state.get(call.name)
        if mark == 2:
            return
        if mark == 1:
            cycle = " -> ".join([*path[path.index(call.name):], call.name])
            raise AppError(f"app {app.app_id}: call {call.name!r} is on a cycle ({cycle})")
        state[call.name] = 1
        for dep in call_dependencies(app, call, producers):
            visit(by_name[dep], [*path, call.name])
        state[call.name] = 2
        order.append(call)

    for call in app.calls:
        visit(call, [])
    return order


def validate_app(app: App) -> App:
    """Check the DAG of ``app`` and that it arrives at a finite time; return it unchanged or
    raise :class:`AppError`."""
    if not math.isfinite(app.arrival):  # an app arriving never would keep its run waiting
        raise AppError(f"app {app.app_id}: arrival time must be a finite number of seconds, "
                       f"got {app.arrival}")
    names: set[str] = set()
    producers: dict[str, str] = {}
    for call in app.calls:
        where = f"app {app.app_id}, call {call.name!r}"
        if call.name in names:
            raise AppError(f"{where}: two calls share this name")
        names.add(call.name)
        if call.output_tokens <= 0:
            raise AppError(f"{where}: output_tokens must be positive, got {call.output_tokens}")
        if call.output in producers:
            raise AppError(
                f"{where}: variable {call.output!r} has two producers "
                f"({producers[call.output]!r} and {call.name!r})"
            )
        if call.output in app.inputs:
            raise AppError(f"{where}: variable {call.output!r} is an app input and an output")
        producers[call.output] = call.name
        for piece in call.prompt:
            if isinstance(piece, Text) and piece.tokens <= 0:
                raise AppError(f"{where}: text {piece.content_id!r} has {piece.tokens} tokens")
        hint = call.hints.max_requests_per_engine
        if hint is not None and hint <= 0:
            raise AppError(f"{where}: max_requests_per_engine must be positive, got {hint}")
    for var, tokens in app.inputs.items():
        if tokens <= 0:
            raise AppError(f"app {app.app_id}: input {var!r} has non-positive length {tokens}")
    for call in app.calls:
        for dep in call.after:
            if dep not in names:
                raise AppError(f"app {app.app_id}, call {call.name!r}: 'after' names unknown "
                               f"call {dep!r}")
        for var in call_inputs(call):
            if var not in producers and var not in app.inputs:
                raise AppError(
                    f"app {app.app_id}, call {call.name!r}: reference to {var!r}, which no call "
                    "produces and which is not an input"
                )
    for var in app.outputs:
        if var not in producers:
            raise AppError(f"app {app.app_id}: final output {var!r} is produced by no call")
    if app.stages:
        staged = [n for stage in app.stages for n in stage]
        if sorted(staged) != sorted(names):
            raise AppError(f"app {app.app_id}: stages must list every call exactly once")
    if len(app.calls) != 1 or call_dependencies(app, app.calls[0]):  # one call: acyclic
        topological_order(app)                                       # unless it needs itself
    return app


def validate_apps(apps: Iterable[App]) -> list[App]:
    """Validate every app; also reject duplicate app ids."""
    out: list[App] = []
    ids: set[str] = set()
    for app in apps:
        if app.app_id in ids:
            raise AppError(f"two apps share the id {app.app_id!r}")
        ids.add(app.app_id)
        out.append(validate_app(app))
    return out


def single_call_app(
    app_id: str,
    arrival: float,
    prompt: Sequence[Piece],
    output_tokens: int,
    kind: str = "request",
    hints: CallHints = CallHints(),
    background: bool = False,
) -> App:
    """An app made of one call (chat requests, trace rows, background load)."""
    call = Call(name="call", prompt=tuple(prompt), output="out", output_tokens=output_tokens,
                hints=hints)
    return App(app_id=app_id, arrival=arrival, calls=(call,), outputs=("out",), kind=kind,
               background=background)
