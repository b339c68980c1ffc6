"""Performance-objective deduction, task groups, depth and lowering (workloads/dag.py)."""

from parrotsim.workloads.app import App, Call, CallHints, Ref, Text, validate_app
from parrotsim.workloads.dag import deduce_objectives, depths, lower, task_groups


def call(name: str, *refs: str, out: int = 10, after: tuple[str, ...] = (), **kw) -> Call:
    prompt = (Text(f"t/{name}", 5), *(Ref(r) for r in refs))
    return Call(name, prompt, f"v_{name}", out, after=after, **kw)


def fig9() -> App:
    """Two latency outputs (r1, r2), their shared predecessor r3 (fed by r0), and two fan-ins:
    a0..a2 feed r1, b0..b1 feed r2; x feeds every a."""
    calls = [call("r0", "q"), call("r3", "v_r0"), call("x", "q"),
             *(call(f"a{i}", "v_x") for i in range(3)), *(call(f"b{i}", "q") for i in range(2)),
             call("r1", "v_r3", "v_a0", "v_a1", "v_a2"), call("r2", "v_r3", "v_b0", "v_b1")]
    return validate_app(App("f9", 0.0, tuple(calls), ("v_r1", "v_r2"), inputs={"q": 3}))


def map_reduce(n: int = 4, criterion: str = "latency") -> App:
    maps = [call(f"map_{i}", f"c{i}") for i in range(n)]
    red = call("reduce", *(m.output for m in maps), hints=CallHints(32))
    return validate_app(App("mr", 0.0, (*maps, red), ("v_reduce",), criterion=criterion,
                            inputs={f"c{i}": 100 for i in range(n)}))


def chain(n: int = 4) -> App:
    calls = [call("s0", "c")] + [call(f"s{i}", f"v_s{i - 1}") for i in range(1, n)]
    return validate_app(App("ch", 0.0, tuple(calls), (f"v_s{n - 1}",), inputs={"c": 9}))


def test_depths():
    d = depths(fig9())
    assert d["r0"] == d["x"] == d["b0"] == 0 and d["r3"] == d["a1"] == 1
    assert d["r1"] == 2 and d["r2"] == 2
    assert depths(chain(3)) == {"s0": 0, "s1": 1, "s2": 2}


def test_figure9_two_latency_outputs_shared_predecessor_two_groups():
    app = fig9()
    obj = deduce_objectives(app)
    assert {n for n, o in obj.items() if o == "latency"} == {"r1", "r2", "r3", "r0"}
    groups = task_groups(app)
    assert groups == {"a0": "f9/r1", "a1": "f9/r1", "a2": "f9/r1", "b0": "f9/r2", "b1": "f9/r2"}
    assert all(obj[n] == "throughput" for n in groups)
    assert obj["x"] == "throughput"  # an ancestor of a task group only


def test_map_reduce_maps_are_one_group_feeding_latency_reduce():
    app = map_reduce()
    obj = deduce_objectives(app)
    assert obj["reduce"] == "latency"
    assert all(obj[f"map_{i}"] == "throughput" for i in range(4))
    assert set(task_groups(app).values()) == {"mr/reduce"} and len(task_groups(app)) == 4


def test_throughput_output_makes_every_ancestor_throughput():
    app = map_reduce(criterion="throughput")
    assert set(deduce_objectives(app).values()) == {"throughput"}
    assert len(task_groups(app)) == 4  # the structure still forms a group


def test_chain_is_all_latency_without_groups():
    app = chain(5)
    assert set(deduce_objectives(app).values()) == {"latency"}
    assert task_groups(app) == {}


def test_rounds_joined_by_after_edges_form_groups():
    r0 = [call(f"p{i}", "q") for i in range(3)]
    r1 = [call(f"c{i}", after=("p0", "p1", "p2")) for i in range(3)]
    app = validate_app(App("m", 0.0, (*r0, *r1), tuple(c.output for c in r1), inputs={"q": 1}))
    obj = deduce_objectives(app)
    assert all(obj[c.name] == "latency" for c in r1)  # producers of the final outputs
    assert all(obj[c.name] == "throughput" for c in r0)
    assert set(task_groups(app).values()) == {"m/c0+2"}


def test_deduction_disabled_gives_no_objectives():
    assert deduce_objectives(map_reduce(), enabled=False) == {}


def test_uncontributing_calls_are_throughput():
    app = validate_app(App("u", 0.0, (call("a", "q"), call("side", "q")), ("v_a",),
                           inputs={"q": 1}))
    assert deduce_objectives(app) == {"a": "latency", "side": "throughput"}


def test_lowering_and_hints():
    assert lower("latency") == (4, 4096)
    reqs, toks = lower("throughput")
    assert reqs >= 1 << 30 and toks >= 1 << 60
    assert lower("latency", CallHints(16))[0] == 16
    assert lower(None, 32)[0] == 32 and lower(None)[0] >= 1 << 30
    # an app's calls as the Parrot client annotates them and the scheduler lowers them
    app = map_reduce()
    obj, calls = deduce_objectives(app), {c.name: c for c in app.calls}
    assert lower(obj["reduce"], calls["reduce"].hints) == (32, 4096)  # the hint replaces 4
    assert lower(obj["map_0"], calls["map_0"].hints)[0] >= 1 << 30
