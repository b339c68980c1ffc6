"""The GPU replay end to end on the CPU: the wall-clock environment, the real engine and
GpuForward (the tiny LLaMA, Triton's interpreter) serving forked prefixes with the shared-prefix
kernel and private prompts with the paged one. Checks that every call completes with the
simulator's bookkeeping; no timing is asserted."""

import pytest

pytest.importorskip("torch")

from parrotsim.api import run_config  # noqa: E402
from parrotsim.calibrate.replay.executor import Replay  # noqa: E402
from parrotsim.calibrate.replay.gpu import GpuForward  # noqa: E402
from parrotsim.workloads.app import Text, single_call_app  # noqa: E402


def apps(shared: bool):
    system = Text("sys", 40)  # 40 tokens: a padded 3-page prefix
    return [single_call_app(f"a{i}", 0.002 * i,
                            ((system,) if shared else ()) + (Text(f"q{i}", 9 + i),), 3)
            for i in range(4)]


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["shared_prefix", "paged"])
def test_replay_runs_on_the_tiny_model(kernel):
    shared = kernel == "shared_prefix"
    cfg = run_config(
        workload={"kind": "sharegpt", "num_requests": 4, "rate": 1.0},  # replaced by apps
        network={"model": "none"}, client={"kind": "parrot"},
        cluster={"engines": 1, "profile": "h200_llama-7b", "prefix_cache": shared,
                 "kernel": kernel,
                 "engine": {"policy": "parrot", "max_batch_size": 8,
                            "max_num_batched_tokens": 512, "num_kv_cache_blocks": 64},
                 "scheduler": {"policy": "round_robin"}})
    replay = Replay(cfg, None, apps=apps(shared), vocab=256)
    gpu = GpuForward("tiny", 64, replay.table_width(), graphs=False, device="cpu",
                     decode_attention="shared_prefix" if shared else "paged")
    replay.device.forward = gpu
    assert replay.shared_prefix_pages() == ((3,) if shared else ())
    result = replay.run()
    calls, it = result.calls, result.iterations
    assert len(calls) == 4 and (calls["finished"] > calls["first_token"]).all()
    assert (it["wall_s"] > 0).all() and it["end"].is_monotonic_increasing
    if shared:
        assert (calls["cached_len"] == 40).all()
        assert (it.loc[it["decode_seqs"] > 1, "shared_pages"] == 3).any()
    assert gpu.calls["eager"] == len(it)
