"""The paged kernel's critical-path excess for skewed decode batches (sim/model/paged_waves.py)
on small hand-built grids, and its place in the cost model and the decode-stretch closed form."""

import math

import pytest
import simpy

from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.engine import Engine
from parrotsim.sim.model.kv_cache import Context, KVCache
from parrotsim.sim.model.paged_waves import WaveModel, kernel_splits
from parrotsim.sim.model.profile import ProfileError, load_profile
from parrotsim.sim.model.profile_parts import PagedGrid, PagedWaves
from parrotsim.sim.model.sequence import Batch
from tests.sim.helpers import seq

# A grid linear in (sequences x context) past a fixed cost: programs of c tokens, one wave of
# 8 sequences (4 SMs x 2 programs per SM / (1 KV head x 1 split)) at a time.
GRID = PagedGrid(x=[1, 8, 64, 512], y=[0, 1024, 8192, 65536],
                 seconds=[[1e-4 + n * c * 1e-9 for c in (0, 1024, 8192, 65536)]
                          for n in (1, 8, 64, 512)])


def _profile(waves: PagedWaves | None, kv_heads: int = 1):
    base = load_profile("h200_llama-7b")
    curves = base.curves.model_copy(update={"decode_paged_grid": GRID,
                                            "decode_paged_waves": waves})
    model = base.model.model_copy(update={"kv_heads": kv_heads, "heads": kv_heads})
    return base.model_copy(update={"curves": curves, "model": model})


WAVES = PagedWaves(sms=4, programs_per_sm=2)


def _batch(contexts):
    out = []
    for c in contexts:
        s = seq(1, 1)
        s.ctx = Context(None)
        s.ctx.tokens = c
        out.append(s)
    return Batch(decodes=out)


def test_splits_follow_the_kernel_rule():
    # want = ceil(2 * sms / programs), cap = ceil(longest / 256), at most 64
    assert kernel_splits(32, 2064, 132) == 9  # 264 / 32 -> 9, cap 9
    assert kernel_splits(64, 2064, 132) == 5
    assert kernel_splits(320, 2064, 132) == 1
    assert kernel_splits(32, 300, 132) == 2  # capped by the longest sequence
    assert kernel_splits(1, 10**6, 1000) == 64


def test_splits_match_the_kernel_code():
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    from parrotsim.kernels.paged_decode import choose_num_splits

    cpu = torch.device("cpu")  # 8 SMs on the CPU
    for programs in (1, 2, 3, 5, 8, 16, 33, 100):
        for max_len in (16, 255, 256, 257, 1000, 5000, 70000):
            assert kernel_splits(programs, max_len, 8) == choose_num_splits(programs, max_len, cpu)


