"""A call in flight between a client, the manager and an engine, with its timestamps."""

from __future__ import annotations


class CallRequest:
    """One LLM call as the service sees it (times in simulated seconds, -1 = not yet)."""

    __slots__ = (
        "uid", "app_id", "app_kind", "call", "prompt_len", "output_len", "rtt", "sent",
        "arrived", "dispatched", "engine", "seq", "returned", "context",
    )

    def __init__(self, uid: int, app_id: str, app_kind: str, call: str, prompt_len: int,
                 output_len: int, context: object = None) -> None:
        self.uid = uid
        self.app_id = app_id
        self.app_kind = app_kind
        self.call = call
        self.prompt_len = prompt_len
        self.output_len = output_len
        self.context = context
        self.rtt = 0.0
        self.sent = -1.0
        self.arrived = -1.0
        self.dispatched = -1.0
        self.engine = -1
        self.seq = None
        self.returned = -1.0
