"""The base of every typed config (experiment files, run configs, profiles, policy knobs).

Every float field of every config must be finite: NaN and infinities are rejected by pydantic
(``allow_inf_nan=False``) wherever they occur, also inside lists and mappings (a profile's
curves, a sweep value), with the message "Input should be a finite number" at the field's path.
A NaN arrival rate or an infinite overhead would otherwise run and report numbers made of NaN,
or never end.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictConfig(BaseModel):
    """Base of every config: unknown keys are errors, floats are finite, instances are
    immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
