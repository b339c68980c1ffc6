"""Decode over several shared prefixes in one batch (kernels/grouped_prefix_decode.py) vs the fp32
references, under Triton's interpreter: every row of every group, and rows in no group."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from kernel_fixtures import make_cache, random_tables, rel_err  # noqa: E402

from parrotsim.kernels.grouped_prefix_decode import (  # noqa: E402
    PrefixGroup,
    grouped_shared_prefix_decode_attention,
    plan_grouped,
)
from parrotsim.kernels.reference import ref_paged_decode, ref_shared_prefix_decode  # noqa: E402

D = 32


@pytest.mark.parametrize("group", [1, 4])
def test_two_prefixes_and_a_plain_row(group):
    """Rows 0-2 fork a 37-token prefix, row 3 a 100-token one (its suffix empty), row 4 has no
    prefix: each row's output and LSE match its own reference."""
    gen = torch.Generator().manual_seed(11 * group)
    hkv = 2
    k, v = make_cache(60, hkv, D, gen)
    pool = torch.randperm(60, generator=gen).to(torch.int32)
    pre_a, pre_b = pool[:3], pool[3:10]
    lens = [5, 0, 40, 0, 70]  # suffix tokens of rows 0-3; row 4's whole context
    tables = random_tables(lens, pool[10:])
    q = torch.randn(len(lens), hkv * group, D, generator=gen).to(torch.bfloat16)
    seq_lens = torch.tensor(lens, dtype=torch.int32)
    groups = [PrefixGroup(pre_a, 37, 0, 3), PrefixGroup(pre_b, 100, 3, 1)]
    out, lse = grouped_shared_prefix_decode_attention(q, k, v, groups, tables, seq_lens)
    refs = [ref_shared_prefix_decode(q[0:3], k, v, pre_a, 37, tables[0:3], seq_lens[0:3]),
            ref_shared_prefix_decode(q[3:4], k, v, pre_b, 100, tables[3:4], seq_lens[3:4]),
            ref_paged_decode(q[4:5], k, v, tables[4:5], seq_lens[4:5])]
    ref_out = torch.cat([r[0] for r in refs])
    ref_lse = torch.cat([r[1] for r in refs])
    assert rel_err(out, ref_out) <= 1e-2
    assert (lse - ref_lse).abs().max() <= 1e-3


def test_no_group_is_the_paged_kernel():
    gen = torch.Generator().manual_seed(3)
    k, v = make_cache(20, 1, D, gen)
    lens = [17, 33]
    tables = random_tables(lens, torch.randperm(20, generator=gen).to(torch.int32))
    q = torch.randn(2, 4, D, generator=gen).to(torch.bfloat16)
    seq_lens = torch.tensor(lens, dtype=torch.int32)
    out, lse = grouped_shared_prefix_decode_attention(q, k, v, [], tables, seq_lens)
    ref_out, ref_lse = ref_paged_decode(q, k, v, tables, seq_lens)
    assert rel_err(out, ref_out) <= 1e-2 and (lse - ref_lse).abs().max() <= 1e-3


def test_overlapping_groups_are_refused():
    q = torch.zeros(4, 2, D, dtype=torch.bfloat16)
    k = v = torch.zeros(4, 16, 1, D, dtype=torch.bfloat16)
    pages = torch.zeros(1, dtype=torch.int32)
    with pytest.raises(ValueError, match="disjoint"):
        grouped_shared_prefix_decode_attention(
            q, k, v, [PrefixGroup(pages, 16, 0, 3), PrefixGroup(pages, 16, 2, 2)],
            torch.zeros(4, 1, dtype=torch.int32), torch.zeros(4, dtype=torch.int32))


def test_slots_no_launch_writes_do_not_leak_garbage():
    """The partial states are allocated uninitialised: slots no launch writes (the prefix slots
    of the row in no group, and of groups with fewer splits) must not reach the output even
    when that memory holds NaN (it did: 0 x NaN in the merge gave NaN rows, seen once under
    memory pressure)."""
    gen = torch.Generator().manual_seed(5)
    k, v = make_cache(60, 2, D, gen)
    pool = torch.randperm(60, generator=gen).to(torch.int32)
    lens = [5, 40, 70]
    tables = random_tables(lens, pool[10:])
    q = torch.randn(3, 8, D, generator=gen).to(torch.bfloat16)
    seq_lens = torch.tensor(lens, dtype=torch.int32)
    groups = [PrefixGroup(pool[:7], 100, 0, 2)]
    plan = plan_grouped(q, k, groups, tables)
    plan.po.fill_(float("nan"))
    plan.plse[:, :, plan.nsp:].fill_(float("nan"))  # suffix slots: every launch writes them
    out, lse = grouped_shared_prefix_decode_attention(q, k, v, groups, tables, seq_lens,
                                                      plan=plan)
    assert torch.isfinite(out.float()).all() and torch.isfinite(lse).all()
    ref_out, ref_lse = ref_paged_decode(q[2:], k, v, tables[2:], seq_lens[2:])
    assert rel_err(out[2:], ref_out) <= 1e-2
