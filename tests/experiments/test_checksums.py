"""A cached run is reused only if every one of its files reads as written (issue 21): a damaged
``calls.parquet`` beside a good ``summary.json`` makes the run run again (it used to be taken
from the cache, and reading its table failed later)."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest

from parrotsim.sim.harness.experiment import expand, load_experiment
from parrotsim.sim.harness.runner import run_experiment
from parrotsim.sim.harness.store import MARKER, TABLES, read_record


def test_summary_lists_every_file_with_size_and_checksum(tiny, tmp_path):
    out = tmp_path / "out"
    run_experiment(tiny, out, jobs=1, progress=False)
    key = expand(load_experiment(tiny))[0].key
    folder = out / "runs" / key
    files = json.loads((folder / MARKER).read_text())["files"]
    assert set(files) == {f"{t}.parquet" for t in TABLES} | {"config.json"}
    for name, meta in files.items():
        data = (folder / name).read_bytes()
        assert meta == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()[:16]}
    assert read_record(out / "runs", key)["status"] == "ok"


@pytest.mark.parametrize("damage", ["garbage", "flipped byte", "missing", "no list"])
def test_damaged_run_is_run_again(damage, tiny, tmp_path, spy):
    out = tmp_path / "out"
    run_experiment(tiny, out, jobs=1, progress=False)
    n = len(spy)
    key = expand(load_experiment(tiny))[0].key
    calls = out / "runs" / key / "calls.parquet"
    good = calls.read_bytes()
    if damage == "garbage":
        calls.write_bytes(b"garbage")
    elif damage == "flipped byte":  # same size: only the checksum tells
        calls.write_bytes(good[:100] + bytes([good[100] ^ 1]) + good[101:])
    elif damage == "missing":
        calls.unlink()
    else:  # a record without the list of files (an older parrotsim) is not trusted
        marker = out / "runs" / key / MARKER
        record = json.loads(marker.read_text())
        del record["files"]
        marker.write_text(json.dumps(record))
    assert read_record(out / "runs", key) is None
    frame = run_experiment(tiny, out, jobs=1, progress=False)
    assert len(spy) == n + 1  # that run alone, the others from the cache
    assert (frame["status"] == "ok").all() and calls.read_bytes() == good
    assert len(pd.read_parquet(calls)) == 20
