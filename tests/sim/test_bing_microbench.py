"""Figs 15/16 ran an engine-level microbenchmark (artifact figure14/15 scripts): a fixed pool of
slots fed raw token ids straight to Parrot's runner, which ran every pushed Fill and every
Generate in one forward pass. So no chat template wraps the prompts and no per-iteration token
budget splits the fills; the shipped experiments say both."""

from __future__ import annotations

from parrotsim.api import RunConfig, load_experiment, simulate
from parrotsim.workloads.bing import prompt_lengths


def _first_slots(budget: int, template: str) -> tuple[list[float], list[int]]:
    """Last-fill times and prompt lengths of the first three requests of Fig 15's Baseline w/o
    Sharing (whole 5.3-6.9K-token prompts filled per request) on three slots."""
    run = next(r for r in load_experiment("paper/fig15").runs
               if r.labels["variant"] == "baseline_without_sharing")
    data = run.config.model_dump(mode="json")
    data["cluster"]["scheduler"]["slots"] = 3
    data["cluster"]["engine"]["max_num_batched_tokens"] = budget
    data["client"] = {"kind": "langchain", "chat_template": template}
    calls = simulate(RunConfig.model_validate(data)).calls.set_index("app_id")
    first = calls.loc[["bing-0", "bing-1", "bing-2"]]
    return first["last_fill"].tolist(), first["prompt_len"].tolist()


def test_without_a_budget_the_pushed_fills_share_one_forward():
    together, _ = _first_slots(1_000_000, "none")
    assert together[0] == together[1] == together[2]
    apart, _ = _first_slots(8192, "none")  # one 5-7K-token fill per iteration
    assert apart[0] < apart[1] < apart[2]


def test_raw_token_ids_carry_no_template():
    _, raw = _first_slots(1_000_000, "none")
    _, wrapped = _first_slots(1_000_000, "vicuna_v1.1")
    assert [w - r for w, r in zip(wrapped, raw, strict=True)] == [38, 38, 38]


def test_shipped_bing_experiments_run_the_microbenchmark():
    longest = max(prompt_lengths())
    for name in ("paper/fig15", "paper/fig16"):
        for run in load_experiment(name).runs:
            cfg = run.config
            assert cfg.client.chat_template == "none", name
            assert cfg.cluster.engine.max_num_batched_tokens >= (
                cfg.cluster.scheduler.slots * longest), name


def test_fig16_runs_the_artifacts_two_scripts():
    # 16a: the per-request script over all 288 prompts; 16b: the script that stops after its
    # first wave, i.e. the first 64 shuffled prompts
    for run in load_experiment("paper/fig16").runs:
        slots = run.config.cluster.scheduler.slots
        assert run.config.workload.requests == {32: "all", 64: "sampled"}[slots]


def test_slot_latency_starts_when_a_calls_fill_starts():
    """The script started a request's clock at its push into a slot, after the shared prefix
    was filled: ``mean_slot_latency`` runs from the iteration that first fills a call, so the
    first pool's calls (which waited for the prefix fill at the engine) do not count it."""
    run = next(r for r in load_experiment("paper/fig15").runs
               if r.labels["variant"] == "parrot")
    data = run.config.model_dump(mode="json")
    data["cluster"]["scheduler"]["slots"] = 3
    result = simulate(RunConfig.model_validate(data))
    calls = result.calls
    first = calls[calls["app_id"].isin(["bing-0", "bing-1", "bing-2"])]
    assert (first["engine_arrived"] == 0.0).all()
    assert (first["admitted"] > 0.3).all()  # after the 5,107-token prefix fill
    slot = (calls["finished"] - calls["admitted"]).mean()
    assert result.summary["mean_slot_latency"] == slot
    assert result.summary["mean_engine_latency"] > slot
