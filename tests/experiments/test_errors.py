"""Every kind of bad experiment file: ``FILE:LINE:COL: path: message`` lines, exit 2, no output."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from parrotsim.api import RunConfig, run_config
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
    # every float finite (issue 21): NaN and infinities name their field wherever they come from
    "NaN in the base run": (
        "name: t\nrun:\n  workload: {kind: sharegpt, rate: .nan}\n",
        [(3, 36, "workload.rate", "finite number")]),
    "infinite sweep value": (
        BASE + "sweep:\n  workload.start: [0, .inf]\n",
        [(5, 23, "workload.start", "finite number")]),
    "infinite variant override": (
        BASE + "variants:\n  v: {cluster.scheduler: {policy: least_queue, heartbeat_s: .inf}}\n",
        [(5, 61, "cluster.scheduler.heartbeat_s", "finite number")]),
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
    # combinations of valid fields that cannot mean what they say (RunConfig's cross-field check)
    "shared-prefix kernel without prefix cache": (
        BASE + "  cluster:\n    kernel: shared_prefix\n",
        [(5, 13, "cluster.kernel", "needs cluster.prefix_cache: true")]),
    "shared-prefix kernel from a variant": (
        BASE + "  cluster: {prefix_cache: false}\nvariants:\n"
        "  on: {cluster.prefix_cache: true, cluster.kernel: shared_prefix}\n"
        "  off: {cluster.kernel: shared_prefix}\n",
        [(7, 25, "cluster.kernel", "needs cluster.prefix_cache: true")]),
    "one prefix per batch without the shared-prefix kernel": (
        BASE + "  cluster: {prefix_cache: true, one_prefix_per_batch: true}\n",
        [(4, 55, "cluster.one_prefix_per_batch", "the paged kernel shares no prefix")]),
    "prefix ttl without prefix cache": (
        BASE + "  cluster: {prefix_ttl_s: 600}\n",
        [(4, 27, "cluster.prefix_ttl_s", "cluster.prefix_cache is false")]),
    "hf engine with prefix cache": (
        BASE + "  cluster:\n    prefix_cache: true\n    engine: {policy: hf}\n",
        [(5, 19, "cluster.prefix_cache", "cannot fork a cached prefix")]),
    "pipelined Parrot client on vLLM engines": (
        BASE + "  client: {kind: parrot}\n",
        [(4, 11, "client.readiness", "the vllm engine would run it at once")]),
    "pipelined Parrot client on the HF engine": (
        BASE + "  client: {kind: parrot, readiness: dispatched}\n"
        "  cluster: {engine: {policy: hf}}\n",
        [(4, 37, "client.readiness", "the hf engine would run it at once")]),
    "Parrot scheduler deduction knob with the LangChain client": (
        BASE + "  cluster:\n"
        "    scheduler: {policy: parrot, dag_aware: true, latency_max_requests: 8}\n",
        [(5, 72, "cluster.scheduler.latency_max_requests", "only the Parrot client deduces")]),
    "Parrot scheduler deduction knob in artifact mode": (
        BASE + "  client: {kind: parrot}\n  cluster:\n    engine: {policy: parrot}\n"
        "    scheduler: {policy: parrot, mode: artifact, dag_aware: true, task_groups: false}\n",
        [(7, 79, "cluster.scheduler.task_groups", "no effect in mode artifact")]),
    "Parrot scheduler deduction knob without dag_aware": (
        BASE + "  client: {kind: parrot}\n  cluster:\n    engine: {policy: parrot}\n"
        "    scheduler: {policy: parrot, deduction: false}\n",
        [(7, 44, "cluster.scheduler.deduction", "without dag_aware: true")]),
    "prefix affinity with the LangChain client and no prefix cache": (
        BASE + "  cluster:\n    scheduler: {policy: parrot, ctx_aware: true}\n",
        [(5, 44, "cluster.scheduler.ctx_aware", "only with cluster.prefix_cache: true")]),
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


def test_meaningful_combinations_survive_a_round_trip():
    """The cross-field check judges values, not which fields were written: a config dumped with
    every default (as the store ships it to workers) validates again."""
    cfg = run_config(workload={"kind": "sharegpt", "num_requests": 5},
                     cluster={"scheduler": {"policy": "parrot", "dag_aware": True},
                              "engine": {"policy": "vllm"}})
    assert RunConfig.model_validate(cfg.model_dump(mode="json")) == cfg
    with pytest.raises(ValidationError, match="cluster.kernel"):
        run_config(workload={"kind": "sharegpt"}, cluster={"kernel": "shared_prefix"})


@pytest.mark.parametrize("old, new, field", [
    ("iteration_overhead_s: 0.0", "iteration_overhead_s: .inf", "curves.iteration_overhead_s"),
    ("memory_gib: 80.0", "memory_gib: .nan", "gpu.memory_gib"),
])
def test_nonfinite_profile_file(old, new, field, write_yaml, tmp_path, capsys):
    """A NaN or infinity in a profile file is exit 2 naming the profile's field (issue 21)."""
    from parrotsim.sim.model.profile import shipped_profiles

    text = shipped_profiles()["a100-80gb_llama-13b"].read_text()
    assert old in text
    profile = tmp_path / "bad.yaml"
    profile.write_text(text.replace(old, new, 1))
    path = write_yaml(BASE + f"  cluster: {{profile: {profile}}}\n")
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"cluster.profile: {profile}: {field}: Input should be a finite number" in err
    assert not (tmp_path / "out").exists()
