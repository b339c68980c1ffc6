"""The DAG analysis memo (sim/model/dag_shapes.py): one analysis per shape, the same answers
as analysing every app, task-group ids carrying each app's own id."""

from dataclasses import replace

from parrotsim.sim.model.dag_shapes import DagShapes
from parrotsim.workloads.app import App, Call, Ref, Text, call_dependencies, validate_app
from parrotsim.workloads.dag import deduce_objectives, depths, task_groups
from parrotsim.workloads.metagpt import metagpt_app


def call(name: str, *refs: str, out: int = 10, text: int = 5,
         after: tuple[str, ...] = ()) -> Call:
    return Call(name, (Text(f"t/{name}", text), *(Ref(r) for r in refs)), f"v_{name}", out,
                after=after)


def map_reduce(app_id: str, n: int = 3, criterion: str = "latency", text: int = 5) -> App:
    maps = [call(f"map_{i}", f"c{i}", text=text) for i in range(n)]
    red = call("reduce", *(m.output for m in maps), text=text)
    return validate_app(App(app_id, 0.0, (*maps, red), ("v_reduce",), criterion=criterion,
                            inputs={f"c{i}": 100 for i in range(n)}))


def deps(app: App) -> dict[str, tuple[str, ...]]:
    return {c.name: call_dependencies(app, c) for c in app.calls}


def analysed(shapes: DagShapes, app: App) -> tuple[dict, dict, dict]:
    dag = shapes.analysis(app, deps(app))
    return dag.depths, dag.objectives, dag.task_groups(app.app_id)


def direct(app: App) -> tuple[dict, dict, dict]:
    return depths(app), deduce_objectives(app), task_groups(app)


def test_apps_of_one_shape_are_analysed_once_with_their_own_group_ids():
    shapes = DagShapes()
    first, second = map_reduce("mr-1"), map_reduce("mr-22", text=700)  # other text, same DAG
    assert analysed(shapes, first) == direct(first)
    assert analysed(shapes, second) == direct(second)
    assert shapes.analysed == 1
    assert analysed(shapes, second)[2]["map_0"] == "mr-22/reduce"


def test_a_different_shape_is_analysed_again():
    shapes = DagShapes()
    apps = [map_reduce("a"), map_reduce("b", criterion="throughput"), map_reduce("c", n=4),
            replace(map_reduce("d"), outputs=("v_map_0",))]
    for app in apps:
        assert analysed(shapes, app) == direct(app)
    assert shapes.analysed == 4
    # an `after` edge changes the dependencies, hence the shape
    chained = replace(apps[0], app_id="e", calls=(apps[0].calls[0],
                      replace(apps[0].calls[1], after=("map_0",)), *apps[0].calls[2:]))
    assert analysed(shapes, chained) == direct(chained)
    assert shapes.analysed == 5


def test_metagpt_rounds_and_disabled_deduction():
    shapes = DagShapes()
    for i in range(3):
        app = metagpt_app(f"m{i}", float(i), files=4)
        assert analysed(shapes, app) == direct(app)
    assert shapes.analysed == 1
    off = DagShapes(deduction=False)
    app = map_reduce("x")
    assert analysed(off, app) == (depths(app), {}, {})


def test_the_memo_starts_over_at_its_limit():
    shapes = DagShapes(limit=2)
    for n in (1, 2, 3, 1):
        app = map_reduce(f"n{n}", n=n)
        assert analysed(shapes, app) == direct(app)
    assert shapes.analysed == 4  # n=1 was dropped when n=3 came
