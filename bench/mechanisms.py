"""What each fidelity switch of issue 16 contributes to a headline claim.

Prints, for the claims the switches touch (Figs 12a, 14a, 19), the simulated ratio with every
mechanism on (the shipped paper experiments, all their seeds and documents) and with each one
switched off in turn:

    python bench/mechanisms.py

Switches: ``client.chat_template`` (LangChain baselines through FastChat's Vicuna template),
``client.prefix_fill_job`` (Parrot calls as Fill(prefix), Fill(rest), Generate),
``cluster.engine.request_tracking`` (vLLM workers decoding prompts after each prefill) and
``cluster.scheduler.mode`` (the artifact's dispatcher in Fig 19).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from parrotsim.api import RunConfig, load_experiment, simulate

Mod = Callable[[dict], None]


def _set(part: str, when: tuple[str, str], **values) -> Mod:
    """A config edit: set ``values`` on ``part`` (dotted) when its ``when`` field matches."""
    def edit(data: dict) -> None:
        node = data
        for key in part.split("."):
            node = node[key]
        if node.get(when[0]) == when[1]:
            node.update(values)
    return edit


SWITCHES: dict[str, Mod | None] = {
    "every mechanism on": None,
    "chat_template none": _set("client", ("kind", "langchain"), chat_template="none"),
    "prefix_fill_job off": _set("client", ("kind", "parrot"), prefix_fill_job=False),
    "request_tracking off": _set("cluster.engine", ("policy", "vllm"), request_tracking=False),
    "scheduler mode paper": _set("cluster.scheduler", ("policy", "parrot"), mode="paper"),
}


def mean_metric(name: str, variant: str, metric: str, mod: Mod | None, **labels) -> float:
    """Mean of ``metric`` over the experiment's runs of ``variant`` matching ``labels``."""
    values = []
    for run in load_experiment(name).runs:
        if run.labels["variant"] != variant or any(run.labels.get(k) != v
                                                   for k, v in labels.items()):
            continue
        data = run.config.model_dump(mode="json")
        if mod is not None:
            mod(data)
        values.append(simulate(RunConfig.model_validate(data)).summary[metric])
    return float(np.mean(values))


def show(name: str, slow: str, fast: str, metric: str, switches: list[str], **labels) -> None:
    for title in switches:
        mod = SWITCHES[title]
        ratio = (mean_metric(name, slow, metric, mod, **labels)
                 / mean_metric(name, fast, metric, mod, **labels))
        print(f"{name} {labels or ''} {metric}: {title:22s} {slow}/{fast} = {ratio:.3f}")


if __name__ == "__main__":
    both = ["every mechanism on", "chat_template none", "prefix_fill_job off"]
    show("paper/fig12a", "baseline_vllm", "parrot", "mean_jct", both,
         **{"workload.background_rate": 3.5})
    show("paper/fig14", "baseline_vllm", "parrot", "mean_jct", both,
         **{"workload.output_len": 100})
    for metric, slow in (("mean_jct_map_reduce", "baseline_throughput"),
                         ("chat_normalized_latency", "baseline_latency")):
        show("paper/fig19", slow, "parrot", metric, list(SWITCHES))