def test_skewed_batch_costs_more_than_the_uniform_one_of_the_same_total():
    # 4 SMs x 4 programs: 6 sequences of 2 splits (the rule fills 2 x 4 SMs) fit in a wave
    cm = CostModel(_profile(PagedWaves(sms=4, programs_per_sm=4)))
    skewed = _batch([4096] + [512] * 5)
    uniform = _batch([sum([4096] + [512] * 5) // 6 + (i < 2) for i in range(6)])
    assert sum(s.kv_tokens for s in skewed.decodes) == sum(s.kv_tokens for s in uniform.decodes)
    t_skew, t_uni = cm.iteration_time(skewed), cm.iteration_time(uniform)
    assert t_skew > t_uni
    # the batch lasts as long as 6 sequences of the longest
    longest = _batch([4096] * 6)
    assert t_skew == pytest.approx(cm.iteration_time(longest), rel=1e-12)
    # without the waves block the skew is not seen (today's cost at the mean)
    plain = CostModel(_profile(None))
    assert plain.iteration_time(skewed) == plain.iteration_time(uniform)
    assert t_uni == pytest.approx(plain.iteration_time(uniform), rel=1e-5)  # longest = mean + 1


def test_excess_is_one_waves_and_vanishes_when_waves_are_many():
    cm = CostModel(_profile(WAVES))
    mean, longest = 1000, 5000
    shares = []
    for n in (8, 32, 256, 4096):
        kv = (n - 1) * mean + longest
        excess = cm.paged_excess(n, kv, longest)
        # one wave of 8 sequences, reading `longest` instead of the mean
        assert excess == pytest.approx(8 * (longest - kv / n) * 1e-9, rel=1e-9)
        shares.append(excess / cm.paged_time(n, kv))
    assert shares == sorted(shares, reverse=True)
    assert shares[-1] < 0.02 and shares[-1] < shares[0] / 10  # 512 waves: within 2 %
    # more splits (more programs per sequence) make a wave narrower: 2 KV heads, 1 split
    two_heads = CostModel(_profile(WAVES, kv_heads=2))
    assert two_heads.waves.row(64, 1) is two_heads.waves.row(64, 1)
    kv = 63 * mean + longest
    wide, narrow = cm.paged_excess(64, kv, longest), two_heads.paged_excess(64, kv, longest)
    assert 0 < narrow < wide  # 4 sequences a wave instead of 8
    assert narrow == pytest.approx(two_heads.paged_time(4, 4 * longest)
                                   - two_heads.paged_time(4, 4 * kv / 64), rel=1e-9)


def test_a_one_sequence_or_uniform_batch_has_no_excess():
    cm = CostModel(_profile(WAVES))
    assert cm.paged_excess(1, 3000, 3000) == 0.0
    assert cm.paged_excess(5, 5 * 700, 700) == pytest.approx(0.0, abs=1e-18)


@pytest.mark.parametrize("n, kv, longest", [(6, 6 * 300, 900), (20, 20 * 1000, 7000),
                                            (3, 3 * 200, 250), (40, 40 * 6000, 9000)])
def test_stretch_closed_form_equals_stepping(n, kv, longest):
    cm = CostModel(_profile(WAVES))
    stretch = cm.decode_stretch(n, kv, n, [], longest)
    for steps in (1, 2, 5, 700, 3000, 9000):
        stepped = sum(stretch.step(j) for j in range(steps))
        assert stretch.duration(steps) == pytest.approx(stepped, rel=0, abs=1e-9)
    # each step is the iteration of the batch grown by one token per sequence
    for j in (0, 10, 2500):
        ctx = [longest + j] + [(kv - longest) // (n - 1) + j] * (n - 1)
        if sum(ctx) == kv + n * j:
            assert stretch.step(j) == pytest.approx(cm.iteration_time(_batch(ctx)), rel=1e-12)


def test_stretch_is_exact_where_the_split_count_changes():
    # the real H200 profile's shape: 132 SMs x 2, 32 KV heads; 2 sequences, longest 300 tokens:
    # splits = min(5, ceil(longest / 256)) grows at 513, 769, 1025 and 1281 tokens
    prof = load_profile("h200_llama-7b")
    curves = prof.curves.model_copy(update={
        "decode_paged_waves": PagedWaves(sms=132, programs_per_sm=2)})
    cm = CostModel(prof.model_copy(update={"curves": curves}))
    stretch = cm.decode_stretch(2, 400, 2, [], 300)
    for steps in (200, 213, 214, 215, 500, 1000, 1200):
        stepped = sum(stretch.step(j) for j in range(steps))
        assert stretch.duration(steps) == pytest.approx(stepped, rel=0, abs=1e-9)
    assert [cm.waves.splits(2, 300 + j) for j in (212, 213, 468, 469)] == [2, 3, 3, 4]
    # steps_until agrees with the durations
    for elapsed in (0.01, 0.5, 3.0):
        k = stretch.steps_until(elapsed, 1200)
        assert stretch.duration(k) >= elapsed or k == 1200
        assert k == 1 or stretch.duration(k - 1) < elapsed


def test_longest_past_the_grid_is_counted():
    cm = CostModel(_profile(WAVES))
    cm.paged_excess(4, 4 * 1000, 60000)
    assert cm.extrapolated == 0
    cm.paged_excess(4, 4 * 1000, 70000)
    assert cm.extrapolated == 1


def test_profile_needs_a_grid_that_does_not_fall():
    base = load_profile("h200_llama-7b")
    with pytest.raises(ValueError, match="needs decode_paged_grid"):
        base.curves.model_validate({**base.curves.model_dump(), "decode_paged_grid": None,
                                    "decode_paged_waves": {"sms": 1, "programs_per_sm": 1}})
    falling = GRID.model_dump()
    falling["seconds"][1][2] = falling["seconds"][1][1] / 2
    with pytest.raises(ValueError, match="falls with the context"):
        base.curves.model_validate({**base.curves.model_dump(), "decode_paged_grid": falling,
                                    "decode_paged_waves": {"sms": 1, "programs_per_sm": 1}})
    assert issubclass(ProfileError, ValueError)


def test_wave_row_is_clamped_to_one_sequence_and_the_batch():
    wm = WaveModel(GRID, WAVES, kv_heads=4)
    # 8 slots / (4 heads x 4 splits) = 0.5 sequences: clamped to one
    assert wm.row(10, 4).scalar(1024) == pytest.approx(GRID.seconds[0][1])
    # a batch smaller than a wave: its own row
    assert wm.row(1, 1).scalar(8192) == pytest.approx(GRID.seconds[0][2])
    # 8 / (4 x 1) = 2 sequences: log-log between the rows of 1 and 8
    two = wm.row(64, 1).scalar(1024)
    lo, hi = GRID.seconds[0][1], GRID.seconds[1][1]
    assert math.isclose(two, lo * (hi / lo) ** (math.log(2) / math.log(8)), rel_tol=1e-12)


def _forked(kv, prefix, cached: int, suffix: int):
    s = seq(cached + suffix, 10, cached_len=cached, prefix_ctx=prefix)
    s.ctx = kv.create(prefix)
    kv.grow(s.ctx, suffix)
    return s


def test_shared_prefix_suffixes_get_the_excess_of_their_longest():
    # the shared-prefix kernel's suffix phase is the split-KV kernel over the suffixes: 16
    # decodes forking a 4000-token prefix, one suffix of 3000 tokens and 15 of 200
    cm = CostModel(_profile(WAVES))
    assert cm.suffix_waves
    suffixes = [3000] + [200] * 15
    batch = _batch([4000 + s for s in suffixes])
    groups, shared_tokens = [(4000, 16)], 4000 * 16
    plain = cm.iteration_time(batch, groups, shared_tokens)  # no longest: no excess
    skewed = cm.iteration_time(batch, groups, shared_tokens, longest=3000)
    excess = cm.paged_excess(16, sum(suffixes), 3000)
    assert excess > 0 and skewed - plain == pytest.approx(excess, rel=1e-9)
    # one wave holds 8 sequences: it lasts as long as 8 suffixes of 3000 tokens, not the mean
    assert excess == pytest.approx(8 * (3000 - sum(suffixes) / 16) * 1e-9, rel=1e-9)
    # the stretch carries it too, in closed form
    stretch = cm.decode_stretch(16, sum(suffixes), 16, groups, 3000)
    assert stretch.first == pytest.approx(skewed, rel=1e-12)
    for steps in (1, 7, 900):
        assert stretch.duration(steps) == pytest.approx(
            sum(stretch.step(j) for j in range(steps)), rel=0, abs=1e-9)
    # not for the paged kernel over shared pages (its grid prices whole groups) nor for
    # Parrot 2023's unsplit suffix
    assert not CostModel(_profile(WAVES), kernel="paged").suffix_waves
    parrot = CostModel(_profile(WAVES), kernel="parrot_2023")
    assert not parrot.suffix_waves
    assert parrot.iteration_time(batch, groups, shared_tokens, longest=3000) == \
        parrot.iteration_time(batch, groups, shared_tokens)


def test_engine_passes_the_longest_suffix_of_its_groups():
    cm = CostModel(_profile(WAVES))
    kv = KVCache(10**6)
    eng = Engine(simpy.Environment(), 0, None, cm, kv, lambda s, t: None,
                 kernel="shared_prefix")
    root = kv.create()
    kv.grow(root, 4000)
    lone = kv.create()
    kv.grow(lone, 100)
    alone = seq(2500, 10, cached_len=100, prefix_ctx=lone)  # the only decode of its prefix
    alone.ctx = kv.create(lone)
    kv.grow(alone.ctx, 2400)
    grouped = [_forked(kv, root, 4000, s) for s in (900, 300, 300)]
    assert cm.suffix_waves  # the engine passes the longest read of the kernel's paged phase
    assert eng._excess_longest(Batch(decodes=grouped), []) == 900
    # an ungrouped decode reads its whole context with the paged kernel
    assert eng._excess_longest(Batch(decodes=[*grouped, alone]), []) == 2500
    batch = Batch(decodes=grouped)
    groups, shared_tokens = eng._shared_groups(batch)
    assert groups == [(4000, 3)]
    assert cm.iteration_time(batch, groups, shared_tokens, 900) > cm.iteration_time(
        batch, groups, shared_tokens)


def test_paged_kernel_over_shared_pages_gets_the_excess_of_its_longest_whole_context():
    """Groups forking prompts of different lengths make a skewed batch for the paged kernel
    over shared pages: its one-prefix grid prices each group, and the longest whole context
    adds the excess over the tokens the kernel reads (prefixes counted per row). Measured on
    the H200 (kernels/bench_paged_prefixes.py): with it the model is within 0.98-1.16 of the
    kernel at 2 and 4 prefixes, 1.14-1.87 without."""
    from parrotsim.sim.model.profile_parts import Grid2D

    grid = Grid2D(x=[0.0, 8000.0], y=[1.0, 256.0], seconds=[[0.0, 0.0], [1e-3, 1e-3]])
    prof = _profile(WAVES)
    prof = prof.model_copy(update={"curves": prof.curves.model_copy(
        update={"paged_shared_prefix": grid})})
    cm = CostModel(prof, kernel="paged")
    assert cm.group_waves and not cm.suffix_waves
    groups = [(4000, 8), (400, 8)]  # 8 rows fork a 4000-token prompt, 8 a 400-token one
    suffixes = [100] * 16
    own = sum(suffixes)
    whole = own + 4000 * 8 + 400 * 8
    batch = _batch([4000 + 100] * 8 + [400 + 100] * 8)
    plain = cm.iteration_time(batch, groups, 4400 * 8)
    skewed = cm.iteration_time(batch, groups, 4400 * 8, longest=4100)
    excess = cm.paged_excess(16, whole, 4100)
    assert excess > 0 and skewed - plain == pytest.approx(excess, rel=1e-9)
    stretch = cm.decode_stretch(16, own, 16, groups, 4100)
    assert stretch.first == pytest.approx(skewed, rel=1e-12)
    # one prompt length: every row is as long as the longest, nothing to add
    same = _batch([4100] * 16)
    assert cm.paged_excess(16, 4100 * 16, 4100) == pytest.approx(0.0, abs=1e-15)
    assert cm.iteration_time(same, [(4000, 16)], 64000, longest=4100) == pytest.approx(
        cm.iteration_time(same, [(4000, 16)], 64000))
    # the engine passes the longest whole context to such a cost model
    kv = KVCache(10**6)
    eng = Engine(simpy.Environment(), 0, None, cm, kv, lambda s, t: None, kernel="paged")
    root = kv.create()
    kv.grow(root, 4000)
    grouped = [_forked(kv, root, 4000, s) for s in (900, 300)]
    assert eng._excess_longest(Batch(decodes=grouped), [(4000, 2)]) == 4900
