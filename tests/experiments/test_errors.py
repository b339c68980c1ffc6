"""Every kind of bad experiment file: ``FILE:LINE:COL: path: message`` lines, exit 2, no output."""

from __future__ import annotations

import re

import pytest

from parrotsim.cli import main

BASE = "name: t\nrun:\n  workload: {kind: sharegpt, num_requests: 20}\n"

CASES = {
    "unknown top-level key": (
        BASE + "sweeps: {}\n",
        [(4, 1, "sweeps", "Extra inputs are not permitted")]),
    "unknown key in run": (
        BASE + "  clusters: {engines: 2}\n",
        [(4, 3, "clusters", "Extra inputs are not permitted")]),
    "unknown workload knob": (
        "name: t\nrun:\n  workload:\n    kind: sharegpt\n    chunk_size: 5\n",
        [(5, 5, "workload.chunk_size", "Extra inputs are not permitted")]),
    "wrong type": (
        BASE + "  cluster:\n    engines: two\n",
        [(5, 14, "cluster.engines", "valid integer")]),
    "out of range": (
        "name: t\nrun:\n  workload: {kind: sharegpt, num_requests: 0}\n",
        [(3, 44, "workload.num_requests", "greater than 0")]),
    "unknown workload kind": (
        "name: t\nrun:\n  workload: {kind: nope}\n",
        [(3, 20, "workload.kind", "does not match any of the expected tags")]),
    "missing workload": (
        "name: t\nrun:\n  cluster: {engines: 2}\n",
        [(3, 3, "workload", "Field required")]),
    "bad sweep axis path": (
        BASE + "sweep:\n  workload.chunk_sz: [1, 2]\n",
        [(5, 3, "workload.chunk_sz", "Extra inputs are not permitted")]),
    "bad sweep value": (
        BASE + "sweep:\n  workload.rate: [1.0, -2, 3]\n",
        [(5, 24, "workload.rate", "greater than 0")]),
    "empty sweep axis": (
        BASE + "sweep:\n  workload.rate: []\n",
        [(5, 18, "sweep.workload.rate", "at least 1 item")]),
    "malformed axis path": (
        BASE + "sweep:\n  workload..rate: [1]\n",
        [(5, 3, "sweep.workload..rate", "dotted field path")]),
    "bad variant override": (
        BASE + "variants:\n  hf: {cluster.engine: {policy: hf, capacity_tokens: 4096}}\n",
        [(5, 37, "cluster.engine.capacity_tokens", "Extra inputs are not permitted")]),
    "variant override through a scalar": (
        BASE + "variants:\n  v: {workload.num_requests.x: 1}\n",
        [(5, 7, "workload.num_requests", "is not a mapping")]),
    "override creates a mapping": (
        BASE + "variants:\n  v: {workload.rate.x: 1}\n",
        [(5, 24, "workload.rate", "valid number")]),
    "override combination": (
        BASE + "variants:\n  hf: {cluster.engine.policy: hf}\n"
        "sweep:\n  cluster.engine.capacity_tokens: [4096]\n",
        [(7, 3, "cluster.engine.capacity_tokens", "Extra inputs are not permitted")]),
    "seed in run": (
        BASE + "  seed: 3\n",
        [(4, 3, "run.seed", "seeds")]),
    "negative seed": (
        BASE + "seeds: [0, -1]\n",
        [(4, 12, "seeds.1", "greater than or equal to 0")]),
    "exclude unknown label": (
        BASE + "sweep:\n  workload.rate: [1, 2]\nexclude:\n  - {workload.rat: 1}\n",
        [(7, 6, "exclude.0.workload.rat", "not a label")]),
    "exclude unknown value": (
        BASE + "sweep:\n  workload.rate: [1, 2]\nexclude:\n  - {workload.rate: 3}\n",
        [(7, 21, "exclude.0.workload.rate", "not one of")]),
    "unknown profile": (
        BASE + "  cluster: {profile: no_such_profile}\n",
        [(4, 22, "cluster.profile", "unknown profile")]),
    "yaml syntax error": (
        "name: t\nrun:\n  workload: {kind: sharegpt\n  x: 1\n",
        [(4, 4, "<file>", "YAML syntax error")]),
    "duplicate key": (
        BASE + "  workload: {kind: sharegpt}\n",
        [(4, 3, "<file>", "duplicate key")]),
    "not a mapping": (
        "- name: t\n",
        [(1, 1, "<root>", "must be a mapping")]),
    "several errors at once": (
        "name: t\ndescripton: x\nrun:\n  workload: {kind: sharegpt, rate: 0}\n"
        "sweep:\n  cluster.engines: [1, 0]\n",
        [(2, 1, "descripton", "Extra inputs"), (4, 36, "workload.rate", "greater than 0"),
         (6, 24, "cluster.engines", "greater than or equal to 1")]),
}

LINE = re.compile(r"^(?P<file>.+):(?P<line>\d+):(?P<col>\d+): (?P<path>\S+): (?P<msg>.+)$")


@pytest.mark.parametrize("case", list(CASES))
def test_bad_file(case, write_yaml, tmp_path, capsys):
    text, expected = CASES[case]
    path = write_yaml(text)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    parsed = [LINE.match(ln) for ln in err]
    assert all(parsed), err
    got = [(int(m["line"]), int(m["col"]), m["path"], m["msg"]) for m in parsed]
    assert all(m["file"] == str(path) for m in parsed)
    assert len(got) == len(expected), err
    for (line, col, fpath, msg), (eline, ecol, epath, emsg) in zip(got, expected, strict=True):
        assert (line, col, fpath) == (eline, ecol, epath), err
        assert emsg in msg, err
    assert not out.exists()


def test_missing_file(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", str(tmp_path / "nope.yaml"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert re.match(r"^.*nope\.yaml:0:0: <file>: no such file$", err.strip())
    assert not out.exists()


def test_yaml_12_scalars(write_yaml, tmp_path, capsys):
    """YAML 1.1 pitfalls do not bite: ``1e3`` is a float, ``no`` stays a string."""
    from parrotsim.sim.harness.experiment import load_experiment

    exp = load_experiment(write_yaml(
        "name: t\nrun:\n  workload: {kind: sharegpt, num_requests: 2e1, rate: 1e3}\n"))
    assert exp.runs[0].config.workload.rate == 1000.0
    assert exp.runs[0].config.workload.num_requests == 20
    path = write_yaml("name: t\nrun:\n  workload: {kind: sharegpt, arrival: no}\n")
    assert main(["run", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "3:39: workload.arrival: Input should be 'poisson'" in capsys.readouterr().err
