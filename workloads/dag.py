"""DAG analysis of an app for Parrot's manager: dependencies, depth, objectives, task groups.

Pure functions over :class:`~parrotsim.workloads.app.App` (no SimPy). Edges are the calls' dependencies
(producers of referenced variables plus data-free ``after`` edges).

Performance-objective deduction (paper section 5.2, experiments.md 3.1) walks the DAG backwards
from the app's final outputs (``app.outputs`` with ``app.criterion``), as the paper's text
reads: a throughput output makes every producer and ancestor throughput-preferred. A latency
output makes its producer latency-sensitive; walking backwards, the immediate predecessors of a
latency-sensitive call are latency-sensitive too, except *parallel* predecessors, which form a
task group whose whole completion time matters (throughput-preferred): two or more calls at the
same depth with the same set of consumers (Fig 9: the shared predecessor of the two output
producers is latency-sensitive, the fan-in of each producer is a group; map-reduce: the maps are
one group feeding the latency-sensitive reduce; a chain: all latency-sensitive). Ancestors of a
throughput call are throughput. (The HEAD refactor's ``activate_sv``, experiments.md 3.3, copies
the criterion unchanged to every ancestor and groups all predecessors of one consumer; that
reading is not modelled.)

The artifact that produced the paper's figures had no automatic pass (experiments.md 3.2, 9):
deduction was realized through configs and per-call annotations; ``deduce_objectives(app,
enabled=False)`` returns no objectives, so only explicit hints apply. Calls no final output
depends on are throughput-preferred (nobody waits for them).

:func:`lower` turns an objective into per-engine limits as HEAD's ``_lower_criteria`` did:
latency -> at most 4 requests / 4096 tokens on the engine, throughput -> unbounded; an explicit
``CallHints.max_requests_per_engine`` (Fig 19's 16 and 32) overrides the request limit.
"""

from __future__ import annotations

from typing import Literal

from parrotsim.workloads.app import App, CallHints, call_dependencies, topological_order

Objective = Literal["latency", "throughput"]  # same as parrotsim.sim.model.cluster_policy.Objective

UNBOUNDED_REQUESTS = 1 << 30
UNBOUNDED_TOKENS = 1 << 60
LATENCY_MAX_REQUESTS = 4
LATENCY_MAX_TOKENS = 4096


def dependencies(app: App) -> dict[str, tuple[str, ...]]:
    """Call name -> names of the calls it depends on (its producers and ``after`` calls)."""
    made_by = producers(app)
    return {c.name: call_dependencies(app, c, made_by) for c in app.calls}


def producers(app: App) -> dict[str, str]:
    """Produced variable -> name of the call producing it."""
    return {c.output: c.name for c in app.calls}


def consumers(app: App) -> dict[str, tuple[str, ...]]:
    """Call name -> names of the calls depending on it, in app order."""
    out: dict[str, list[str]] = {c.name: [] for c in app.calls}
    for name, deps in dependencies(app).items():
        for d in deps:
            out[d].append(name)
    return {k: tuple(v) for k, v in out.items()}


def depths(app: App) -> dict[str, int]:
    """Topological depth of every call: 0 without dependencies, else 1 + deepest dependency."""
    deps = dependencies(app)
    depth: dict[str, int] = {}
    for call in topological_order(app):
        depth[call.name] = 1 + max((depth[d] for d in deps[call.name]), default=-1)
    return depth


call_depths = depths  # the name the simulator imports


def task_groups(app: App) -> dict[str, str]:
    """Call name -> task-group id for calls in a group (calls in no group are absent).

    A group: calls at the same depth with the same non-empty set of consumers, at least two of
    them, none producing a latency-critical final output. The id is ``"{app_id}/{consumer}"``
    (first consumer in app order; ``+N`` when there are N more, ``#k`` if that is taken).
    """
    cons = consumers(app)
    order = [c.name for c in topological_order(app)]
    keys: dict[tuple, list[str]] = {}
    depth = depths(app)
    exclude = _latency_producers(app)
    for name in order:
        if cons[name] and name not in exclude:
            keys.setdefault((frozenset(cons[name]), depth[name]), []).append(name)
    rank = {c.name: i for i, c in enumerate(app.calls)}
    out: dict[str, str] = {}
    used: set[str] = set()
    for (cset, _), members in keys.items():
        if len(members) < 2:
            continue
        first = sorted(cset, key=rank.__getitem__)
        gid = f"{app.app_id}/{first[0]}" + (f"+{len(first) - 1}" if len(first) > 1 else "")
        base, k = gid, 1
        while gid in used:
            gid, k = f"{base}#{k}", k + 1
        used.add(gid)
        out.update(dict.fromkeys(members, gid))
    return out


def deduce_objectives(app: App, enabled: bool = True) -> dict[str, Objective]:
    """Call name -> deduced objective (empty when ``enabled`` is False: the artifact's way)."""
    if not enabled:
        return {}
    order = topological_order(app)
    cons = consumers(app)
    final = _latency_producers(app) if app.criterion == "latency" else set()
    out_producers = {producers(app)[v] for v in app.outputs}
    groups = task_groups(app)
    objective: dict[str, Objective] = {}
    reached: set[str] = set(out_producers)
    for call in reversed(order):  # consumers are decided before their producers
        name = call.name
        if any(c in reached for c in cons[name]):
            reached.add(name)
        if name not in reached:
            objective[name] = "throughput"
        elif name in final:
            objective[name] = "latency"
        elif name not in groups and any(objective.get(c) == "latency" for c in cons[name]):
            objective[name] = "latency"
        else:
            objective[name] = "throughput"
    return {c.name: objective[c.name] for c in app.calls}


def lower(objective: Objective | None, hints: CallHints | int | None = None,
          latency_max_requests: int = LATENCY_MAX_REQUESTS,
          latency_max_tokens: int = LATENCY_MAX_TOKENS) -> tuple[int, int]:
    """(max requests, max tokens) per engine for a call with ``objective`` and ``hints``.

    Latency -> (4, 4096) by default, throughput or no objective -> unbounded; an explicit request
    hint (``CallHints`` or its int value) replaces the request limit.
    """
    if objective == "latency":
        reqs, toks = latency_max_requests, latency_max_tokens
    else:
        reqs, toks = UNBOUNDED_REQUESTS, UNBOUNDED_TOKENS
    hint = hints.max_requests_per_engine if isinstance(hints, CallHints) else hints
    return (hint if hint is not None else reqs), toks


def _latency_producers(app: App) -> set[str]:
    """Calls producing a final output of a latency-criterion app."""
    if app.criterion != "latency":
        return set()
    prod = producers(app)
    return {prod[v] for v in app.outputs}
