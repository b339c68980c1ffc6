"""Send N ChatCompletion requests (a ~480-token map prompt, 50 output tokens) through
FastChat's OpenAI server, all at once (``burst``) or one after another (``serial``), and print
the wall time and the CPU milliseconds per request of this client and of the processes PIDS (the
server, the controller), read from /proc. Each request is openai 0.27's ``acreate`` or, with
``langchain``, a LangChain ``LLMChain.arun`` over ``ChatOpenAI`` as the artifact's map-reduce
baseline made its map calls.

    python burst_client.py N burst|serial SERVER_PID,CONTROLLER_PID [openai|langchain]
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


async def with_openai():
    return await openai.ChatCompletion.acreate(
        model="gpt-3.5-turbo", temperature=0, max_tokens=50,
        messages=[{"role": "user", "content": PROMPT}])


def langchain_map():
    """The map call of the artifact's LangChain baseline: an LLMChain over ChatOpenAI."""
    from langchain.chains import LLMChain
    from langchain.chat_models import ChatOpenAI
    from langchain.prompts import PromptTemplate

    llm = ChatOpenAI(model_name="gpt-3.5-turbo", temperature=0, max_tokens=50,
                     openai_api_base=openai.api_base, openai_api_key="EMPTY")
    template = PromptTemplate(input_variables=["text"], template=(
        "Write an one-sentence summary (AS SHORT AS POSSIBLE) of the following:\n{text}\n"
        "CONCISE SUMMARY:"))
    chain = LLMChain(llm=llm, prompt=template)
    text = " ".join(["lorem ipsum dolor sit amet"] * 90)
    return lambda: chain.arun(text=text)


async def main(n: int, mode: str, pids: list[int], client: str) -> None:
    one = langchain_map() if client == "langchain" else with_openai
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
    print(f"{client:9s} {mode:6s} N={n:4d}: wall {wall:6.2f} s ({wall / n * 1e3:6.1f} ms/request), "
          f"{errors} failed; CPU ms per request: client {own / n * 1e3:.1f}, "
          f"server {per[0]:.1f}, controller {per[1]:.1f}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], [int(p) for p in sys.argv[3].split(",")],
                     sys.argv[4] if len(sys.argv) > 4 else "openai"))
