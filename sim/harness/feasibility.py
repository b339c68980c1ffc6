"""What makes a run impossible, known from its inputs before it starts.

:func:`check_run` is called when an experiment is expanded, so that such a run is an error of
the file (``FILE:LINE:COL: field: message``, exit status 2) before anything runs or is written:

* the engines' KV cache must hold at least one block: a profile whose GPU memory does not even
  fit the model's weights and activation reserve, or a ``capacity_tokens`` below
  ``block_size``, is an error of ``cluster.profile`` or ``cluster.engine``
  (:func:`engine_limits`, which the simulation uses too);
* the workload's input files are read and validated (a trace: a corrupt row, or not a single
  request, names ``PATH:LINE``; a file that is not UTF-8 text names ``PATH:LINE:COL``), and every call they hold, with the client's chat template
  added, must be one the engines can run (:mod:`parrotsim.sim.model.admission`): the first row
  that is not is named by ``PATH:LINE`` with the reason.

Generated workloads are checked call by call when the calls reach an engine instead: a rejected
call fails its app and its run. The check of a file's calls is remembered per process (by the
workload, the file's content, the engine limits and the template), so a sweep over one trace
checks its rows once per engine configuration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parrotsim.core.text import utf8_problem
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.fingerprint import input_hashes
from parrotsim.sim.model.admission import EngineLimits, admission_problem
from parrotsim.sim.model.profile import Profile, load_profile
from parrotsim.workloads.registry import WorkloadInputError


class RunInputError(ValueError):
    """A run that cannot be made from its inputs; ``field`` is the dotted config field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def engine_limits(cfg: RunConfig, profile: Profile) -> EngineLimits:
    """What each engine of the run can hold (raises :class:`RunInputError` for a KV cache
    without a single block)."""
    engine, bs = cfg.cluster.engine, cfg.cluster.block_size
    capacity = profile.kv_capacity_tokens()
    blocks = engine.kv_blocks(capacity, bs)
    if blocks >= 1:
        return engine.limits(blocks, bs)
    if capacity < bs:
        raise RunInputError("cluster.profile", f"{cfg.cluster.profile}: the GPU's memory leaves "
                            f"{capacity} tokens for the KV cache after the weights and the "
                            f"activation reserve, less than one block of {bs} tokens")
    raise RunInputError("cluster.engine", f"the {engine.policy} engine's KV cache holds no "
                        f"block of {bs} tokens")


_checked: dict[Any, RunInputError | None] = {}


def check_run(cfg: RunConfig) -> None:
    """Raise :class:`RunInputError` for a run that cannot be made (see module docstring)."""
    limits = engine_limits(cfg, load_profile(cfg.cluster.profile))
    template = cfg.client.template_tokens()
    key = (cfg.workload.model_dump_json(), tuple(sorted(input_hashes(cfg).items())), limits,
           template)
    if key not in _checked:
        _checked[key] = _first_problem(cfg, limits, template)
    if _checked[key] is not None:
        raise _checked[key]


def _first_problem(cfg: RunConfig, limits: EngineLimits, template: int) -> RunInputError | None:
    try:
        calls = cfg.workload.input_calls()
    except WorkloadInputError as exc:
        return RunInputError(f"workload.{exc.field}", str(exc))
    except UnicodeDecodeError as exc:  # a text input file that is not UTF-8: say where
        return _not_utf8(cfg, exc)
    seen: set[tuple[int, int]] = set()
    for call in calls:
        shape = (call.prompt_tokens, call.output_tokens)
        if shape in seen:
            continue
        seen.add(shape)
        problem = admission_problem(limits, call.prompt_tokens + template, call.output_tokens)
        if problem is not None:
            return RunInputError(
                f"workload.{call.field}", f"{call.where}: a call of {call.prompt_tokens} prompt "
                f"tokens (+{template} of chat template) and {call.output_tokens} output tokens "
                f"can never run: {problem}")
    return None


def _not_utf8(cfg: RunConfig, exc: UnicodeDecodeError) -> RunInputError:
    """The error naming the first of the workload's input files that is not UTF-8 text."""
    files = cfg.workload.input_files() if hasattr(cfg.workload, "input_files") else {}
    for name, path in files.items():
        try:
            problem = utf8_problem(Path(path).read_bytes(), path)
        except OSError:
            continue
        if problem is not None:
            return RunInputError(f"workload.{name}", problem)
    return RunInputError("workload", f"an input file is not UTF-8 text ({exc.reason})")
