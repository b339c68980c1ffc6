"""Statistics of generated apps: sizes, token counts, prefix sharing, DAG shape.

Shared prefix: a call's prompt is a sequence of pieces, each identified by its content (a
``Text``'s ``content_id``; a ``Ref``'s app and variable). Its shared prefix is the longest run of
leading pieces that at least one other call of the workload also starts with, in tokens; this is
what a prefix cache working at semantic-variable boundaries could reuse. All counts are tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from parrotsim.workloads.app import (
    App,
    Call,
    Text,
    call_dependencies,
    topological_order,
    var_lengths,
)

CallKey = tuple[str, str]  # (app_id, call name)


@dataclass(frozen=True, slots=True)
class CallStat:
    """Prompt, shared-prefix and output tokens of one call."""

    prompt: int
    shared: int
    output: int


def call_stats(apps: Sequence[App]) -> dict[CallKey, CallStat]:
    """Per call of ``apps``: prompt tokens, shared-prefix tokens (see module doc), output tokens.

    Builds a trie over piece identities of every prompt; a node visited by two or more calls is
    shared.
    """
    children: list[dict[tuple, int]] = [{}]
    visits: list[int] = [0]
    paths: dict[CallKey, list[tuple[int, int]]] = {}  # call -> [(node, tokens so far)]
    outputs: dict[CallKey, int] = {}
    for app in apps:
        lengths = var_lengths(app)
        for call in app.calls:
            node, tokens, path = 0, 0, []
            for piece in call.prompt:
                if isinstance(piece, Text):
                    ident: tuple = ("t", piece.content_id, piece.tokens)
                    tokens += piece.tokens
                else:
                    ident = ("r", app.app_id, piece.var)
                    tokens += lengths[piece.var]
                nxt = children[node].get(ident)
                if nxt is None:
                    nxt = len(children)
                    children[node][ident] = nxt
                    children.append({})
                    visits.append(0)
                visits[nxt] += 1
                node = nxt
                path.append((node, tokens))
            key = (app.app_id, call.name)
            paths[key] = path
            outputs[key] = call.output_tokens
    out = {}
    for key, path in paths.items():
        shared = max((t for n, t in path if visits[n] >= 2), default=0)
        out[key] = CallStat(path[-1][1] if path else 0, shared, outputs[key])
    return out


def dag_levels(app: App) -> list[list[Call]]:
    """Calls grouped by depth: level 0 has no dependencies, level d+1 waits on level d."""
    by_name = {c.name: c for c in app.calls}
    depth: dict[str, int] = {}
    for call in topological_order(app):
        deps = call_dependencies(app, call)
        depth[call.name] = 1 + max((depth[d] for d in deps), default=-1)
    levels: list[list[Call]] = [[] for _ in range(1 + max(depth.values(), default=-1))]
    for name, d in depth.items():
        levels[d].append(by_name[name])
    return levels


def percentiles(values: Sequence[int], qs: Sequence[int] = (10, 50, 90, 99)) -> dict[str, float]:
    """``{"p10": ..., "max": ...}`` of ``values`` (empty input gives NaN)."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return {**{f"p{q}": float("nan") for q in qs}, "max": float("nan")}
    return {**{f"p{q}": float(np.percentile(arr, q)) for q in qs}, "max": float(arr.max())}


@dataclass(frozen=True, slots=True)
class WorkloadSummary:
    """Aggregate statistics of one generated workload."""

    apps: int
    kinds: dict[str, int]
    calls_per_app: tuple[int, float, int]  # min, mean, max
    tokens_per_app: tuple[int, float, int]  # prompt + output tokens: min, mean, max
    shared_fraction: float  # shared-prefix tokens / prompt tokens, over all calls
    prompt_pct: dict[str, float]
    output_pct: dict[str, float]
    depth: int  # longest dependency chain, in calls, over all apps
    width: int  # most calls on one DAG level of one app
    first_arrival: float
    last_arrival: float


def _span(values: list[int]) -> tuple[int, float, int]:
    return (min(values), float(np.mean(values)), max(values)) if values else (0, 0.0, 0)


def summarize(apps: Sequence[App], stats: dict[CallKey, CallStat] | None = None
              ) -> WorkloadSummary:
    """Summary of ``apps``; pass ``stats`` from :func:`call_stats` to reuse it."""
    stats = stats if stats is not None else call_stats(apps)
    kinds: dict[str, int] = {}
    tokens, depth, width = [], 0, 0
    for app in apps:
        kinds[app.kind] = kinds.get(app.kind, 0) + 1
        tokens.append(sum(stats[(app.app_id, c.name)].prompt + c.output_tokens
                          for c in app.calls))
        levels = dag_levels(app)
        depth = max(depth, len(levels))
        width = max(width, max((len(lv) for lv in levels), default=0))
    prompts = [s.prompt for s in stats.values()]
    total_prompt = sum(prompts)
    shared = sum(s.shared for s in stats.values())
    arrivals = [a.arrival for a in apps] or [0.0]
    return WorkloadSummary(
        apps=len(apps), kinds=kinds, calls_per_app=_span([len(a.calls) for a in apps]),
        tokens_per_app=_span(tokens),
        shared_fraction=shared / total_prompt if total_prompt else 0.0,
        prompt_pct=percentiles(prompts), output_pct=percentiles([s.output for s in stats.values()]),
        depth=depth, width=width, first_arrival=min(arrivals), last_arrival=max(arrivals))
