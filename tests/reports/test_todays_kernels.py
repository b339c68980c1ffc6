"""``parrotsim report --profile FAMILY`` runs today's kernels where the paper figures run the
artifact's: Parrot's 2023 kernel becomes the shared-prefix kernel, vLLM 0.1.4's no-split paged
kernel the split-KV one; nothing else in a variant changes."""

from parrotsim.api import shipped_experiments
from parrotsim.reports.build import _with_profile, todays_kernels


def test_todays_kernels_replaces_only_the_artifacts_kernels():
    variants = {"a": {"cluster.kernel": "parrot_2023", "cluster.paged_kernel": "vllm_0_1_4",
                      "cluster.prefix_cache": True},
                "b": {"cluster.kernel": "paged"}, "c": None}
    assert todays_kernels(variants) == {
        "a": {"cluster.kernel": "shared_prefix", "cluster.paged_kernel": "split_kv",
              "cluster.prefix_cache": True},
        "b": {"cluster.kernel": "paged"}, "c": {}}


def test_paper_figures_on_the_artifacts_kernels_and_h200_on_todays():
    paper = shipped_experiments()["paper/fig17"]
    kernels = {r.labels["variant"]: r.config.cluster.kernel
               for r in _with_profile(paper, None).runs}
    assert kernels["parrot"] == "parrot_2023"
    today = {r.labels["variant"]: (r.config.cluster.kernel, r.config.cluster.paged_kernel,
                                   r.config.cluster.profile)
             for r in _with_profile(paper, "h200").runs}
    assert today["parrot"] == ("shared_prefix", "split_kv", "h200_llama-7b")
    assert today["parrot_paged_attention"] == ("paged", "split_kv", "h200_llama-7b")
