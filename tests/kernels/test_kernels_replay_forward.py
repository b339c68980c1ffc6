"""The GPU replay end to end on the CPU: the wall-clock environment, the real engine and
GpuForward (the tiny LLaMA, Triton's interpreter) serving forked prefixes with the shared-prefix
kernel and private prompts with the paged one. Checks that every call completes with the
simulator's bookkeeping; no timing is asserted."""

import pytest

pytest.importorskip("torch")

from parrotsim.api import run_config  # noqa: E402
from parrotsim.calibrate.replay.chunks import Chunk  # noqa: E402
from parrotsim.calibrate.replay.executor import Replay  # noqa: E402
from parrotsim.calibrate.replay.forward_batch import (  # noqa: E402
    to_forward_batch,
    to_grouped_forward_batch,
)
from parrotsim.calibrate.replay.gpu import GpuForward  # noqa: E402
from parrotsim.kernels.llama import LlamaConfig, LlamaModel  # noqa: E402
from parrotsim.workloads.app import Text, single_call_app  # noqa: E402


def apps(shared: bool, prefixes: int = 1, n: int = 4):
    systems = [Text("sys", 40), Text("sys2", 20)][:prefixes]  # padded 3- and 2-page prefixes
    return [single_call_app(f"a{i}", 0.002 * i,
                            ((systems[i % prefixes],) if shared else ())
                            + (Text(f"q{i}", 9 + i),), 3)
            for i in range(n)]


def _config(kernel: str, shared: bool):
    return run_config(
        workload={"kind": "sharegpt", "num_requests": 4, "rate": 1.0},  # replaced by apps
        network={"model": "none"}, client={"kind": "parrot"},
        cluster={"engines": 1, "profile": "h200_llama-7b", "prefix_cache": shared,
                 "kernel": kernel,
                 "engine": {"policy": "parrot", "max_batch_size": 8,
                            "max_num_batched_tokens": 512, "num_kv_cache_blocks": 64},
                 "scheduler": {"policy": "round_robin"}})


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["shared_prefix", "paged"])
def test_replay_runs_on_the_tiny_model(kernel):
    shared = kernel == "shared_prefix"
    cfg = _config(kernel, shared)
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



@pytest.mark.slow
def test_replay_serves_two_forked_prefixes_with_the_several_prefix_kernel():
    replay = Replay(_config("shared_prefix", True), None, apps=apps(True, 2, 6), vocab=256)
    gpu = GpuForward("tiny", 64, replay.table_width(), graphs=False, device="cpu",
                     decode_attention="shared_prefix")
    replay.device.forward = gpu
    assert replay.shared_prefix_pages() == (2, 3)
    result = replay.run()
    calls, it = result.calls, result.iterations
    assert len(calls) == 6 and (calls["finished"] > calls["first_token"]).all()
    grouped = it[it["shared_groups"] == 2]
    assert len(grouped) and (grouped["shared_pages"] == 5).all()  # 3 + 2 prefix pages
    assert result.engines["shared_kernel_grouped"].iloc[0] >= len(grouped)


def _fill(model, chunks):
    model.forward(to_forward_batch(chunks, [], "cpu", None, 0, 0))


@pytest.mark.slow
def test_several_prefix_batch_matches_the_paged_kernel_in_the_model():
    """A decode batch of two forked groups (padded to graph-sized rows) plus a row in no group:
    the several-prefix kernel's logits equal the paged kernel's over the same tables."""
    import numpy as np
    import torch

    rng = np.random.default_rng(4)
    model = LlamaModel(LlamaConfig.preset("tiny"), 40, "cpu", seed=2, prefill_backend="triton")
    ids = lambda n: rng.integers(0, 256, n)  # noqa: E731
    prefixes = {0: [0, 1], 1: [2, 3, 4]}  # group -> its prefix pages (32 and 48 tokens)
    _fill(model, [Chunk(ids(16 * len(p)), 0, p) for p in prefixes.values()])
    nxt = iter(range(5, 39))
    groups, plain = [], []
    for g, pages in prefixes.items():
        rows = []
        for k in range(2 + g):  # 2 and 3 rows
            own = [next(nxt), next(nxt)]
            n = 5 + 7 * k + g
            _fill(model, [Chunk(ids(n), 16 * len(pages), pages + own)])
            rows.append(Chunk(ids(1), 16 * len(pages) + n, pages + own))
        groups.append((len(pages), rows))
    table = [next(nxt), next(nxt)]
    _fill(model, [Chunk(ids(20), 0, table)])
    plain.append(Chunk(ids(1), 20, table))
    width, scratch = 6, 39
    fb = to_grouped_forward_batch([], groups, plain, "cpu", width, scratch, [3, 4], 2)
    assert fb.prefix_groups == ((0, 3, 2), (3, 4, 3))
    real = [0, 1, 3, 4, 5, 7]  # rows that are not padding
    model.decode_attention = "paged"
    paged = model.forward(fb)[real]
    model.decode_attention = "shared_prefix"
    grouped = model.forward(fb)[real]
    err = (grouped.float() - paged.float()).norm() / paged.float().norm()
    assert err <= 1e-2
    assert torch.isfinite(grouped).all()


class _EagerGraph:
    """DecodeGraph's contract on the CPU: copy a batch into the template's buffers, run."""

    def __init__(self, model, template):
        from parrotsim.kernels.llama import DecodeGraph
        self.model, self.batch = model, template
        self.names = DecodeGraph.buffer_names(template)

    def run(self, batch=None):
        for name in self.names:
            getattr(self.batch, name).copy_(getattr(batch, name))
        return self.model.forward(self.batch)


@pytest.mark.slow
def test_grouped_shapes_get_one_graph_each_and_the_clock_pauses(monkeypatch):
    """Decode batches of several groups run a graph per padded shape, captured when first
    met with the clock paused for the capture; the same shape again reuses it."""
    import numpy as np

    import parrotsim.calibrate.replay.gpu as gpu_mod
    monkeypatch.setattr(gpu_mod, "DecodeGraph", _EagerGraph)
    gpu = GpuForward("tiny", 40, 6, graphs=False, device="cpu",
                     decode_attention="shared_prefix")
    gpu.buckets = gpu_mod.BUCKETS
    paused = []
    gpu.pause_clock = paused.append
    one = lambda ctx, table: Chunk(np.array([3]), ctx, table)  # noqa: E731
    decodes = [one(33, [0, 1, 5, 6]), one(40, [0, 1, 7, 8]), one(50, [2, 3, 4, 9]),
               one(52, [2, 3, 4, 10]), one(60, [2, 3, 4, 11]), one(20, [12, 13])]
    layout = ((2, 2), (3, 3))
    for _ in range(2):
        gpu(None, [], decodes, layout)
    assert gpu.calls["captured"] == 1 and len(paused) == 1 and paused[0] > 0
    assert gpu.calls["graph"] == 2
    (key,) = [k for k in gpu.graphs if isinstance(k[0], tuple)]
    assert key == (((2, 2), (3, 3)), 1)
    gpu(None, [], decodes[:5] + [one(20, [12, 13]), one(25, [14, 15])], ((2, 2), (3, 3)))
    assert gpu.calls["captured"] == 2  # two rows in no group: another shape
