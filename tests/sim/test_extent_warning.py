"""Queries past a profile's measured extent: noted by the cost model per axis, warned once per
run by the simulator; profiles without an extent (every shipped one) behave as before."""

from __future__ import annotations

import warnings

import pytest

from parrotsim.api import run_config, simulate
from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.profile import ExtrapolationWarning, load_profile
from parrotsim.sim.model.profile_parts import Calibration, Curve, Extent
from parrotsim.sim.model.sequence import Batch, Sequence


def with_extent(batch_tokens: int | None = None):
    """h200_llama-7b with an extent equal to its curves' ranges (as a calibration writes it),
    the linear curve optionally cut at ``batch_tokens``."""
    prof = load_profile("h200_llama-7b")
    c = prof.curves
    curves = c
    if batch_tokens is not None:
        lin = Curve(x=[1.0, float(batch_tokens)],
                    seconds=[c.linear.seconds[0], c.linear.seconds[0] * 1.5])
        curves = c.model_copy(update={"linear": lin})
    ext = Extent(batch_tokens=int(curves.linear.x[-1]),
                 prefill_chunk_tokens=int(c.prefill_attention_grid.x[-1]),
                 prefill_context=int(c.prefill_attention_grid.y[-1]),
                 decode_batch=int(c.decode_paged_grid.x[-1]),
                 decode_context=int(c.decode_paged_grid.y[-1]),
                 shared_prefix=int(c.shared_prefix.x[-1]), shared_batch=int(c.shared_prefix.y[-1]))
    return prof.model_copy(update={"curves": curves, "calibration": Calibration(extent=ext)})


def prefill_batch(new: int, ctx: int) -> Batch:
    b = Batch()
    b.prefills.append((Sequence(0, "a", "c", new + ctx, 1, cached_len=new + ctx), new))
    return b


def test_cost_model_notes_the_largest_query_past_each_axis():
    cm = CostModel(with_extent(), "none")
    cm.iteration_time(prefill_batch(512, 4096))
    cm.decode_times(64, 64 * 2000, 64, [], 3)
    cm.shared_prefix_time([(4096, 32)])
    assert cm.beyond == {}  # inside the extent: nothing noted
    cm.iteration_time(prefill_batch(512, 20_000))
    cm.iteration_time(prefill_batch(512, 15_000))
    cm.decode_times(300, 300 * 100, 300, [], 1)
    cm.decode_times(8, 8 * 20_000, 8, [], 1)
    cm.shared_prefix_time([(30_000, 4)])
    assert cm.beyond == {"prefill_context": 20_000, "decode_batch": 300, "decode_context": 20_000,
                         "shared_prefix": 30_000}


def test_profiles_without_an_extent_note_nothing_and_cost_the_same():
    plain, extent = CostModel(load_profile("h200_llama-7b")), CostModel(with_extent())
    for cm in (plain, extent):
        cm.iteration_time(prefill_batch(512, 20_000))
        cm.decode_times(300, 300 * 100, 300, [], 5)
    assert plain.beyond == {} and extent.beyond
    assert plain.extrapolated == extent.extrapolated > 0
    assert plain.iteration_time(prefill_batch(512, 20_000)) == extent.iteration_time(
        prefill_batch(512, 20_000))


def chats(n: int = 20):
    return run_config(workload={"kind": "sharegpt", "num_requests": n, "rate": 10},
                      cluster={"engines": 2, "profile": "h200_llama-7b"}, seed=0)


def test_a_run_past_the_extent_warns_once():
    with pytest.warns(ExtrapolationWarning) as caught:
        simulate(chats(), profile=with_extent(batch_tokens=64))
    mine = [w for w in caught if issubclass(w.category, ExtrapolationWarning)]
    assert len(mine) == 1
    assert "batch_tokens" in str(mine[0].message)
    assert "(measured up to 64)" in str(mine[0].message)


def test_a_run_inside_the_extent_and_shipped_profiles_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExtrapolationWarning)
        inside = simulate(chats(), profile=with_extent())
        shipped = simulate(chats())
    assert inside.summary["mean_jct"] == shipped.summary["mean_jct"]
