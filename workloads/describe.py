"""What ``parrotsim workloads list`` and ``parrotsim workloads describe`` print.

``describe NAME --knob value ...`` builds the workload with the given knobs (``--chunk-size
1024`` sets the config field ``chunk_size``; list fields take ``0,1,2`` or a repeated knob;
values are coerced by the config's pydantic types) and a seed, then prints calls and tokens per
app, the shared-prefix fraction (see ``parrotsim.workloads.stats``), prompt and output length
percentiles, DAG depth and width, a per-stage table and a text picture of the largest app's DAG.
Token counts are LLaMA tokens; times are seconds.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Sequence

import numpy as np
from pydantic import TypeAdapter, ValidationError

from parrotsim.workloads.app import App
from parrotsim.workloads.catalog import WORKLOADS
from parrotsim.workloads.registry import WorkloadConfig
from parrotsim.workloads.stats import CallKey, CallStat, call_stats, dag_levels, summarize


class KnobError(ValueError):
    """An unknown workload, an unknown knob or a value the config rejects."""


def list_workloads() -> list[tuple[str, str, str]]:
    """(kind, figures, first docstring line) of every registered workload, sorted by kind."""
    out = []
    for kind, cls in sorted(WORKLOADS.items()):
        doc = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
        out.append((kind, cls.figure or "-", doc))
    return out


def knobs(cls: type[WorkloadConfig]) -> list[str]:
    """Command-line spellings of the config's fields (``--chunk-size``)."""
    return ["--" + f.replace("_", "-") for f in cls.model_fields if f != "kind"]


def _is_list(annotation: object) -> bool:
    if typing.get_origin(annotation) is list:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_is_list(a) for a in typing.get_args(annotation))
    return False


def _coerce(annotation: object, text: str) -> object:
    """The raw string if the field's type accepts it, else its JSON reading, else the string."""
    adapter = TypeAdapter(annotation)
    try:
        adapter.validate_python(text)
        return text
    except ValidationError:
        pass
    try:
        value = json.loads(text)
        adapter.validate_python(value)
        return value
    except (ValidationError, ValueError):
        return text  # let the config report the problem


def _pairs(kind: str, argv: Sequence[str]) -> list[tuple[str, str]]:
    pairs, i = [], 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("--") or arg == "--":
            raise KnobError(f"workload {kind}: expected a knob like --name value, got {arg!r}")
        name, eq, value = arg[2:].partition("=")
        if not eq:
            if i + 1 >= len(argv):
                raise KnobError(f"workload {kind}: knob --{name} needs a value")
            value = argv[i + 1]
            i += 1
        pairs.append((name, value))
        i += 1
    return pairs


def parse_knobs(kind: str, argv: Sequence[str]) -> WorkloadConfig:
    """Build the config of workload ``kind`` from ``["--knob", "value", ...]``."""
    if kind not in WORKLOADS:
        raise KnobError(f"unknown workload {kind!r} (known: {', '.join(sorted(WORKLOADS))})")
    cls = WORKLOADS[kind]
    fields = cls.model_fields
    data: dict[str, object] = {}
    for name, value in _pairs(kind, argv):
        field = name.replace("-", "_")
        if field not in fields or field == "kind":
            raise KnobError(f"workload {kind}: unknown knob --{name} "
                            f"(knobs: {' '.join(knobs(cls)) or 'none'})")
        annotation = fields[field].annotation
        if _is_list(annotation):
            try:
                items = json.loads(value) if value.strip().startswith("[") else [
                    v.strip() for v in value.split(",") if v.strip()]
            except ValueError:
                raise KnobError(f"workload {kind}: knob --{name}: not a list: {value!r}") from None
            if not isinstance(items, list):
                items = [items]
            data[field] = [*typing.cast(list, data.get(field, [])), *items]
        elif field in data:
            raise KnobError(f"workload {kind}: knob --{name} given twice")
        else:
            data[field] = _coerce(annotation, value)
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"])
            where = f"--{loc.replace('_', '-')}" if loc else "knobs"
            problems.append(f"{where}: {err['msg']}")
        raise KnobError(f"workload {kind}: " + "; ".join(problems)) from None


