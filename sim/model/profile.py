"""Cost profiles: the YAML files that tell the simulator how long an iteration takes on a GPU.

A profile holds metadata (GPU, model shape, dtype, where its numbers come from) and measured or
fitted curves, all in seconds for the *whole model* (every layer) of one engine:

* ``linear``: GEMMs, norms and activations vs tokens processed in the iteration;
* ``decode_paged``: paged decode attention vs KV tokens read by the whole batch; optionally
  ``decode_paged_grid``: the same kernel vs (decode sequences, KV tokens per sequence), which
  replaces the curve when given (see :class:`~parrotsim.sim.model.profile_parts.PagedGrid`);
* ``shared_prefix``: the shared-prefix kernel's prefix part vs (prefix tokens, batch size);
* ``prefill_attention``: prefill attention vs work = sum over chunks of new*(context+new/2);
  optionally ``prefill_attention_grid``: one chunk alone vs (new tokens, context tokens), a floor;
* ``iteration_overhead_s`` and per-runtime overheads (scheduler, sampling, Python) per iteration.

The curves, specs and overheads are the classes of :mod:`parrotsim.sim.model.profile_parts`.
Profiles written by ``parrotsim calibrate`` also carry a ``calibration`` block (optional):
the extent of the measured grids, past which the curves are extrapolated (:class:`~parrotsim.sim.model.profile_parts.Extent`),
and the bandwidth and GEMM rate measured in the same run.

:func:`load_profile` rejects a malformed file with a :class:`ProfileError` naming the file and
the field: every number must be finite, and every iteration the profile can cost must take a
positive time (:mod:`parrotsim.sim.model.profile_checks`). Shipped profiles live in
``calibrate/profiles/`` and are found by name.
"""

from __future__ import annotations

import hashlib
import os
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator

from parrotsim.core.config import StrictConfig
from parrotsim.core.text import read_utf8
from parrotsim.sim.model.profile_checks import iteration_time_problems
from parrotsim.sim.model.profile_parts import Calibration, Curves, GpuSpec, ModelSpec, Runtime

SCHEMA_VERSION = 1
Source = Literal["measured", "projected", "fitted", "projected+fitted", "roofline"]


class ProfileError(ValueError):
    """A profile file that cannot be used; the message names the file and the field."""


class ExtrapolationWarning(UserWarning):
    """A run or a validation queried a profile past the extent of its calibration grids."""


def past_extent_message(profile: Profile, beyond: dict[str, float]) -> str:
    """One line naming each axis of ``profile``'s extent that ``beyond`` (axis -> largest
    query past it, as :attr:`CostModel.beyond <parrotsim.sim.model.costmodel.CostModel>`
    keeps it) went past, and how far."""
    ext = profile.calibration.extent if profile.calibration else None
    parts = [f"{axis} {value:,.0f} (measured up to {getattr(ext, axis, float('nan')):,})"
             for axis, value in sorted(beyond.items())]
    return (f"profile {profile.name}: queried past the extent of its calibration grids, so "
            f"these times are extrapolated: {'; '.join(parts)}")


