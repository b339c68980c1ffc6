"""SingleCallApps: single-call apps kept as arrays, made on demand, as the lists they replace."""

import numpy as np
import pytest

from parrotsim.workloads.app import AppError, CallHints, Text, single_call_app
from parrotsim.workloads.app_stream import AppsThenStream, SingleCallApps, total_calls
from parrotsim.workloads.arrivals import arrival_times
from parrotsim.workloads.gpts import Gpts, gpts_apps
from parrotsim.workloads.sharegpt import ShareGptChat, chat_apps, sample_lengths


def stream(arrivals, outputs=(5, 6, 7), prompts=(3, 4, 5), hints=None):
    return SingleCallApps(np.array(arrivals, dtype=float), np.array(outputs),
                          np.array(prompts), app_id="x-{}".format,
                          prompt=lambda i: (Text(f"x/{i}", int(prompts[i])),), kind="x",
                          hints=hints or CallHints())


def test_apps_are_made_on_demand_as_single_call_apps():
    s = stream([0.5, 1.0, 2.0])
    expected = [single_call_app(f"x-{i}", t, (Text(f"x/{i}", p),), o, kind="x")
                for i, (t, p, o) in enumerate([(0.5, 3, 5), (1.0, 4, 6), (2.0, 5, 7)])]
    assert len(s) == 3 and s == expected and list(s) == expected
    assert s[-1] == expected[2] and s[1:] == expected[1:]
    assert s[0] is not s[0]  # made anew each time: nothing is kept
    assert s.ids() == ["x-0", "x-1", "x-2"] and total_calls(s) == 3
    with pytest.raises(IndexError):
        s[3]


@pytest.mark.parametrize(("arrivals", "outputs", "prompts", "hint", "message"), [
    ([0.0, np.inf, 2.0], (5, 6, 7), (3, 4, 5), None, "app x-1: arrival time must be a finite number"),
    ([0.0, 1.0, 2.0], (5, 0, 7), (3, 4, 5), None, "app x-1, call 'call': output_tokens"),
    ([0.0, 1.0, 2.0], (5, 6, 7), (3, 4, -1), None, "app x-2, call 'call': prompt tokens"),
    ([0.0, 1.0, 2.0], (5, 6, 7), (3, 4, 5), 0, "max_requests_per_engine must be positive"),
    ([0.0, 2.0, 1.0], (5, 6, 7), (3, 4, 5), None, "app x-2: arrives at 1.0 s, before"),
])
def test_validate_names_the_first_bad_app(arrivals, outputs, prompts, hint, message):
    s = stream(arrivals, outputs, prompts, CallHints(max_requests_per_engine=hint))
    with pytest.raises(AppError, match=message):
        s.validate()


def test_sharegpt_stream_equals_the_per_call_list():
    """The same draws in the same order: apps bit for bit as the list built call by call."""
    cfg = ShareGptChat(num_requests=300, rate=7.0, arrival="gamma", burstiness=0.5, start=2.0)
    rng = np.random.default_rng(11)
    prompts, outputs = sample_lengths(rng, 300)
    times = arrival_times(rng, 300, 7.0, "gamma", 0.5, 2.0)
    by_hand = [single_call_app(f"chat-{i}", float(t), (Text(f"chat/{i}", int(p)),), int(o),
                               kind="chat")
               for i, (t, p, o) in enumerate(zip(times, prompts, outputs, strict=True))]
    built = cfg.build(np.random.default_rng(11))
    assert isinstance(built, SingleCallApps) and built == by_hand
    assert chat_apps(np.random.default_rng(11), 300, 7.0, "gamma", 0.5, 2.0) == by_hand


def test_gpts_stream_equals_the_per_call_list():
    rng = np.random.default_rng(2)
    cfg = Gpts(num_requests=50, rate=3.0)
    which = rng.permutation(np.arange(50) % 4)
    times = arrival_times(rng, 50, 3.0, "poisson")
    apps = gpts_apps()
    by_hand = [single_call_app(f"gpts-{apps[k].app}-{i}", float(t),
                               (Text(f"gpts/{apps[k].app}/system", apps[k].system_tokens),
                                Text(f"gpts/{apps[k].app}/query/{i}", apps[k].query_tokens)),
                               apps[k].output_tokens, kind="gpts")
               for i, (k, t) in enumerate(zip(which, times, strict=True))]
    built = cfg.build(np.random.default_rng(2))
    assert built == by_hand
    assert built.prompt_tokens.tolist() == [sum(p.tokens for p in a.calls[0].prompt)
                                            for a in by_hand]


def test_apps_then_a_stream_read_as_one_list():
    front = [single_call_app("y-0", 0.0, (Text("y", 2),), 3, kind="y"),
             single_call_app("y-1", 0.0, (Text("y", 2),), 3, kind="y")]
    s = stream([0.5, 1.0, 2.0])
    both = AppsThenStream(front, s)
    expected = front + list(s)
    assert len(both) == 5 and both == expected and list(both) == expected
    assert both[1] == front[1] and both[2] == s[0] and both[-1] == s[2]
    assert both[1:4] == expected[1:4] and total_calls(both) == 5
    assert both.validate() is both
    with pytest.raises(IndexError):
        both[5]
    clash = AppsThenStream([single_call_app("x-1", 0.0, (Text("y", 2),), 3)], s)
    with pytest.raises(AppError, match="two apps share the id 'x-1'"):
        clash.validate()


def test_a_background_stream_makes_background_apps():
    s = SingleCallApps(np.array([1.0]), np.array([4]), np.array([2]), app_id="b-{}".format,
                       prompt=lambda i: (Text("b", 2),), kind="background", background=True)
    (app,) = list(s)
    assert app.background and app == single_call_app("b-0", 1.0, (Text("b", 2),), 4,
                                                      kind="background", background=True)
