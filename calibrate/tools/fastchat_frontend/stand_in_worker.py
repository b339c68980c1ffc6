"""A stand-in FastChat worker on PORT that answers every endpoint the OpenAI server calls at
once (the GPU's time is left out, so what remains is the front end's own cost)."""

import sys

import uvicorn
from fastapi import FastAPI, Request
from fastchat.model.model_adapter import get_conversation_template

app = FastAPI()
CONV = get_conversation_template("lmsys/vicuna-7b-v1.3")
TEXT = " ".join(["word"] * 50)  # a 50-token answer, like the maps of Figs 14 and 19


@app.post("/worker_get_status")
async def status(request: Request) -> dict:
    return {"model_names": ["gpt-3.5-turbo"], "speed": 1, "queue_length": 0}


@app.post("/worker_generate")
async def generate(request: Request) -> dict:
    prompt_tokens = len((await request.json())["prompt"]) // 4
    return {"text": TEXT, "error_code": 0, "finish_reason": "length",
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 50,
                      "total_tokens": prompt_tokens + 50}}


@app.post("/count_token")
async def count(request: Request) -> dict:
    return {"count": len((await request.json())["prompt"]) // 4, "error_code": 0}


@app.post("/worker_get_conv_template")
async def template(request: Request) -> dict:
    return {"conv": CONV}


@app.post("/model_details")
async def details(request: Request) -> dict:
    return {"context_length": 4096}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
