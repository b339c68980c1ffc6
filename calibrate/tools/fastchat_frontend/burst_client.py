"""Send N ChatCompletion requests (a ~480-token map prompt, 50 output tokens) through
FastChat's OpenAI server with openai 0.27's ``acreate``, all at once (``burst``) or one after
another (``serial``), and print the wall time and the CPU milliseconds per request of this
client and of the processes PIDS (the server, the controller), read from /proc.

    python burst_client.py N burst|serial SERVER_PID,CONTROLLER_PID
"""

import asyncio
import os
import sys
import time

import openai

openai.api_base, openai.api_key = "http://127.0.0.1:8000/v1", "EMPTY"
PROMPT = ("Write an one-sentence summary (AS SHORT AS POSSIBLE) of the following:\n"
          + " ".join(["lorem ipsum dolor sit amet"] * 90) + "\nCONCISE SUMMARY:")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def one():
    return await openai.ChatCompletion.acreate(
        model="gpt-3.5-turbo", temperature=0, max_tokens=50,
        messages=[{"role": "user", "content": PROMPT}])


async def main(n: int, mode: str, pids: list[int]) -> None:
    await one()  # warm: the conversation template is cached, the workers are known
    before, start, own = [cpu_s(p) for p in pids], time.perf_counter(), time.process_time()
    errors = 0
    if mode == "burst":
        results = await asyncio.gather(*[one() for _ in range(n)], return_exceptions=True)
        errors = sum(isinstance(r, Exception) for r in results)
    else:
        for _ in range(n):
            await one()
    wall, own = time.perf_counter() - start, time.process_time() - own
    per = [(cpu_s(p) - b) / n * 1e3 for p, b in zip(pids, before, strict=True)]
    print(f"{mode:6s} N={n:4d}: wall {wall:6.2f} s ({wall / n * 1e3:6.1f} ms/request), "
          f"{errors} failed; CPU ms per request: client {own / n * 1e3:.1f}, "
          f"server {per[0]:.1f}, controller {per[1]:.1f}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], [int(p) for p in sys.argv[3].split(",")]))