class Profile(StrictConfig):
    """A cost profile (see module docstring)."""

    schema_version: int
    name: str
    source: Source
    description: str = ""
    date: str = ""
    fitted_to: list[str] = []
    residuals: dict[str, float] = {}
    environment: dict[str, str] = {}
    gpu: GpuSpec
    model: ModelSpec
    dtype: Literal["fp16", "bf16"] = "fp16"
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    activation_reserve_gib: float = Field(default=2.0, ge=0)
    curves: Curves
    runtimes: dict[str, Runtime] = {}
    #: optional (schema 1 compatible): the calibration run's grid extent and measured rates
    calibration: Calibration | None = None

    @field_validator("schema_version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != SCHEMA_VERSION:
            raise ValueError(f"unsupported schema_version {v}; this parrotsim reads "
                             f"{SCHEMA_VERSION}")
        return v

    def kv_capacity_tokens(self) -> int:
        """KV tokens that fit in GPU memory after weights and activations (vLLM's rule)."""
        usable = self.gpu.memory_gib * 2**30 * self.gpu_memory_utilization
        free = usable - self.model.weight_bytes - self.activation_reserve_gib * 2**30
        return max(0, int(free // self.model.kv_bytes_per_token))

    def runtime(self, name: str) -> Runtime:
        return self.runtimes.get(name, Runtime())


def _yaml():
    from ruamel.yaml import YAML

    return YAML(typ="safe", pure=True)


def parse_profile(text: str, origin: str) -> Profile:
    """Validate YAML text into a :class:`Profile`; errors name ``origin`` and the field."""
    try:
        data = _yaml().load(text)
    except Exception as exc:  # ruamel raises several parser error types
        raise ProfileError(f"{origin}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ProfileError(f"{origin}: a profile must be a mapping")
    try:
        profile = Profile.model_validate(data)
    except ValidationError as exc:
        lines = [f"{origin}: {'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}"
                 for e in exc.errors(include_url=False)]
        raise ProfileError("\n".join(lines)) from None
    problems = iteration_time_problems(profile, Runtime())
    if problems:
        raise ProfileError("\n".join(f"{origin}: {line}" for line in problems))
    return profile


def shipped_profiles() -> dict[str, Path]:
    """Names of the profiles shipped in ``calibrate/profiles`` and their paths."""
    root = resources.files("parrotsim.calibrate.profiles")
    return {p.name.removesuffix(".yaml"): Path(str(p)) for p in root.iterdir()
            if p.name.endswith(".yaml")}


def load_profile(name_or_path: str) -> Profile:
    """Load a shipped profile by name (``a100-80gb_llama-13b``) or a profile file by path. A
    name is looked up first in the folder :data:`PROFILE_DIR_ENV` names, if set.

    Parsed profiles are cached per process by path, size and modification time, so an edited
    file is read again (and changes :func:`profile_hash`)."""
    path = Path(name_or_path)
    if not path.suffix:
        path = _shipped_path(name_or_path)
    if not path.is_file():
        raise ProfileError(f"{path}: no such profile file")
    st = path.stat()
    return _parse_file(str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns)


#: environment variable naming a folder whose ``<name>.yaml`` profiles stand in for the shipped
#: profiles of those names (to run the same experiments on other calibrations); read once per
#: process, at the first lookup of each name
PROFILE_DIR_ENV = "PARROTSIM_PROFILE_DIR"


@cache
def _shipped_path(name: str) -> Path:
    folder = os.environ.get(PROFILE_DIR_ENV)
    if folder:
        if not Path(folder).is_dir():
            raise ProfileError(f"{PROFILE_DIR_ENV}={folder}: no such folder")
        if (Path(folder) / f"{name}.yaml").is_file():
            return Path(folder) / f"{name}.yaml"
    shipped = shipped_profiles()
    if name not in shipped:
        raise ProfileError(f"unknown profile {name!r}; shipped: {', '.join(sorted(shipped))}")
    return shipped[name]


@cache
def _parse_file(path: str, size: int, mtime_ns: int, ctime_ns: int) -> Profile:
    return parse_profile(read_utf8(path, ProfileError), path)


load_profile.cache_clear = _parse_file.cache_clear  # type: ignore[attr-defined]


def profile_hash(name_or_path: str) -> str:
    """Content hash of a profile (part of every run's cache key)."""
    p = load_profile(name_or_path)
    return hashlib.sha256(p.model_dump_json(exclude_none=True).encode()).hexdigest()[:16]


def dump_profile(profile: Profile, path: Path) -> None:
    """Write a profile as YAML (atomic replace)."""
    from ruamel.yaml import YAML

    y = YAML()
    y.default_flow_style = None
    y.width = 120
    tmp = path.with_suffix(".tmp")
    with tmp.open("w") as f:
        y.dump(_plain(profile), f)
    tmp.replace(path)


def _plain(profile: Profile) -> dict:
    """The profile as YAML-ready data; an absent optional ``calibration`` block (and its
    unmeasured fields), and absent optional curves (``decode_paged_waves``,
    ``paged_shared_prefix``) are left out, so profiles without them are written as before."""
    data = profile.model_dump(mode="json")
    for optional in ("decode_paged_waves", "paged_shared_prefix"):
        if data["curves"].get(optional, 0) is None:
            del data["curves"][optional]
    if data["calibration"] is None:
        del data["calibration"]
    else:
        data["calibration"] = {k: v for k, v in data["calibration"].items() if v is not None}
    return data
