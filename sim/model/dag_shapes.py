"""The DAG analysis Parrot's manager attaches to an app's calls, done once per DAG shape.

Topological depth, deduced objective and task group (:mod:`parrotsim.workloads.dag`) depend
only on the app's *shape*: its criterion, its final outputs and, per call in app order, the
call's name, output variable and dependencies (the producers it references and its ``after``
calls). Prompt text, lengths and arrival time play no part, and the app id only prefixes task-group
ids (``"{app_id}/{consumer}..."``). Apps built from one template (every GPTs request, every
chat of a trace) share one shape, so :class:`DagShapes` analyses the first app of each shape
and hands the result to the others, with their own app id in the group ids. The result is the
one the analysis of each app would give (a test compares them).
"""

from __future__ import annotations

from dataclasses import dataclass

from parrotsim.workloads.app import App
from parrotsim.workloads.dag import Objective, call_depths, deduce_objectives, task_groups

#: (criterion, outputs, ((call name, output variable, dependencies), ...) in app order)
Shape = tuple[str, tuple[str, ...], tuple[tuple[str, str, tuple[str, ...]], ...]]


@dataclass(frozen=True, slots=True)
class DagAnalysis:
    """Per call name: ``depths`` (0 for a call without dependencies), ``objectives`` (empty
    without deduction) and ``groups``, the task-group id of each grouped call *without* the
    ``"{app_id}/"`` that starts it. Shared by every app of a shape: never mutated."""

    depths: dict[str, int]
    objectives: dict[str, Objective]
    groups: dict[str, str]

    def task_groups(self, app_id: str) -> dict[str, str]:
        """Call name -> task-group id for the app ``app_id``."""
        if not self.groups:
            return self.groups
        return {name: f"{app_id}/{rest}" for name, rest in self.groups.items()}


def dag_shape(app: App, deps: dict[str, tuple[str, ...]]) -> Shape:
    """The shape of ``app``, given each call's dependencies (``call_dependencies``)."""
    return app.criterion, app.outputs, tuple([(c.name, c.output, deps[c.name])
                                              for c in app.calls])


class DagShapes:
    """Memo of :class:`DagAnalysis` by shape; ``deduction`` False leaves objectives and
    groups empty. Holds at most ``limit`` shapes (then starts over), so that a run whose apps
    all differ keeps memory bounded."""

    def __init__(self, deduction: bool = True, limit: int = 4096) -> None:
        self.deduction = deduction
        self.limit = limit
        self._memo: dict[Shape, DagAnalysis] = {}
        self.analysed = 0  # apps analysed (memo misses)

    def analysis(self, app: App, deps: dict[str, tuple[str, ...]]) -> DagAnalysis:
        """The DAG analysis of ``app`` (``deps``: each call's dependencies, by name)."""
        shape = dag_shape(app, deps)
        found = self._memo.get(shape)
        if found is not None:
            return found
        self.analysed += 1
        depths = call_depths(app)
        objectives = deduce_objectives(app) if self.deduction else {}
        groups = task_groups(app) if self.deduction else {}
        cut = len(app.app_id) + 1
        found = DagAnalysis(depths, objectives, {name: gid[cut:] for name, gid in groups.items()})
        if len(self._memo) >= self.limit:
            self._memo.clear()
        self._memo[shape] = found
        return found
