"""How many engine iterations a request waits to get into a busy FastChat 0.2.32 vLLM worker.

FastChat's OpenAI server asks the worker for its context length (``/model_details``) and the
prompt's token count (``/count_token``) before it posts ``/worker_generate``, three HTTP calls
in sequence, each on a new connection (``fetch_remote`` opens an ``aiohttp.ClientSession`` per
call). The worker serves HTTP and runs vLLM 0.1.4's ``AsyncLLMEngine`` on one asyncio loop, and
``AsyncLLMEngine.engine_step`` runs ``LLMEngine.step()`` synchronously on that loop: while an
iteration runs, no HTTP call is served. So each call waits for the running iteration to end,
and a request reaches the scheduler only some iterations after it left the server.

This script measures that wait with the real code: FastChat 0.2.32's ``vllm_worker`` app under
uvicorn (its own process, as deployed), vLLM 0.1.4's ``AsyncLLMEngine`` / ``LLMEngine`` /
``Scheduler`` from the wheel, and the server's own ``check_length`` and
``generate_completion`` as the caller. The GPU iteration is a stand-in: ``time.sleep(STEP)``
on the engine's thread (the real iteration blocks the loop the same way: it ends with the
sampler's ``.item()`` reads), then one token for every scheduled sequence. A few background
requests keep the engine iterating; serial probe requests of one output token then call
``check_length`` (two calls) and ``generate_completion``. From the worker's log of iterations
(monotonic times, the request ids each ran) it counts, per probe, the iteration ends between
the first call and the start of the iteration that ran the probe's prompt (``admit``: with no
waiting but for the running iteration, 1), within ``check_length`` (``check``), and between
the end of that iteration and the reply (``reply``: ideally 0).

The same is counted for a stand-in with the loop structure of Parrot's engine server, written
here (``parrot_serve``): one asyncio loop for uvicorn and the engine, ``asyncio.sleep(1e-6)``
then one blocking iteration, handlers that await their job's event; each of Parrot's Fill,
Fill, Generate requests is one such call. Its ``admit`` is per call.

Run (outside the project's environment; the FastChat venv of ``fastchat_frontend/run.sh``
plus ``torch``; the vLLM wheel unzipped, not installed; a LLaMA ``tokenizer.json``)::

    /tmp/fc/bin/pip install torch==2.13.0
    python calibrate/tools/fastchat_worker_hops.py /tmp/vllm014 /tmp/tok/llama_tokenizer OUT.csv

(``/tmp/vllm014`` as in ``vllm_step_host.py``; ``/tmp/tok`` as in ``vllm_detokenize.py``.)

Not the artifact's code: the stand-in iteration, and ``detokenize_incrementally`` (constant
time; ``vllm_detokenize.py`` times the real one). The controller's two calls (``/list_models``,
``/get_worker_address``) are left out: the controller does no GPU work, so it is never busy.
"""

from __future__ import annotations

import asyncio
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vllm_step_host, beside this file
PROMPT = ("Write an one-sentence summary (AS SHORT AS POSSIBLE) of the following:\n"
          + " ".join(["lorem ipsum dolor sit amet"] * 90) + "\nCONCISE SUMMARY:")
STEPS = (0.02, 0.05, 0.1, 0.3, 1.0)


def serve(port: int, step_s: float, wheel: Path, tok_dir: Path, log: Path) -> None:
    """The worker process: FastChat's vllm_worker app over the wheel's engine, stand-in GPU.
    Appends to ``log`` one JSON line per iteration (monotonic start and end, the request ids it
    ran) and per request added (time, id, the prompt's last word)."""
    import importlib

    from transformers import PreTrainedTokenizerFast
    from vllm_step_host import async_shell, engine_shell, load_vllm
    v = load_vllm(wheel)
    sys.modules["vllm"].AsyncLLMEngine = v.aengine.AsyncLLMEngine  # FastChat imports it
    seqmod = importlib.import_module("vllm.sequence")

    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(tok_dir / "tokenizer.json"),
                                        bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    cache = v.config.CacheConfig(block_size=16, gpu_memory_utilization=0.9, swap_space=0)
    cache.num_gpu_blocks, cache.num_cpu_blocks = 100_000, 0
    sched_cfg = v.config.SchedulerConfig(max_num_batched_tokens=8000, max_num_seqs=256,
                                         max_model_len=16384)

    out = log.open("a", buffering=1)  # line by line: the process is killed at the end

    def execute_model(seq_group_metadata_list, **_):
        t0 = time.monotonic()
        time.sleep(step_s)  # the GPU iteration, blocking the loop as the real one does
        out.write(json.dumps({"step": [t0, time.monotonic()], "ids": [
            m.request_id for m in seq_group_metadata_list]}) + "\n")
        return {sid: seqmod.SequenceOutputs(sid, sid, 5, {5: 0.0})
                for m in seq_group_metadata_list for sid in m.seq_data}

    eng = engine_shell(v, cache, sched_cfg, execute_model, tokenizer)
    add_request = eng.add_request

    def logged_add(request_id, prompt, *args, **kwargs):
        out.write(json.dumps({"added": time.monotonic(), "id": request_id,
                              "tag": prompt.split()[-1]}) + "\n")
        return add_request(request_id, prompt, *args, **kwargs)
    eng.add_request = logged_add
    eng.model_config = types.SimpleNamespace(hf_config=types.SimpleNamespace(
        max_position_embeddings=16384, rope_scaling=None))
    aeng = async_shell(v, eng)

    import uvicorn
    from fastchat.serve import vllm_worker as fw
    fw.engine = aeng
    fw.worker = fw.VLLMWorker("http://127.0.0.1:1", f"http://127.0.0.1:{port}", "w0",
                              "lmsys/vicuna-7b-v1.3", ["gpt-3.5-turbo"], 9999, True, aeng,
                              None)
    uvicorn.run(fw.app, host="127.0.0.1", port=port, log_level="warning")


