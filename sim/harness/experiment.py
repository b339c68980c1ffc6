"""Experiment files: a base run, named variants, sweep axes and seeds, expanded into runs.

An experiment file (see ``experiments/README.md``) is validated into an :class:`ExperimentSpec`
and expanded into one :class:`ExpandedRun` per (variant, sweep combination, seed) not dropped
by ``exclude``. Each run's config is the base ``run`` mapping with the variant's and the sweep's
dotted-path overrides applied (in that order; an override replaces the whole value at its
path), validated into a :class:`~parrotsim.sim.harness.config.RunConfig`.

Every error in the file is reported, each as ``FILE:LINE:COL: field.path: message``; an error
inside an expanded run points at the override, sweep value or base field it came from. A run
that cannot be made from its inputs is such an error too (:mod:`sim.harness.feasibility`): its
trace files are read and checked here, and a KV cache without a block or a trace row no engine
can run names its field.
:func:`load_experiment` raises :class:`ExperimentError` (a ``UsageError``: exit status 2) before
anything is written.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, ValidationError

from parrotsim.core.config import StrictConfig
from parrotsim.core.errors import UsageError
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.feasibility import RunInputError, check_run
from parrotsim.sim.harness.fingerprint import InputFileError
from parrotsim.sim.harness.plugins import PluginError, import_plugin, refresh_config, resolve
from parrotsim.sim.harness.shipped import resolve_experiment
from parrotsim.sim.harness.store import run_key
from parrotsim.sim.harness.yaml_positions import (
    Issues,
    Path_,
    Positions,
    YamlError,
    data_path,
    dotted,
    get_path,
    load_yaml,
    source_path,
)
from parrotsim.sim.model.profile import ProfileError

RESERVED_LABELS = ("variant", "seed")
DEFAULT_VARIANT = "base"
_NO = object()


class ExperimentSpec(StrictConfig):
    """The top level of an experiment file."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    run: dict[str, Any]
    variants: dict[str, dict[str, Any]] = {}
    sweep: dict[str, Annotated[list[Any], Field(min_length=1)]] = {}
    seeds: list[Annotated[int, Field(ge=0)]] = Field(default=[0], min_length=1)
    exclude: list[dict[str, Any]] = []
    plugins: list[str] = []


@dataclass(frozen=True)
class ExpandedRun:
    """One run of an experiment: its labels (variant, each sweep axis, seed), config and key."""

    labels: dict[str, Any]
    config: RunConfig
    key: str


@dataclass(frozen=True)
class Experiment:
    """A validated experiment file and its expanded runs."""

    spec: ExperimentSpec
    source: str
    runs: tuple[ExpandedRun, ...]
    positions: Positions = field(default_factory=Positions, repr=False)
    plugins: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def label_names(self) -> list[str]:
        """The label columns, in order: ``variant``, each sweep axis, ``seed``."""
        return ["variant", *self.spec.sweep, "seed"]


class ExperimentError(UsageError):
    """An invalid experiment file; ``lines`` are the ``FILE:LINE:COL: path: message`` errors."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def _raise_if_any(issues: Issues) -> None:
    if issues.found:
        raise ExperimentError(issues.lines())


def load_experiment(path: str | Path) -> Experiment:
    """Read, validate and expand an experiment file, given by path or by shipped name such as
    ``paper/fig11`` (raises :class:`ExperimentError`)."""
    path = resolve_experiment(path)
    try:
        data, positions = load_yaml(path)
    except YamlError as exc:
        raise ExperimentError([f"{exc.file}:{exc.line}:{exc.col}: <file>: {exc.message}"]) \
            from None
    return experiment_from_data(data, str(path), positions)


def experiment_from_data(data: Any, source: str = "<data>",
                         positions: Positions | None = None) -> Experiment:
    """Validate and expand an already-loaded experiment mapping."""
    issues = Issues(source, positions or Positions())
    if not isinstance(data, dict):
        issues.add((), "<root>", "an experiment file must be a mapping (name:, run:, ...)")
        _raise_if_any(issues)
    spec = _validate_spec(data, issues)
    if spec is None:
        _raise_if_any(issues)
    plugins = _load_plugins(spec, source, issues)
    runs = _expand(spec, _check_paths(spec, issues), issues)
    _raise_if_any(issues)
    return Experiment(spec, source, tuple(runs), issues.positions, plugins)


def _load_plugins(spec: ExperimentSpec, source: str, issues: Issues) -> tuple[str, ...]:
    """Import the file's plugins (see :mod:`sim.plugins`), relative to the file's folder; stop
    at a plugin that fails, as the runs naming its tags could not be checked."""
    base = Path(source).parent if Path(source).is_file() else Path.cwd()
    resolved, failed = [], False
    for i, entry in enumerate(spec.plugins):
        try:
            resolved.append(resolve(entry, base))
            import_plugin(resolved[-1])
        except PluginError as exc:
            issues.add(("plugins", i), f"plugins.{i}", str(exc))
            failed = True
    if failed:
        _raise_if_any(issues)
    refresh_config()
    return tuple(resolved)


def expand(experiment: Experiment) -> list[ExpandedRun]:
    """The experiment's runs: variants x product(sweep axes) x seeds, minus exclusions."""
    return list(experiment.runs)


def _validate_spec(data: dict, issues: Issues) -> ExperimentSpec | None:
    """Validate the top level; if only unrelated fields are bad, still return the run parts
    so that the runs' own errors are reported too."""
    try:
        return ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        bad = set()
        for err in exc.errors(include_url=False):
            loc = tuple(err["loc"])
            bad.add(loc[0] if loc else None)
            issues.add(loc, dotted(loc), err["msg"], at_key=err["type"] == "extra_forbidden")
    if bad & {None, "run", "variants", "sweep", "seeds", "exclude", "plugins"}:
        return None
    parts = {k: v for k, v in data.items() if k in ExperimentSpec.model_fields and k not in bad}
    return ExperimentSpec.model_validate({**parts, "name": "x"})


