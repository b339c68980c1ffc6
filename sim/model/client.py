"""Client-side orchestration, as LangChain drove the baselines.

A call is sent as soon as every input it references has reached the client: calls without
dependencies go out when the app arrives (a map fan-out is sent concurrently), a dependent call
waits until its producers' outputs came back. Every call pays one round trip, half on the way in
and half on the way out. The app ends when all of its final outputs are back at the client.

Each call's round trip is drawn when its app is registered (in app order, then call order), so
two policies compared under one seed give every call the same round trip whatever the order in
which the calls are sent (common random numbers).

Each call is opened in the run's :class:`~parrotsim.sim.model.call_log.CallLog` when it is
sent and closed when its output is back (or it was rejected); an app's record is dropped once
the app is done (or failed) and none of its calls is still out, so the client holds the apps
and calls in flight only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import simpy

from parrotsim.core.config import StrictConfig
from parrotsim.sim.model.call_log import CallLog
from parrotsim.sim.model.cluster_policy import CallInfo
from parrotsim.sim.model.network import Network
from parrotsim.sim.model.sequence import Sequence
from parrotsim.workloads.app import App, Call, call_dependencies, prompt_tokens, var_lengths
from parrotsim.workloads.prefix_hash import shared_prefix

#: Tokens a chat template adds to a one-message prompt. The paper's baselines sent every call
#: through FastChat's OpenAI-compatible server, which wraps it in the model's conversation
#: template (vicuna_v1.1: "{system} USER: {message} ASSISTANT:"); counted with the LLaMA
#: tokenizer by calibrate/tools/chat_template_tokens.mjs (38 for every message tried).
CHAT_TEMPLATE_TOKENS = {"none": 0, "vicuna_v1.1": 38}


class LangChainClientConfig(StrictConfig):
    """``chat_template``: the conversation template the serving front end wraps every prompt
    in (``vicuna_v1.1``, FastChat's template for the paper's Vicuna models, adds
    :data:`CHAT_TEMPLATE_TOKENS` tokens to each prompt; ``none`` sends prompts as they are)."""

    kind: Literal["langchain"] = "langchain"
    chat_template: Literal["none", "vicuna_v1.1"] = "vicuna_v1.1"

    def template_tokens(self) -> int:
        """Tokens the front end adds to every prompt."""
        return CHAT_TEMPLATE_TOKENS[self.chat_template]


class AppRun:
    """Progress of one app at its client."""

    __slots__ = ("app", "seq", "lengths", "missing", "consumers", "outputs_left", "end", "sent",
                 "back", "rtts", "calls", "failed")

    def __init__(self, app: App, seq: int, rtts: list[float]) -> None:
        self.app = app
        self.seq = seq
        self.calls = {c.name: c for c in app.calls}
        self.rtts = dict(zip(self.calls, rtts, strict=True))  # seconds
        self.lengths = var_lengths(app)
        self.missing: dict[str, int] = {}
        self.consumers: dict[str, list[Call]] = {}  # call name -> calls waiting for it
        if len(app.calls) == 1:  # a lone call waits for nothing (validation saw to that)
            self.missing[app.calls[0].name] = 0
        else:
            producers = {c.output: c.name for c in app.calls}
            for c in app.calls:
                deps = call_dependencies(app, c, producers)
                self.missing[c.name] = len(deps)
                for d in deps:
                    self.consumers.setdefault(d, []).append(c)
        self.outputs_left = set(app.outputs)
        self.end = -1.0
        self.sent = 0
        self.back = 0  # calls sent whose output came back or that were rejected
        self.failed = False  # a call of the app was rejected: the app can never complete


class LangChainClient:
    """Drives apps call by call from the client side (see module docstring)."""

    def __init__(self, env: simpy.Environment, cfg: LangChainClientConfig, network: Network,
                 submit: Callable[[CallInfo], None], on_app_done: Callable[[AppRun], None],
                 next_uid: Callable[[], int], share_prefixes: bool = False,
                 log: CallLog | None = None) -> None:
        self.env = env
        self.cfg = cfg
        self.network = network
        self.submit = submit
        self.on_app_done = on_app_done
        self.next_uid = next_uid
        self.share_prefixes = share_prefixes  # engines cache shared prefixes (vLLM-style)
        self.template_tokens = cfg.template_tokens()
        self.log = CallLog() if log is None else log
        self.runs: dict[str, AppRun] = {}  # by app id, apps in flight
        self.apps = 0

    def start(self, app: App) -> None:
        """Register ``app``: its calls without dependencies are sent at its arrival time."""
        network = self.network
        run = AppRun(app, self.apps, [network.rtt() for _ in app.calls])
        self.runs[app.app_id] = run
        self.apps += 1
        sent = max(app.arrival, self.env.now)
        for call in app.calls:
            if run.missing[call.name] == 0:
                self._send(run, call, sent)

    def _send(self, run: AppRun, call: Call, sent: float | None = None) -> None:
        """Send ``call`` at ``sent`` (default: now); it reaches the service half a round trip
        later."""
        app = run.app
        prompt = prompt_tokens(app, call, run.lengths) + self.template_tokens
        uid = self.next_uid()
        info = CallInfo(uid, app.app_id, run.seq, call.name, prompt, call.output_tokens,
                        app_kind=app.kind, max_requests=call.hints.max_requests_per_engine,
                        rtt=run.rtts[call.name], sent=self.env.now if sent is None else sent)
        if self.share_prefixes:
            shared = shared_prefix(app, call)
            if shared is not None:
                info.shared_prefix, info.shared_tokens = shared
        run.sent += 1
        self.log.opens(info)
        self.env.timeout(info.sent - self.env.now + info.rtt / 2).callbacks.append(
            lambda _e: self.submit(info))

    def on_done(self, info: CallInfo, seq: Sequence) -> None:
        """The engine finished the call: its output travels back to the client. When no call
        waits for it, nothing happens on its arrival but bookkeeping, so no event is needed."""
        run = self.runs[info.app_id]
        if info.call in run.consumers:
            self.env.timeout(info.rtt / 2).callbacks.append(lambda _e: self._receive(info))
        else:
            self._receive(info, self.env.now + info.rtt / 2)

    def _receive(self, info: CallInfo, at: float | None = None) -> None:
        info.returned = self.env.now if at is None else at
        run = self.runs[info.app_id]
        call = run.calls[info.call]
        for consumer in run.consumers.get(call.name, ()):
            run.missing[consumer.name] -= 1
            if run.missing[consumer.name] == 0:
                self._send(run, consumer)
        if call.output in run.outputs_left:
            run.outputs_left.discard(call.output)
            run.end = max(run.end, info.returned)
            if not run.outputs_left and not run.failed:
                self.on_app_done(run)
        self._back(run, info)

    def on_failed(self, info: CallInfo) -> None:
        """The service rejected the call: its app fails now (it is done, without an end time),
        unless it already ended or failed; calls that depend on it are never sent."""
        run = self.runs[info.app_id]
        if not run.failed and run.outputs_left:
            run.failed = True
            self.on_app_done(run)
        self._back(run, info)

    def _back(self, run: AppRun, info: CallInfo) -> None:
        """``info`` ended (output back or rejected): close its row; drop the app's record once
        the app is over and none of its calls is out (no call can be sent after that)."""
        self.log.closes(info)
        run.back += 1
        if run.back == run.sent and (run.failed or not run.outputs_left):
            del self.runs[run.app.app_id]