def parrot_serve(port: int, step_s: float, log: Path) -> None:
    """A stand-in with the loop structure of Parrot's engine server, written here: uvicorn and
    the engine loop share one asyncio loop, the loop awaits ``asyncio.sleep(1e-6)``
    (``ENGINE_LOOP_INTERVAL``) and then runs one blocking iteration, and each ``/fill`` or
    ``/generate`` handler queues a job and awaits its ``asyncio.Event`` (parrot/engine/
    http_server.py, llm_engine.py, builtin/builtin_engine.py). Jobs tagged ``bg`` never end
    (they keep the engine iterating); any other job ends with the iteration that runs it."""
    import uvicorn
    from fastapi import FastAPI, Request
    app, jobs, out = FastAPI(), [], log.open("a", buffering=1)

    async def handle(request: Request) -> dict:
        payload = await request.json()
        job = (payload["tag"], asyncio.Event())
        jobs.append(job)
        out.write(json.dumps({"added": time.monotonic(), "id": payload["tag"],
                              "tag": payload["tag"]}) + "\n")
        await job[1].wait()
        return {"ok": True}
    handle.__annotations__["request"] = Request  # a class, not this module's string
    app.post("/fill")(handle)
    app.post("/generate")(handle)

    async def engine_loop() -> None:
        while True:
            await asyncio.sleep(1e-6)
            if not jobs:
                continue
            t0, ran = time.monotonic(), list(jobs)
            time.sleep(step_s)  # the GPU iteration, blocking the loop
            out.write(json.dumps({"step": [t0, time.monotonic()],
                                  "ids": [tag for tag, _ in ran]}) + "\n")
            for tag, done in ran:
                if tag != "bg":
                    jobs.remove((tag, done))
                    done.set()

    loop = asyncio.new_event_loop()
    server = uvicorn.Server(uvicorn.Config(app=app, loop=loop, host="127.0.0.1", port=port,
                                           log_level="warning"))
    loop.create_task(engine_loop())
    loop.run_until_complete(server.serve())


async def parrot_probe(port: int, step_s: float, n: int) -> list[dict]:
    """Serial calls of Parrot's shape: Fill, Fill, Generate, each an aiohttp POST on a new
    session as Parrot's ``afill`` / ``agenerate`` send them; the first call's times."""
    import aiohttp
    addr = f"http://127.0.0.1:{port}"

    async def post(path: str, tag: str) -> None:
        async with aiohttp.ClientSession() as session:
            async with session.post(addr + path, json={"tag": tag}) as response:
                await response.read()
    for _ in range(300):
        try:
            await post("/fill", "warm")
            break
        except Exception:  # noqa: BLE001 (the server is still starting)
            await asyncio.sleep(0.2)
    load = asyncio.create_task(post("/generate", "bg"))
    await asyncio.sleep(5 * step_s + 1.0)
    rows = []
    for i in range(n):
        for k, path in enumerate(("/fill", "/fill", "/generate")):
            t0 = time.monotonic()
            await post(path, f"probe{i}.{k}")
            rows.append({"step_s": step_s, "probe": i, "tag": f"probe{i}.{k}", "sent": t0,
                         "checked": t0, "replied": time.monotonic()})
        await asyncio.sleep((i % 5) * step_s / 5)
    load.cancel()
    return rows


