"""The LangChain client's mechanisms on hand-built apps: the front end's chat template."""

import pytest

from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.simulation import simulate
from parrotsim.workloads.app import Text, single_call_app


def one_call(template: str | None, client: str = "langchain"):
    app = single_call_app("a-0", 0.0, [Text("hello", tokens=100)], 10)
    cfg = {"workload": {"kind": "sharegpt", "num_requests": 1}, "client": {"kind": client}}
    if client == "parrot":
        cfg["cluster"] = {"engine": {"policy": "parrot"}}
    if template is not None:
        cfg["client"]["chat_template"] = template
    return simulate(RunConfig.model_validate(cfg), apps=[app])


@pytest.mark.parametrize(("template", "tokens"), [("none", 100), ("vicuna_v1.1", 138),
                                                  (None, 138)])
def test_vicuna_template_adds_38_prompt_tokens(template, tokens):
    calls = one_call(template).calls
    assert calls["prompt_len"].tolist() == [tokens]


def test_the_template_costs_prefill_time():
    plain, templated = one_call("none").calls.iloc[0], one_call("vicuna_v1.1").calls.iloc[0]
    assert templated["first_token"] - templated["admitted"] > \
        plain["first_token"] - plain["admitted"]


def test_parrot_sends_prompts_without_a_template():
    assert one_call(None, client="parrot").calls["prompt_len"].tolist() == [100]
