"""Host time of one vLLM 0.1.4 decode iteration outside the model's forward pass, per batch size.

vLLM 0.1.4 runs each iteration synchronously on one thread: the scheduler picks the batch,
``Worker._prepare_inputs`` builds the input lists and copies them to the GPU, the model runs,
then the ``Sampler`` samples **one sequence group at a time** (for greedy decoding an
``argmax`` launch and two ``.item()`` reads per sequence, each a GPU round trip), and the
engine updates the scheduler, detokenizes, checks stop conditions and builds one
``RequestOutput`` per request. Under FastChat's worker the ``AsyncLLMEngine`` then wakes one
coroutine per request (an ``asyncio.wait_for`` per request per iteration) whose body turns the
output into JSON. None of that overlaps the GPU: the sampler's first ``.item()`` waits for the
forward pass, and the next forward pass is launched only after all of it. Parrot's engine
sampled the whole batch with one ``multinomial`` (``parrot/engine/builtin/models/sampler.py``).

This script times that path with the real code of the vLLM 0.1.4 wheel (scheduler, block
manager, ``_prepare_inputs``, ``Sampler``, ``LLMEngine.step``, ``AsyncLLMEngine.generate``),
the model's forward pass replaced by a preallocated hidden-state buffer (LLaMA-7B width, the
32,000-token vocabulary, fp16), on a CUDA GPU. What is *not* the wheel's code: stand-in
modules for its compiled ops, xformers, transformers and psutil (never called on this path;
tensor parallelism is 1, where ``gather_from_tensor_model_parallel_region`` returns its input);
``detokenize_incrementally`` (a constant-time stand-in: the real one is timed by
``vllm_detokenize.py``); the per-request consumer of ``--mode async``, which does what FastChat
0.2.32's ``VLLMWorker.generate_stream`` does per output (join the text, count tokens,
``json.dumps`` a dict), written here, not imported.

Run on a CUDA machine (the vLLM wheel is read, not installed; needs torch)::

    pip download vllm==0.1.4 --no-deps --only-binary=:all: --python-version 3.11 -d /tmp/w
    unzip -q /tmp/w/vllm-0.1.4-*.whl 'vllm/*.py' -d /tmp/vllm014   # the Python files only
    python calibrate/tools/vllm_step_host.py /tmp/vllm014 OUT_DIR

(on a GPU machine with no registry, carry /tmp/vllm014 into the working tree).

It prints, per mode, prompt length and batch, the median wall time of a decode iteration and
its parts, and a least-squares line ``a + b * batch``; OUT_DIR/vllm_step_host.csv gets the rows.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import sys
import time
import types
from pathlib import Path

import numpy as np
import torch

HIDDEN, VOCAB, BLOCK = 4096, 32000, 16


def _stub(name: str, **attrs) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod
    return mod


def load_vllm(root: Path) -> types.SimpleNamespace:
    """Import the pure-Python modules of the unzipped wheel under ``root``, bypassing
    ``vllm/__init__.py`` (it loads the model zoo and the compiled ops)."""
    pkg = root / "vllm"
    if not (pkg / "core" / "scheduler.py").is_file():
        raise SystemExit(f"{root}: no vllm/core/scheduler.py (unzip the vLLM 0.1.4 wheel there)")
    _stub("vllm", __path__=[str(pkg)])
    for ops in ("activation_ops", "attention_ops", "cache_ops", "layernorm_ops",
                "pos_encoding_ops"):
        _stub(f"vllm.{ops}")
    _stub("xformers", __path__=[])
    _stub("xformers.ops", AttentionBias=object)
    try:
        import psutil  # noqa: F401 (vllm.utils imports it; never called on this path)
    except ImportError:
        _stub("psutil", virtual_memory=lambda: types.SimpleNamespace(total=0))
    if "transformers" not in sys.modules:
        try:
            import transformers  # noqa: F401
        except ImportError:
            _stub("transformers", PretrainedConfig=object, AutoConfig=None,
                  AutoTokenizer=None, PreTrainedTokenizer=object,
                  PreTrainedTokenizerFast=object)
    _stub("vllm.transformers_utils", __path__=[str(pkg / "transformers_utils")])
    _stub("vllm.transformers_utils.config", get_config=None)
    _stub("vllm.transformers_utils.tokenizer", get_tokenizer=None,
          detokenize_incrementally=lambda tok, prev, new_id, skip_special_tokens=False:
          ("x", ""))
    _stub("vllm.model_executor", __path__=[str(pkg / "model_executor")],
          get_model=None, set_random_seed=None)
    _stub("vllm.model_executor.parallel_utils", __path__=[str(pkg / "model_executor" /
                                                             "parallel_utils")])
    _stub("vllm.model_executor.parallel_utils.tensor_parallel",
          gather_from_tensor_model_parallel_region=lambda x: x)
    _stub("vllm.worker", __path__=[str(pkg / "worker")])
    _stub("vllm.worker.cache_engine", CacheEngine=None)
    import importlib

    from vllm.model_executor.input_metadata import InputMetadata
    sys.modules["vllm.model_executor"].InputMetadata = InputMetadata
    names = {"config": "vllm.config", "scheduler": "vllm.core.scheduler",
             "sampling": "vllm.sampling_params", "engine": "vllm.engine.llm_engine",
             "aengine": "vllm.engine.async_llm_engine", "worker": "vllm.worker.worker",
             "sampler": "vllm.model_executor.layers.sampler", "utils": "vllm.utils"}
    return types.SimpleNamespace(**{k: importlib.import_module(v) for k, v in names.items()})


def engine_shell(v, cache, sched_cfg, execute_model, tokenizer):
    """An ``LLMEngine`` of the wheel with its ``__init__`` skipped (it loads a model): the
    wheel's scheduler, one worker whose ``execute_model`` is given, ``tokenizer``."""
    eng = object.__new__(v.engine.LLMEngine)
    eng.scheduler_config, eng.cache_config = sched_cfg, cache
    eng.parallel_config = types.SimpleNamespace(worker_use_ray=False)
    eng.workers = [types.SimpleNamespace(execute_model=execute_model)]
    eng.tokenizer = tokenizer
    eng.seq_counter = v.utils.Counter()
    eng.scheduler = v.scheduler.Scheduler(sched_cfg, cache)
    eng.log_stats = False
    return eng