def _check_paths(spec: ExperimentSpec, issues: Issues) -> set[str]:
    """Check dotted paths, reserved names and ``exclude`` entries; return the unusable paths."""
    bad: set[str] = set()
    if "seed" in spec.run:
        issues.add(("run", "seed"), "run.seed", "set seeds with the top-level 'seeds:' list",
                   at_key=True)
    for name, overrides in spec.variants.items():
        for path in overrides:
            if not _check_path(path, ("variants", name, path), issues):
                bad.add(path)
    axes = list(spec.sweep)
    for path in axes:
        if not _check_path(path, ("sweep", path), issues):
            bad.add(path)
        for other in axes:
            if other != path and other.startswith(path + "."):
                issues.add(("sweep", other), f"sweep.{other}",
                           f"overlaps the sweep axis {path!r}", at_key=True)
    values = {"variant": list(spec.variants) or [DEFAULT_VARIANT], "seed": spec.seeds,
              **spec.sweep}
    for i, entry in enumerate(spec.exclude):
        for label, value in entry.items():
            where = ("exclude", i, label)
            if label not in values:
                issues.add(where, f"exclude.{i}.{label}", "not a label; use 'variant', 'seed' "
                           f"or a sweep axis ({', '.join(spec.sweep) or 'none'})", at_key=True)
            elif value not in values[label]:
                issues.add(where, f"exclude.{i}.{label}",
                           f"{value!r} is not one of this label's values {values[label]!r}")
    return bad


def _check_path(path: str, where: Path_, issues: Issues) -> bool:
    shown = ".".join(str(s) for s in where[:-1]) + f".{path}"
    if not path or any(not seg for seg in path.split(".")):
        issues.add(where, shown, "not a dotted field path like 'workload.rate'", at_key=True)
        return False
    head = path.split(".")[0]
    if head in RESERVED_LABELS:
        issues.add(where, shown, "set seeds with the top-level 'seeds:' list" if head == "seed"
                   else "'variant' is a label (the variants: keys), not a field", at_key=True)
        return False
    return True


def _expand(spec: ExperimentSpec, bad_paths: set[str], issues: Issues) -> list[ExpandedRun]:
    variants = spec.variants or {DEFAULT_VARIANT: {}}
    axes = list(spec.sweep.items())
    runs: list[ExpandedRun] = []
    for vname, overrides in variants.items():
        for combo in itertools.product(*(range(len(vals)) for _, vals in axes)):
            chosen = [(axis, i, vals[i]) for (axis, vals), i in zip(axes, combo, strict=True)]
            for s, seed in enumerate(spec.seeds):
                labels = {"variant": vname, **{a: v for a, _, v in chosen}, "seed": seed}
                if any(all(labels.get(k, _NO) == v for k, v in entry.items())
                       for entry in spec.exclude):
                    continue
                data = copy.deepcopy(spec.run)
                origins: dict[Path_, Path_] = {}
                sources = [(p, ("variants", vname, p), v) for p, v in overrides.items()]
                sources += [(a, ("sweep", a, i), v) for a, i, v in chosen]
                for path, where, value in sources:
                    if path in bad_paths:
                        continue
                    _set(data, path, copy.deepcopy(value), where, origins, issues)
                data["seed"] = seed
                origins[("seed",)] = ("seeds", s)
                run = _validate_run(data, origins, issues)
                if run is not None:
                    runs.append(ExpandedRun(labels, run[0], run[1]))
    if not runs and not issues.found:
        issues.add(("exclude",), "exclude", "every run is excluded")
    return runs


def _set(data: dict, path: str, value: Any, where: Path_, origins: dict[Path_, Path_],
         issues: Issues) -> None:
    """Apply one dotted-path override, remembering where in the file the value came from."""
    segs = tuple(path.split("."))
    node = data
    for i, seg in enumerate(segs[:-1]):
        child = node.setdefault(seg, {})
        if not isinstance(child, dict):
            issues.add(where, ".".join(segs[:i + 1]),
                       f"cannot set {path!r}: {'.'.join(segs[:i + 1])} is not a mapping",
                       at_key=True)
            return
        node = child
    node[segs[-1]] = value
    for old in [p for p in origins if p[:len(segs)] == segs]:
        del origins[old]
    origins[segs] = where


def _validate_run(data: dict, origins: dict[Path_, Path_],
                  issues: Issues) -> tuple[RunConfig, str] | None:
    """Validate one expanded run; map each error back to the file."""
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            path = data_path(data, tuple(err["loc"]))
            if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
                tag = str(err.get("ctx", {}).get("discriminator", "")).strip("'")
                node = get_path(data, path)
                if tag and isinstance(node, dict) and tag in node:
                    path += (tag,)
            issues.add(source_path(path, origins), dotted(path), err["msg"],
                       at_key=err["type"] == "extra_forbidden")
        return None
    try:
        key = run_key(config)
        check_run(config)
        return config, key
    except ProfileError as exc:
        path = ("cluster", "profile")
        issues.add(source_path(path, origins), dotted(path), str(exc).splitlines()[0])
        return None
    except (InputFileError, RunInputError) as exc:
        path = tuple(exc.field.split("."))
        issues.add(source_path(path, origins), exc.field, str(exc).removeprefix(f"{exc.field}: "))
        return None