def _fmt_pct(p: dict[str, float]) -> str:
    return "  ".join(f"{k} {v:,.0f}" for k, v in p.items())


def _calls_label(calls: list) -> str:
    names = [c.name for c in calls]
    return names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}"


def stage_lines(app: App, stats: dict[CallKey, CallStat]) -> list[str]:
    """One line per submission stage of ``app``: calls, tokens and shared-prefix fraction."""
    by_name = {c.name: c for c in app.calls}
    lines = [f"stages of {app.app_id} (tokens; shared = shared-prefix tokens of the prompts):",
             f"  {'stage':>5} {'calls':>5} {'prompt/call':>11} {'shared/call':>11} "
             f"{'shared %':>8} {'prompt sum':>10} {'output sum':>10}  calls"]
    for i, stage in enumerate(app.stages or (tuple(by_name),)):
        st = [stats[(app.app_id, n)] for n in stage]
        prompt, shared = sum(s.prompt for s in st), sum(s.shared for s in st)
        frac = 100.0 * shared / prompt if prompt else 0.0
        lines.append(f"  {i:>5} {len(st):>5} {prompt / len(st):>11,.0f} {shared / len(st):>11,.0f}"
                     f" {frac:>7.1f}% {prompt:>10,} {sum(s.output for s in st):>10,}"
                     f"  {_calls_label([by_name[n] for n in stage])}")
    return lines


def dag_lines(app: App, stats: dict[CallKey, CallStat], max_levels: int = 12) -> list[str]:
    """A text picture of ``app``'s DAG, one row per depth level (middle levels elided)."""
    levels = dag_levels(app)
    shown = list(range(len(levels)))
    if len(levels) > max_levels:
        half = max_levels // 2
        shown = shown[:half] + [-1] + shown[-half:]
    lines = [f"DAG of {app.app_id} ({len(app.calls)} calls, {len(levels)} levels):"]
    for k, lv in enumerate(shown):
        if k:
            lines.append("        |")
        if lv < 0:
            lines.append(f"       ... {len(levels) - 2 * (max_levels // 2)} more levels ...")
            continue
        calls = levels[lv]
        st = [stats[(app.app_id, c.name)] for c in calls]
        fan = "[" + "o" * min(len(calls), 16) + ("+" if len(calls) > 16 else "") + "]"
        lines.append(f"  L{lv:<3} {fan} {len(calls)} call{'s' if len(calls) > 1 else ''}: "
                     f"{_calls_label(calls)}  prompt ~{np.mean([s.prompt for s in st]):,.0f}"
                     f"  out ~{np.mean([s.output for s in st]):,.0f}")
    return lines


def describe(config: WorkloadConfig, seed: int = 0) -> str:
    """The text ``parrotsim workloads describe`` prints for ``config`` built with ``seed``."""
    apps = config.build(np.random.default_rng(seed))
    stats = call_stats(apps)
    s = summarize(apps, stats)
    knob_text = " ".join(f"{k}={v}" for k, v in config.model_dump().items() if k != "kind")
    kinds = ", ".join(f"{k} {n}" for k, n in s.kinds.items())
    lines = [
        f"workload {config.kind} (Fig {type(config).figure or '-'}), seed {seed}",
        f"knobs: {knob_text}",
        f"apps: {s.apps} ({kinds}); arrivals {s.first_arrival:.2f} .. {s.last_arrival:.2f} s",
        "calls per app: min {} / mean {:.1f} / max {}".format(*s.calls_per_app),
        "tokens per app (prompt + output): min {:,} / mean {:,.0f} / max {:,}".format(
            *s.tokens_per_app),
        f"shared-prefix fraction of prompt tokens: {100 * s.shared_fraction:.1f}%",
        f"prompt tokens per call: {_fmt_pct(s.prompt_pct)}",
        f"output tokens per call: {_fmt_pct(s.output_pct)}",
        f"DAG depth {s.depth} calls, width {s.width} calls",
    ]
    if apps:
        biggest = max(apps, key=lambda a: len(a.calls))
        if len(biggest.stages) > 1:
            lines += stage_lines(biggest, stats)
        lines += dag_lines(biggest, stats)
    return "\n".join(lines)