def async_shell(v, eng):
    """The wheel's ``AsyncLLMEngine`` over ``eng`` (its ``__init__`` skipped: it builds one)."""
    aeng = object.__new__(v.aengine.AsyncLLMEngine)
    aeng.worker_use_ray = aeng.engine_use_ray = aeng.log_requests = False
    aeng.engine = eng
    aeng.request_outputs, aeng.request_events = {}, {}
    aeng.is_engine_running, aeng.kicking_request_id = False, None
    return aeng


class Clock:
    """Accumulated wall seconds per part of the current iteration."""

    def __init__(self) -> None:
        self.parts: dict[str, float] = {}

    def wrap(self, name: str, fn):
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.parts[name] = self.parts.get(name, 0.0) + time.perf_counter() - t0
        return timed


def build_engine(v, batch: int, prompt_len: int, max_tokens: int, clock: Clock):
    """An ``LLMEngine`` of the wheel (its ``__init__`` skipped: it loads a model) whose one
    worker is the wheel's ``Worker`` with the forward pass replaced by a buffer read."""
    cache = v.config.CacheConfig(block_size=BLOCK, gpu_memory_utilization=0.9, swap_space=0)
    cache.num_gpu_blocks = batch * ((prompt_len + max_tokens) // BLOCK + 2)
    cache.num_cpu_blocks = 0
    sched_cfg = v.config.SchedulerConfig(max_num_batched_tokens=8000, max_num_seqs=256,
                                         max_model_len=65536)
    dev = torch.device("cuda")
    embedding = (torch.randn(VOCAB, HIDDEN, device=dev) * 0.02).half()
    hidden = torch.randn(8192, HIDDEN, device=dev).half()
    sampler = v.sampler.Sampler(VOCAB)

    worker = object.__new__(v.worker.Worker)  # for its _prepare_inputs
    worker.block_size = BLOCK
    prepare = clock.wrap("prepare", worker._prepare_inputs)

    def execute_model(seq_group_metadata_list, blocks_to_swap_in, blocks_to_swap_out,
                      blocks_to_copy):
        tokens, _positions, meta = prepare(seq_group_metadata_list)
        with torch.inference_mode():
            return timed_sample(embedding, hidden[: tokens.shape[0]], meta)

    timed_sample = clock.wrap("sampler", sampler.forward)
    eng = engine_shell(v, cache, sched_cfg, execute_model, types.SimpleNamespace(eos_token_id=2))
    eng.step = clock.wrap("step", eng.step)
    rng = np.random.default_rng(batch)
    params = v.sampling.SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=True)
    prompts = [rng.integers(3, VOCAB, prompt_len).tolist() for _ in range(batch)]
    return eng, params, prompts


