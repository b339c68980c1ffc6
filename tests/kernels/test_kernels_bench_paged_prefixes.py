"""The paged-kernel-over-several-prompts benchmark (kernels/bench_paged_prefixes.py): its block
tables on a small case, and the tiny case end to end under the interpreter."""

import csv

import torch

from parrotsim.kernels.bench_paged_prefixes import FIELDS, main, tables


def test_shared_tables_point_rows_of_a_prompt_at_its_pages_and_distinct_ones_do_not():
    cpu = torch.device("cpu")
    shared, lens, which, _ = tables(6, 2, 17, (37, 20), cpu, distinct=False)
    private, lens_p, _, _ = tables(6, 2, 17, (37, 20), cpu, distinct=True)
    assert which == [0, 1, 0, 1, 0, 1] and lens.tolist() == lens_p.tolist()
    assert lens.tolist() == [3 * 16 + 17, 2 * 16 + 17] * 3  # whole prompt pages + own tokens
    assert all(shared[r, :3].tolist() == shared[0, :3].tolist() for r in (2, 4))
    assert all(shared[r, :2].tolist() == shared[1, :2].tolist() for r in (3, 5))
    prefix_pages = [p for r in range(6) for p in private[r, :3 if r % 2 == 0 else 2].tolist()]
    assert len(set(prefix_pages)) == len(prefix_pages)  # nothing to reuse
    own = [p for r in range(6) for p in shared[r, (3 if r % 2 == 0 else 2):][:2].tolist()]
    assert len(set(own)) == len(own)  # each row's own pages are its own


def test_tiny_case_writes_every_column(tmp_path):
    assert main(["--out", str(tmp_path), "--reps", "1"]) == 0
    rows = list(csv.DictReader((tmp_path / "paged_prefixes.csv").open()))
    assert len(rows) == 1 and all(rows[0][f] != "" for f in FIELDS)
    assert int(rows[0]["batch"]) == 4 and int(rows[0]["prefixes"]) == 2
