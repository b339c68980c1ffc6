"""Parrot's client and session: apps submitted up front, dependencies resolved server-side.

The client posts an app's calls to the manager stage by stage (``App.stages``; one stage by
default): in batch mode (``App.submit == "concurrent"``) every call of a stage is posted at once,
staggered by ``stagger_s`` per call as the artifact did to keep their order; otherwise one after
another, each waiting for the previous post's response. Every post pays one round trip (half to
reach the server, half for the response); the next stage is posted once the previous stage's
posts have been answered. The final outputs are fetched with ``get``, which the paper's
emulation gave no extra latency: the app ends when its last final output is complete.

Server-side, a posted call becomes ready when every call it depends on has completed (the
calls it references and its ``after`` edges): no client round trip lies between dependent calls.
Each ready call reaches the cluster scheduler with its DAG annotations: topological depth,
deduced objective and task group (analysed once per DAG shape: ``dag_shapes``), the PrefixHash at each semantic-variable boundary and the
shared constant prefix it may fork (``cache_prefix``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import simpy
from pydantic import Field

from parrotsim.core.config import StrictConfig
from parrotsim.sim.model.call_log import CallLog
from parrotsim.sim.model.cluster_policy import CallInfo
from parrotsim.sim.model.dag_shapes import DagShapes
from parrotsim.sim.model.network import Network
from parrotsim.sim.model.sequence import Sequence
from parrotsim.workloads.app import App, Call, call_dependencies, prompt_tokens, var_lengths
from parrotsim.workloads.prefix_hash import prefix_hashes


class ParrotClientConfig(StrictConfig):
    """``cache_prefix``: calls declare their leading constant text as a shareable prefix;
    ``deduction``: annotate calls with the deduced objective and task group; ``readiness``:
    when a call may be dispatched, ``dispatched`` (the default: its producers were dispatched,
    the artifact's pipelined mode that the experiments ran; the call waits on its engine until
    its inputs complete, and the artifact's streaming of partial outputs into the consumer's
    fill is not modelled; calls with ``after`` edges always wait for completion, since their
    prompt text stands for the predecessors' results) or ``complete`` (its producers finished,
    as the paper's text and the HEAD code do). ``prefix_fill_job``: the artifact ran a call as
    three requests in turn, Fill(constant prefix), Fill(rest), Generate
    (``parrot/os/process/thread.py``), so an engine fills a call's leading constant text in a
    job of its own unless the call forks it from a cached context; off, one Fill job takes the
    whole prompt."""

    kind: Literal["parrot"] = "parrot"
    stagger_s: float = Field(default=0.001, ge=0)
    prefix_fill_job: bool = True
    cache_prefix: bool = True
    deduction: bool = True
    readiness: Literal["complete", "dispatched"] = "dispatched"

    def template_tokens(self) -> int:
        """Parrot sends prompts as they are: no chat template."""
        return 0


class ParrotSession:
    """Server-side state of one app: what was posted, what completed, what is still missing."""

    __slots__ = ("app", "seq", "lengths", "missing", "undispatched", "dependents", "posted",
                 "infos", "seqs", "pipelined", "outputs_left", "end", "stage", "pending_posts",
                 "calls", "failed", "deps", "closed")

    def __init__(self, app: App, seq: int) -> None:
        self.app = app
        self.seq = seq
        self.lengths = var_lengths(app)
        self.calls = {c.name: c for c in app.calls}
        self.missing: dict[str, int] = {}  # dependencies not complete
        self.undispatched: dict[str, int] = {}  # dependencies not dispatched
        self.dependents: dict[str, list[Call]] = {}
        self.deps: dict[str, tuple[str, ...]] = {}  # call name -> the calls it depends on
        producers = {c.output: c.name for c in app.calls}
        for c in app.calls:
            deps = self.deps[c.name] = call_dependencies(app, c, producers)
            self.missing[c.name] = len(deps)
            self.undispatched[c.name] = len(deps)
            for d in deps:
                self.dependents.setdefault(d, []).append(c)
        self.posted: set[str] = set()
        self.infos: dict[str, CallInfo] = {}
        self.seqs: dict[str, Sequence] = {}  # dispatched calls' engine sequences
        # calls that may be dispatched before their producers finish (pipelined mode): not
        # those with `after` edges, whose prompt text stands for the predecessors' results
        self.pipelined = {c.name: not c.after for c in app.calls}
        self.outputs_left = set(app.outputs)
        self.end = -1.0
        self.stage = 0
        self.pending_posts = 0
        self.failed = False  # a call of the app was rejected: the app can never complete
        self.closed = 0  # calls that ended (done or rejected)


class ParrotClient:
    """Submits apps the Parrot way and runs their DAGs server-side (see module docstring)."""

    def __init__(self, env: simpy.Environment, cfg: ParrotClientConfig, network: Network,
                 submit: Callable[[CallInfo], None], on_app_done: Callable[[ParrotSession], None],
                 next_uid: Callable[[], int],
                 notify_engine: Callable[[int], None] | None = None,
                 log: CallLog | None = None) -> None:
        self.env = env
        self.notify_engine = notify_engine
        self.cfg = cfg
        self.network = network
        self.submit = submit
        self.on_app_done = on_app_done
        self.next_uid = next_uid
        self.log = CallLog() if log is None else log  # calls opened when posted
        self.sessions: dict[str, ParrotSession] = {}  # by app id
        self.shapes = DagShapes(cfg.deduction)  # DAG analyses, once per app shape
        self.apps = 0

    def start(self, app: App) -> None:
        """Schedule ``app`` to begin at its arrival time."""
        session = ParrotSession(app, self.apps)
        self.sessions[app.app_id] = session
        self.apps += 1
        delay = max(0.0, app.arrival - self.env.now)
        self.env.timeout(delay).callbacks.append(lambda _e: self._begin(session))

    # ---- client side: posting --------------------------------------------------------------
    def _begin(self, s: ParrotSession) -> None:
        self._annotate(s)
        self._post_stage(s)

    def _stages(self, app: App) -> tuple[tuple[str, ...], ...]:
        return app.stages or (tuple(c.name for c in app.calls),)

    def _post_stage(self, s: ParrotSession) -> None:
        staged = s.app.stages
        if s.stage >= (len(staged) if staged else 1):  # no stages: one of every call
            return
        names = self._stages(s.app)[s.stage]
        s.stage += 1
        last = s.stage == (len(staged) if staged else 1)  # no stage follows this one
        by_name = s.calls
        if s.app.submit == "sequential":
            self._post_in_turn(s, [by_name[n] for n in names], 0, last)
            return
        s.pending_posts = len(names)
        answered = None if last else self._answered  # the last stage's answers start nothing
        for i, name in enumerate(names):
            call = by_name[name]
            if i == 0:  # posted now, not from an event of no delay
                self._post(s, call, answered)
                continue
            self.env.timeout(i * self.cfg.stagger_s).callbacks.append(
                lambda _e, c=call: self._post(s, c, answered))

    def _post_in_turn(self, s: ParrotSession, calls: list[Call], i: int, last: bool) -> None:
        if i == len(calls):
            self._post_stage(s)
            return
        after = None if last and i + 1 == len(calls) else (
            lambda _s: self._post_in_turn(s, calls, i + 1, last))
        self._post(s, calls[i], after)

    def _answered(self, s: ParrotSession) -> None:
        s.pending_posts -= 1
        if s.pending_posts == 0:
            self._post_stage(s)

    def _post(self, s: ParrotSession, call: Call, on_answer: Callable | None) -> None:
        """Post ``call``: the server registers it half a round trip later and the client has
        the answer after a whole one (``on_answer``; None when the answer starts nothing, as
        for the last post of the last stage: then no event is queued for it)."""
        info = s.infos[call.name]
        info.rtt = self.network.rtt()
        info.sent = self.env.now
        self.log.opens(info)
        self.env.timeout(info.rtt / 2).callbacks.append(lambda _e: self._registered(s, call))
        if on_answer is not None:
            self.env.timeout(info.rtt).callbacks.append(lambda _e: on_answer(s))

    # ---- server side: the session DAG ------------------------------------------------------
    def _early(self, s: ParrotSession, name: str) -> bool:
        """Whether ``name`` is dispatched once its producers are dispatched (pipelined)."""
        return self.cfg.readiness == "dispatched" and s.pipelined[name]

    def _registered(self, s: ParrotSession, call: Call) -> None:
        s.posted.add(call.name)
        pending = s.undispatched if self._early(s, call.name) else s.missing
        if pending[call.name] == 0:
            self.submit(s.infos[call.name])

    def on_dispatch(self, info: CallInfo, seq: Sequence) -> None:
        """The manager placed a call on an engine (pipelined mode: dependents may follow)."""
        if self.cfg.readiness != "dispatched":
            return
        s = self.sessions[info.app_id]
        s.seqs[info.call] = seq
        seq.waiting_inputs = s.missing[info.call]
        for dep in s.dependents.get(info.call, ()):
            s.undispatched[dep.name] -= 1
            if s.undispatched[dep.name] == 0 and dep.name in s.posted \
                    and self._early(s, dep.name):
                self.submit(s.infos[dep.name])

    def on_done(self, info: CallInfo, seq: Sequence) -> None:
        """The engine finished a call: its dependents may become ready, outputs complete."""
        info.returned = self.env.now
        s = self.sessions[info.app_id]
        for dep in s.dependents.get(info.call, ()):
            s.missing[dep.name] -= 1
            if self._early(s, dep.name):
                waiting = s.seqs.get(dep.name)
                if waiting is not None:
                    waiting.waiting_inputs -= 1
                    if waiting.waiting_inputs == 0 and self.notify_engine is not None:
                        self.notify_engine(waiting.engine_id)
            elif s.missing[dep.name] == 0 and dep.name in s.posted:
                self.submit(s.infos[dep.name])
        s.outputs_left.discard(s.calls[info.call].output)
        if not s.outputs_left and s.end < 0 and not s.failed:
            s.end = self.env.now
            self.on_app_done(s)
        self._closes(s, info)

    def on_failed(self, info: CallInfo) -> None:
        """The service rejected the call: its app fails now (it is done, without an end time),
        unless it already ended or failed; its dependents never become ready."""
        s = self.sessions[info.app_id]
        if not s.failed and s.end < 0:
            s.failed = True
            self.on_app_done(s)
        self._closes(s, info)

    def _closes(self, s: ParrotSession, info: CallInfo) -> None:
        """``info`` ended: close its row; once every call of the app has ended, nothing can
        reach the session any more, so it is dropped (memory follows the apps in flight). A
        failed app whose dependents were never submitted keeps its session."""
        self.log.closes(info)
        s.closed += 1
        if s.closed == len(s.calls):
            del self.sessions[info.app_id]

    def _annotate(self, s: ParrotSession) -> None:
        app = s.app
        dag = self.shapes.analysis(app, s.deps)
        depths, objectives, groups = dag.depths, dag.objectives, dag.task_groups(app.app_id)
        for call in app.calls:
            uid = self.next_uid()
            prompt = prompt_tokens(app, call, s.lengths)
            keys, lens, constant = prefix_hashes(app, call, s.lengths)
            shared = constant if self.cfg.cache_prefix else None
            breaks = (constant[1],) if self.cfg.prefix_fill_job and constant else ()
            s.infos[call.name] = CallInfo(
                uid, app.app_id, s.seq, call.name, prompt, call.output_tokens, app_kind=app.kind,
                max_requests=call.hints.max_requests_per_engine, prefix_keys=keys,
                prefix_lens=lens, shared_prefix=shared[0] if shared else None,
                shared_tokens=shared[1] if shared else 0, objective=objectives.get(call.name),
                task_group=groups.get(call.name), depth=depths[call.name], fill_breaks=breaks)