async def probe(port: int, step_s: float, n: int, background: int) -> list[dict]:
    """Serial probes of one output token each; client-side monotonic times per probe."""
    from fastchat.serve import openai_api_server as api
    addr = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            await api.fetch_remote(addr + "/model_details", {"model": "gpt-3.5-turbo"})
            break
        except Exception:  # noqa: BLE001 (the worker is still starting)
            await asyncio.sleep(0.2)
    params = {"model": "gpt-3.5-turbo", "temperature": 0.0, "top_p": 1.0, "echo": False,
              "stop": None}
    loads = [asyncio.create_task(api.generate_completion(
        {**params, "prompt": PROMPT, "max_new_tokens": 10**6}, addr)) for _ in range(background)]
    await asyncio.sleep(5 * step_s + 1.0)
    request = types.SimpleNamespace(model="gpt-3.5-turbo")
    rows = []
    for i in range(n):
        prompt = f"{PROMPT} probe{i}"
        t0 = time.monotonic()
        await api.check_length(request, prompt, 1, addr)
        t1 = time.monotonic()
        await api.generate_completion({**params, "prompt": prompt, "max_new_tokens": 1}, addr)
        t2 = time.monotonic()
        rows.append({"step_s": step_s, "probe": i, "tag": f"probe{i}", "sent": t0,
                     "checked": t1, "replied": t2})
        await asyncio.sleep((i % 5) * step_s / 5)  # land at different phases of an iteration
    for t in loads:
        t.cancel()
    return rows


def count_boundaries(rows: list[dict], log: Path) -> None:
    """Add to each probe, from the worker's log, the iteration ends it waited for: from its
    first call to the start of the iteration that ran its prompt (``admit``; with no waiting
    but for the running iteration, 1), between the end of that iteration and the reply
    (``reply``; ideally 0), and within ``check_length`` alone; all in STEP units too."""
    steps, added = [], {}
    for line in log.read_text().splitlines():
        rec = json.loads(line)
        if "step" in rec:
            steps.append((rec["step"][0], rec["step"][1], set(rec["ids"])))
        else:
            added[rec["tag"]] = rec["id"]
    ends = [e for _, e, _ in steps]
    for r in rows:
        rid = added[r["tag"]]
        start, stop = next((b, e) for b, e, ids in steps if rid in ids)
        r["admit_boundaries"] = sum(r["sent"] < e <= start for e in ends)
        r["check_boundaries"] = sum(r["sent"] < e <= r["checked"] for e in ends)
        r["reply_boundaries"] = sum(stop < e <= r["replied"] for e in ends)
        r["total_steps"] = (r["replied"] - r["sent"]) / r["step_s"]


def run_one(server: str, k: int, step_s: float, wheel: Path, tok: Path) -> list[dict]:
    """Start the ``server`` (``fastchat`` or ``parrot``) for one STEP, probe it, count."""
    port = 21500 + 10 * (server == "parrot") + k
    log = Path(tempfile.mkdtemp()) / "worker.jsonl"
    serve_args = ([str(wheel), str(tok)] if server == "fastchat" else []) + [str(log)]
    proc = subprocess.Popen([sys.executable, __file__, f"--serve-{server}", str(port),
                             str(step_s), *serve_args], cwd="/tmp", env=dict(os.environ))
    n = 8 if step_s >= 0.3 else 20
    try:
        rows = asyncio.run(probe(port, step_s, n, background=4) if server == "fastchat"
                           else parrot_probe(port, step_s, n))
    finally:
        proc.kill()  # uvicorn's graceful stop would wait for the background requests
        proc.wait()
    count_boundaries(rows, log)
    for r in rows:
        r["server"] = server
    return rows


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--serve-fastchat":
        serve(int(argv[1]), float(argv[2]), Path(argv[3]), Path(argv[4]), Path(argv[5]))
        return 0
    if argv and argv[0] == "--serve-parrot":
        parrot_serve(int(argv[1]), float(argv[2]), Path(argv[3]))
        return 0
    servers = ("fastchat", "parrot")
    if len(argv) == 4:
        servers = tuple(argv.pop().split(","))
    if len(argv) != 3:
        print(__doc__.split("Run")[0], file=sys.stderr)
        print("usage: fastchat_worker_hops.py WHEEL_DIR TOKENIZER_DIR OUT.csv "
              "[fastchat,parrot]", file=sys.stderr)
        return 2
    wheel, tok, out = Path(argv[0]), Path(argv[1]), Path(argv[2])
    import fastchat
    try:
        import uvloop  # noqa: F401
        loop = "uvloop"
    except ImportError:
        loop = "asyncio"
    print(f"fschat {fastchat.__version__}, python {sys.version.split()[0]}, loop {loop}",
          flush=True)
    rows = []
    for server in servers:
        for k, step_s in enumerate(STEPS):
            got = run_one(server, k, step_s, wheel, tok)
            rows += got
            keys = (("check_boundaries", "admit_boundaries", "reply_boundaries")
                    if server == "fastchat" else ("admit_boundaries", "reply_boundaries"))
            for key in (*keys, "total_steps"):
                vals = sorted(r[key] for r in got)
                print(f"{server:8s} STEP {step_s:5.2f} s: {key:17s} median "
                      f"{vals[len(vals) // 2]:5.2f} min {vals[0]:5.2f} max {vals[-1]:5.2f} "
                      "iterations", flush=True)
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["server", *[k for k in rows[0] if k != "server"]])
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
