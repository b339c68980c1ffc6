"""User plugins: modules that register their own workloads, engine policies or cluster schedulers.

An experiment file lists them under ``plugins:``; each entry is either a Python file (it ends in
``.py`` or contains a ``/``; a relative path is relative to the experiment file's folder) or
the dotted name of an importable module (installed, or on ``PYTHONPATH``). Importing one runs
its ``@register_workload``, ``@register_engine_policy`` and ``@register_cluster_policy``
decorators; :func:`refresh_config` then rebuilds the tagged unions of :mod:`parrotsim.sim.harness.config` (built
when it was first imported) so that configs naming the new tags validate.

The parent process imports the plugins while loading the experiment (an entry that cannot be
imported is an error of the file: exit status 2) and every worker imports them again, from the
resolved entries, before it validates a run's config (:func:`parrotsim.sim.harness.store.execute`).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Union, get_args

from parrotsim.core.errors import UsageError
from parrotsim.sim.harness import config
from parrotsim.sim.model.cluster_policy import CLUSTER_POLICIES
from parrotsim.sim.model.engine_policy import ENGINE_POLICIES
from parrotsim.workloads.registry import WORKLOADS

MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class PluginError(UsageError):
    """A plugin entry that cannot be resolved or imported."""


def is_file_entry(entry: str) -> bool:
    """Whether ``entry`` names a Python file rather than a module."""
    return entry.endswith(".py") or "/" in entry or "\\" in entry


def resolve(entry: str, base_dir: str | Path) -> str:
    """A plugin entry as workers can import it: a file as an absolute path, a module as is."""
    if is_file_entry(entry):
        path = (Path(base_dir) / entry).resolve()
        if not path.is_file():
            raise PluginError(f"no such plugin file: {path}")
        return str(path)
    if not MODULE_NAME.match(entry):
        raise PluginError(f"{entry!r} is neither a module name (my_pkg.policies) nor a .py file")
    return entry


def import_plugin(entry: str) -> ModuleType:
    """Import a resolved entry once per process (a file under a name derived from its path)."""
    try:
        if not is_file_entry(entry):
            return importlib.import_module(entry)
        stem = re.sub(r"\W", "_", Path(entry).stem)
        name = f"_parrotsim_plugin_{stem}_{hashlib.sha256(entry.encode()).hexdigest()[:8]}"
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, entry)
        if spec is None or spec.loader is None:
            raise ImportError(f"not a Python file: {entry}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        return module
    except Exception as exc:
        raise PluginError(f"cannot import plugin {entry!r}: {type(exc).__name__}: {exc}") \
            from exc


def load_plugins(entries: Iterable[str]) -> None:
    """Import every resolved entry, then make :mod:`parrotsim.sim.harness.config` accept what they registered."""
    for entry in entries:
        import_plugin(entry)
    refresh_config()


def refresh_config() -> bool:
    """Rebuild the config unions if a registry grew since :mod:`parrotsim.sim.harness.config` built them.

    The field's annotation is replaced in place and the models rebuilt, so every module that
    imported ``RunConfig`` or ``ClusterConfig`` sees the new members. Returns whether it did.
    """
    fields = [(config.RunConfig, "workload", WORKLOADS, "kind", "WorkloadSpec"),
              (config.ClusterConfig, "engine", ENGINE_POLICIES, "policy", "EnginePolicySpec"),
              (config.ClusterConfig, "scheduler", CLUSTER_POLICIES, "policy",
               "ClusterPolicySpec")]
    changed = False
    for model, name, registry, tag, alias in fields:
        info = model.model_fields[name]
        members = tuple(registry.values())
        if (get_args(info.annotation) or (info.annotation,)) == members:
            continue
        info.annotation = Union[members] if len(members) > 1 else members[0]  # noqa: UP007
        info.discriminator = tag if len(members) > 1 else None
        setattr(config, alias, config._union(registry, tag))
        changed = True
    if changed:
        config.ClusterConfig.model_rebuild(force=True)
        config.RunConfig.model_rebuild(force=True)
    return changed
