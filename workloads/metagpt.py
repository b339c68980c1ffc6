"""MetaGPT multi-agent programming, replayed as the Parrot artifact did (Fig 18).

One app per task. Round 0: the architect; round 1: one coder per file; then cycles of a
reviewer per file and a reviser per file: 10 sequential rounds of ``files`` parallel calls each
(N = 4/8/12/16 in the paper; the artifact also runs the architect N times). The paper describes
review/revise "repeated 3 times"; the artifact replays the logged cycle plus 3 copies, i.e.
``review_cycles`` = 4 and 10 rounds (its logged per-round sums have 10 rounds), which is the
default here. Facts, in LLaMA
tokens (``workloads/data/metagpt_rounds.csv``, from the artifact's GPT-4 logs of the task
"Write a deep learning framework like PyTorch", 8 files):

| round      | role      | shared prefix | divergent | outputs of files 1-8              |
|------------|-----------|---------------|-----------|-----------------------------------|
| 0          | architect | 247           | 0         | 868 each                          |
| 1          | coder     | 3534          | 109       | 691 1100 324 652 540 253 338 612  |
| 2, 4, 6, 8 | reviewer  | 4858          | 74        | 333 373 343 319 292 269 430 422   |
| 3, 5, 7, 9 | reviser   | 5352          | 121       | 699 852 356 587 558 241 231 625   |

Bug-for-bug with the artifact: rounds 4-9 replay the logged rounds 2-3 (``bench_hack_parrot.py``
maps round i > 3 to logged round i % 2 + 2); every branch of a round uses the last branch's
divergent suffix length; file k > 8 reuses file k mod 8's output. The shared prefix
(instructions plus the whole codebase and reviews so far) is constant text of the logged length,
``Text("metagpt/<app>/r<logged round>/shared")``: with ``reuse_logged_text`` (the artifact) a
replayed round's prefix is the very text of the logged round it replays, so an engine that
still holds that prefix context forks it instead of filling it again; without, every round
has text of its own (as a real run, whose codebase changes every round, would). The suffix is a
per-branch ``Text`` (the artifact bound it as a per-call input, filled per branch); a
zero-length suffix (the architect) is left out.

Round r+1 calls depend on every call of round r through data-free ``after`` edges (the history
reaches them as constant text); ``stages`` are the rounds, which a Parrot client submits one
batch at a time. The app's outputs are the last round's revisions, criterion ``latency``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from parrotsim.workloads.app import App, Call, Text
from parrotsim.workloads.registry import WorkloadConfig, register_workload
from parrotsim.workloads.tables import read_table


@dataclass(frozen=True, slots=True)
class Round:
    """One logged round: role, shared-prefix and divergent tokens, outputs of files 1-8."""

    role: str
    shared_tokens: int
    divergent_tokens: int
    outputs: tuple[int, ...]


def logged_rounds() -> list[Round]:
    """The four logged rounds (architect, coder, reviewer, reviser) from the shipped table."""
    by_round: dict[int, list[dict[str, str]]] = {}
    for row in read_table("metagpt_rounds.csv"):
        by_round.setdefault(int(row["round"]), []).append(row)
    out = []
    for r in sorted(by_round):
        rows = sorted(by_round[r], key=lambda x: int(x["file"]))
        out.append(Round(rows[0]["role"], int(rows[0]["shared_tokens"]),
                         int(rows[0]["divergent_tokens"]),
                         tuple(int(x["output_tokens"]) for x in rows)))
    return out


def replay_rounds(review_cycles: int = 4) -> list[Round]:
    """The replayed round sequence: architect, coder, then (reviewer, reviser) x cycles."""
    architect, coder, reviewer, reviser = logged_rounds()
    return [architect, coder, *([reviewer, reviser] * review_cycles)]


def metagpt_app(app_id: str, arrival: float, files: int, review_cycles: int = 4,
                reuse_logged_text: bool = True) -> App:
    """One MetaGPT task over ``files`` files (calls named ``r<round>_<role>_<file>``)."""
    calls: list[Call] = []
    stages: list[tuple[str, ...]] = []
    previous: tuple[str, ...] = ()
    for r, rnd in enumerate(replay_rounds(review_cycles)):
        text = r if r <= 3 or not reuse_logged_text else r % 2 + 2  # the round whose text
        shared = Text(f"metagpt/{app_id}/r{text}/shared", rnd.shared_tokens)
        names = []
        for k in range(files):
            name = f"r{r}_{rnd.role}_{k}"
            prompt: tuple[Text, ...] = (shared,)
            if rnd.divergent_tokens > 0:
                prompt += (Text(f"metagpt/{app_id}/r{text}/file{k}", rnd.divergent_tokens),)
            out_tokens = rnd.outputs[k % len(rnd.outputs)]
            calls.append(Call(name, prompt, f"{name}.out", out_tokens, after=previous))
            names.append(name)
        previous = tuple(names)
        stages.append(previous)
    return App(app_id=app_id, arrival=arrival, calls=tuple(calls),
               outputs=tuple(f"{n}.out" for n in previous), stages=tuple(stages),
               kind="metagpt")


@register_workload
class MetaGpt(WorkloadConfig):
    """MetaGPT task(s) writing ``files`` files (Fig 18: 4, 8, 12, 16), arriving at ``start``.

    ``tasks`` independent copies arrive together (each with its own content ids); the paper
    runs one. ``reuse_logged_text``: replayed rounds reuse the logged rounds' text (see the
    module docstring; the artifact's replay).
    """

    kind: Literal["metagpt"] = "metagpt"
    figure: ClassVar[str] = "18"
    files: int = Field(default=8, gt=0, le=256)
    review_cycles: int = Field(default=4, ge=0)
    tasks: int = Field(default=1, gt=0)
    start: float = Field(default=0.0, ge=0)
    reuse_logged_text: bool = True

    def build(self, rng: np.random.Generator) -> list[App]:
        return [metagpt_app(f"metagpt-{t}", self.start, self.files, self.review_cycles,
                            self.reuse_logged_text)
                for t in range(self.tasks)]
