"""MetaGPT (Fig 18): per-round tokens exactly as the artifact replayed them."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from parrotsim.cli.workloads import main
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.simulation import simulate
from parrotsim.workloads.app import call_dependencies, prompt_tokens, validate_app
from parrotsim.workloads.metagpt import MetaGpt, logged_rounds, metagpt_app


def _replays(parrot_data):
    lines = (parrot_data / "metagpt_workload.jsonl").read_text().splitlines()
    return {d["branches"]: d["rounds"] for d in map(json.loads, lines)}


@pytest.mark.parametrize("files", [4, 8, 12, 16])
def test_rounds_match_the_replay(parrot_data, files):
    rounds = _replays(parrot_data)[files]
    app = validate_app(MetaGpt(files=files).build(np.random.default_rng(0))[0])
    assert len(app.stages) == len(rounds) == 10
    by_name = {c.name: c for c in app.calls}
    for stage, facts in zip(app.stages, rounds, strict=True):
        calls = [by_name[n] for n in stage]
        assert len(calls) == facts["n"] == files
        shared = {c.prompt[0] for c in calls}
        assert len(shared) == 1 and shared.pop().tokens == facts["shared_len"]
        divergent = [sum(p.tokens for p in c.prompt[1:]) for c in calls]
        assert divergent == [facts["diverged_len"]] * files
        assert [c.output_tokens for c in calls] == facts["out_lens"]
        batch_sum = sum(prompt_tokens(app, c) + c.output_tokens for c in calls)
        assert abs(batch_sum - facts["batch_sum"]) <= 0.01 * facts["batch_sum"]


def test_logged_calls_agree_with_table(parrot_data):
    with open(parrot_data / "parrot_metagpt_calls_tokens.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["round"] in ("r1", "r2", "r3")]
    for r, rnd in zip((1, 2, 3), logged_rounds()[1:], strict=True):
        mine = [x for x in rows if x["round"] == f"r{r}"]
        assert [int(x["llama_output_tokens"]) for x in mine] == list(rnd.outputs)
        assert {int(x["llama_shared_prefix_tokens_in_round"]) for x in mine} == \
            {rnd.shared_tokens}


def test_rounds_wait_for_the_previous_round():
    app = MetaGpt(files=4).build(np.random.default_rng(0))[0]
    by_name = {c.name: c for c in app.calls}
    for prev, stage in zip(app.stages, app.stages[1:], strict=False):
        for name in stage:
            assert set(call_dependencies(app, by_name[name])) == set(prev)
    assert app.outputs == tuple(f"{n}.out" for n in app.stages[-1])
    assert all(not call_dependencies(app, by_name[n]) for n in app.stages[0])


def test_describe_metagpt_16_files(capsys):
    assert main(["describe", "metagpt", "--files", "16"]) == 0
    out = capsys.readouterr().out
    rows = [ln.split() for ln in out.splitlines() if ln.strip()[:1].isdigit()
            and "r" in ln and ".." in ln]
    assert [int(r[0]) for r in rows] == list(range(10))
    for r in rows:
        assert int(r[1]) == 16
        assert float(r[4].rstrip("%")) > 95.0
    assert "r9_reviser_0 .. r9_reviser_15" in out
    assert "DAG depth 10 calls, width 16 calls" in out
    # round 3 (revisers): 16 x (5352 + 121) prompt tokens, outputs of files 1-8 twice
    assert "87,568" in out and "8,298" in out


def _shared_text(app, round_: int) -> str:
    call = next(c for c in app.calls if c.name.startswith(f"r{round_}_"))
    return call.prompt[0].content_id


def test_replayed_rounds_reuse_the_logged_rounds_text():
    reused = metagpt_app("m", 0.0, files=2)
    assert [_shared_text(reused, r).split("/", 2)[2] for r in range(10)] == \
        [f"r{r}/shared" for r in (0, 1, 2, 3, 2, 3, 2, 3, 2, 3)]
    fresh = metagpt_app("m", 0.0, files=2, reuse_logged_text=False)
    assert len({_shared_text(fresh, r) for r in range(10)}) == 10


def test_reused_prefixes_kept_for_the_app_are_filled_once():
    """With the artifact's replay and prefix lifetime, rounds 4-9 fork the prefixes of rounds
    2-3 still cached: Parrot's latency drops; with prefixes freed after their round it does
    not."""
    def jct(lifetime: str, reuse: bool) -> float:
        cfg = RunConfig.model_validate({
            "workload": {"kind": "metagpt", "files": 2, "reuse_logged_text": reuse},
            "client": {"kind": "parrot"},
            "cluster": {"prefix_cache": True, "prefix_lifetime": lifetime,
                        "engine": {"policy": "parrot"},
                        "scheduler": {"policy": "parrot", "dag_aware": True}}})
        return simulate(cfg).summary["mean_jct"]

    kept = jct("app", True)
    assert kept < jct("users", True)
    assert jct("users", True) == jct("users", False)  # freed each round: the reuse is unseen
