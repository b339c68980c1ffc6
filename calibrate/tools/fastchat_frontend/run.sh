#!/bin/bash
# CPU cost per request of FastChat's OpenAI-compatible server (the paper baselines' front end):
# a controller, four stand-in workers that answer at once, the server, then bursts of
# ChatCompletion requests from openai 0.27 and from LangChain's LLMChain over ChatOpenAI.
#   python3 -m venv /tmp/fc && /tmp/fc/bin/pip install "fschat==0.2.32" "pydantic<2" \
#     "openai==0.27.8" "fastapi==0.103.0" "starlette==0.27.0" "uvicorn==0.23.2" \
#     "httpx==0.24.1" "anyio==3.7.1" "aiohttp==3.8.5" tiktoken "langchain==0.0.335"
#   bash calibrate/tools/fastchat_frontend/run.sh /tmp/fc/bin/python
# Prints one line per run: wall time, and CPU ms per request of the client, the server and the
# controller (from /proc, so other load on the machine does not inflate it).
set -u
P=${1:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
LOGS=$(mktemp -d)
cd "$LOGS"  # not the repository: its top-level folders shadow module names
$P -m fastchat.serve.controller --host 127.0.0.1 --port 21001 > ctl.log 2>&1 & CTL=$!
WORKERS=()
for i in 0 1 2 3; do $P "$HERE/stand_in_worker.py" $((21002 + i)) > w$i.log 2>&1 & WORKERS+=($!); done
trap 'kill $CTL ${WORKERS[*]} ${API:-} 2>/dev/null' EXIT
for i in 0 1 2 3; do
  for _ in $(seq 90); do curl -sf -o /dev/null -X POST http://127.0.0.1:$((21002 + i))/model_details && break; sleep 1; done
  curl -s -X POST http://127.0.0.1:21001/register_worker -H 'Content-Type: application/json' -d \
    "{\"worker_name\": \"http://127.0.0.1:$((21002 + i))\", \"check_heart_beat\": false, \"worker_status\": {\"model_names\": [\"gpt-3.5-turbo\"], \"speed\": 1, \"queue_length\": 0}}" > /dev/null
done
$P -m fastchat.serve.openai_api_server --host 127.0.0.1 --port 8000 \
  --controller-address http://127.0.0.1:21001 > api.log 2>&1 & API=$!
for _ in $(seq 90); do curl -sf -o /dev/null http://127.0.0.1:8000/v1/models && break; sleep 1; done
$P -c "import fastchat; print('fschat', fastchat.__version__)"
for client in openai langchain; do
  $P "$HERE/burst_client.py" 20 serial $API,$CTL $client
  for n in 10 30 60 225; do $P "$HERE/burst_client.py" $n burst $API,$CTL $client; done
done