def decode_steps_sync(v, batch: int, prompt_len: int, warm: int, steps: int) -> list[dict]:
    clock = Clock()
    eng, params, prompts = build_engine(v, batch, prompt_len, warm + steps + 4, clock)
    for i, p in enumerate(prompts):
        eng.add_request(str(i), None, params, prompt_token_ids=p)
    while eng.scheduler.waiting:
        eng.step()
    rows = []
    for j in range(warm + steps):
        clock.parts = {}
        torch.cuda.synchronize()
        eng.step()
        if j >= warm:
            rows.append(dict(clock.parts))
    return rows


def decode_steps_async(v, batch: int, prompt_len: int, warm: int, steps: int) -> list[dict]:
    clock = Clock()
    total = warm + steps + 4
    eng, params, prompts = build_engine(v, batch, prompt_len, total, clock)
    aeng = async_shell(v, eng)
    starts: list[tuple[float, int]] = []
    inner = eng.step

    def step():
        starts.append((time.perf_counter(), len(eng.scheduler.running)))
        return inner()
    eng.step = step

    async def consumer(i: int) -> None:
        # what FastChat 0.2.32's VLLMWorker.generate_stream does with every output
        async for out in aeng.generate(None, params, str(i), prompt_token_ids=prompts[i]):
            text = " ".join(o.text for o in out.outputs)
            usage = {"prompt_tokens": len(out.prompt_token_ids),
                     "completion_tokens": sum(len(o.token_ids) for o in out.outputs)}
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            json.dumps({"text": text, "error_code": 0, "usage": usage,
                        "cumulative_logprob": [o.cumulative_logprob for o in out.outputs],
                        "finish_reason": out.outputs[0].finish_reason}) + "\0"

    async def run() -> None:
        await asyncio.gather(*(consumer(i) for i in range(batch)))

    asyncio.run(run())
    full = [t for t, n in starts if n == batch]
    gaps = np.diff(full)[warm: warm + steps]
    return [{"step": float(g)} for g in gaps]


def gpu_batched_sampler_ms(batch: int) -> float:
    """CUDA-event time of the sampler's batched kernels (logits matmul, softmax, log)."""
    dev = torch.device("cuda")
    emb = torch.randn(VOCAB, HIDDEN, device=dev).half()
    h = torch.randn(batch, HIDDEN, device=dev).half()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(20):
        start.record()
        probs = torch.softmax(torch.matmul(h, emb.t()), dim=-1, dtype=torch.float)
        torch.log(probs)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return float(np.median(times[5:]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheel_dir", type=Path, help="folder holding the unzipped wheel's vllm/")
    ap.add_argument("out", type=Path)
    ap.add_argument("--batches", default="1,2,4,8,16,32,64,128,192,256")
    ap.add_argument("--prompt-lens", default="200,2000")
    ap.add_argument("--warm", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("needs a CUDA GPU (the sampler's per-sequence reads are GPU round trips)",
              file=sys.stderr)
        return 2
    v = load_vllm(args.wheel_dir)
    args.out.mkdir(parents=True, exist_ok=True)
    batches = [int(b) for b in args.batches.split(",")]
    rows = []
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"python {sys.version.split()[0]}", flush=True)
    for mode, fn in (("sync", decode_steps_sync), ("async", decode_steps_async)):
        for plen in [int(p) for p in args.prompt_lens.split(",")]:
            for b in batches:
                samples = fn(v, b, plen, args.warm, args.steps)
                med = {k: 1e3 * float(np.median([s.get(k, 0.0) for s in samples]))
                       for k in ("step", "prepare", "sampler")}
                gpu = gpu_batched_sampler_ms(b)
                row = {"mode": mode, "prompt_len": plen, "batch": b, "steps": len(samples),
                       "step_ms": med["step"], "prepare_ms": med["prepare"],
                       "sampler_ms": med["sampler"], "gpu_batched_sampler_ms": gpu,
                       "host_ms": med["step"] - gpu}
                rows.append(row)
                print(f"{mode:5s} prompt {plen:5d} batch {b:4d}: step {med['step']:7.3f} ms "
                      f"(prepare {med['prepare']:6.3f}, sampler {med['sampler']:6.3f}, "
                      f"batched GPU part {gpu:6.3f}) host {row['host_ms']:7.3f} ms", flush=True)
            sel = [r for r in rows if r["mode"] == mode and r["prompt_len"] == plen]
            b_, a_ = np.polyfit([r["batch"] for r in sel], [r["host_ms"] for r in sel], 1)
            print(f"{mode:5s} prompt {plen:5d}: host ms = {a_:.3f} + {1e3 * b_:.1f} us x batch",
                  flush=True)
    with open(args.out / "vllm_step_host.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
