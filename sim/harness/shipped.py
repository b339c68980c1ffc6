"""The experiment files shipped with parrotsim (package data), found by name.

``paper/fig11`` names ``experiments/paper/fig11.yaml`` of the package, whether it is installed
from a wheel or edited in a checkout; a name that is an existing file is that file.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def shipped_experiments() -> dict[str, Path]:
    """Every shipped experiment by name (``example_sweep``, ``paper/fig11``, ...)."""
    root = Path(str(resources.files("parrotsim.experiments")))
    return {p.relative_to(root).with_suffix("").as_posix(): p
            for p in sorted(root.rglob("*.yaml"))}


def resolve_experiment(name_or_path: str | Path) -> Path:
    """The file an experiment argument names: an existing path, else a shipped experiment
    (with or without ``.yaml``, with or without a leading ``experiments/``); a name that is
    neither is returned unchanged, so reading it reports the missing file."""
    path = Path(name_or_path)
    if path.exists():
        return path
    name = path.as_posix().removesuffix(".yaml").removeprefix("experiments/")
    return shipped_experiments().get(name, path)
