"""The application model's validation names the app and the call."""

import pytest

from parrotsim.workloads.app import App, AppError, Call, Ref, Text, topological_order, validate_app
from parrotsim.workloads.summarization import chain_summary_app, map_reduce_app


def app(*calls, outputs=("y",), inputs=None):
    return App("a1", 0.0, tuple(calls), outputs, inputs or {})


def test_cycle_is_named():
    c1 = Call("c1", (Ref("y"),), "x", 5)
    c2 = Call("c2", (Ref("x"),), "y", 5)
    with pytest.raises(AppError, match=r"app a1: call 'c1' is on a cycle"):
        validate_app(app(c1, c2))


def test_a_lone_call_that_needs_itself_is_a_cycle():
    """Single-call apps skip the DAG walk unless the call depends on itself."""
    with pytest.raises(AppError, match=r"call 'c' is on a cycle"):
        validate_app(app(Call("c", (Ref("y"),), "y", 5)))
    with pytest.raises(AppError, match=r"call 'c' is on a cycle"):
        validate_app(app(Call("c", (Text("t", 3),), "y", 5, after=("c",))))
    lone = app(Call("c", (Text("t", 3),), "y", 5))
    assert validate_app(lone) is lone


def test_dangling_reference():
    with pytest.raises(AppError, match=r"app a1, call 'c': reference to 'nope'"):
        validate_app(app(Call("c", (Ref("nope"),), "y", 5)))


def test_two_producers():
    with pytest.raises(AppError, match="two producers"):
        validate_app(app(Call("a", (Text("t", 3),), "y", 5), Call("b", (Text("t", 3),), "y", 5)))


@pytest.mark.parametrize("call, msg", [
    (Call("c", (Text("t", 3),), "y", 0), "output_tokens must be positive"),
    (Call("c", (Text("t", 0),), "y", 5), "has 0 tokens"),
])
def test_non_positive_lengths(call, msg):
    with pytest.raises(AppError, match=msg):
        validate_app(app(call))


def test_unknown_after_dependency():
    with pytest.raises(AppError, match="'after' names unknown call 'ghost'"):
        validate_app(app(Call("c", (Text("t", 3),), "y", 5, after=("ghost",))))


def test_chain_and_map_reduce_shapes():
    chain = validate_app(chain_summary_app("c", 0.0, "arxiv_march_10", 0, 1024, 50))
    assert len(chain.calls) == 75
    order = [c.name for c in topological_order(chain)]
    assert order[0] == "first" and order[-1] == "refine_74"
    mr = validate_app(map_reduce_app("m", 0.0, "arxiv_march_10", 0, 1024, 50))
    reduce = mr.calls[-1]
    assert len(mr.calls) == 76 and sum(isinstance(p, Ref) for p in reduce.prompt) == 75
