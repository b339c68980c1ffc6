"""Per-engine cache of shared prefix contexts (Parrot's ``cache_prefix``, vLLM-style sharing).

The first call dispatched to an engine with a shared prefix (say a GPTs app's system prompt)
makes the cache create an empty parent context and submit a *prefix fill*: a helper sequence
that fills the prefix tokens and generates nothing. When it completes its tokens move into the
parent, which becomes ``ready``; every call with that prefix forks the parent, skips filling
those tokens and shares their KV blocks. The cache holds one reference on each parent and drops
it, with ``lifetime="users"``, when the last call using the prefix finished and ``ttl_s``
seconds passed without reuse (``ttl_s = 0``: at once); with ``lifetime="app"``, when every app
whose calls used it has ended and no call uses it (the Parrot artifact kept a prefix context in
the memory space of the process, the app, that created or forked it until the process ended).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Literal

from parrotsim.sim.model.kv_cache import Context, KVCache
from parrotsim.sim.model.sequence import Sequence

_fill_uids = itertools.count(-1, -1)


@dataclass(slots=True)
class PrefixEntry:
    """One cached prefix: its parent context, length and current users."""

    key: str
    tokens: int
    ctx: Context
    users: int = 0
    idle_since: float = 0.0
    apps: set[str] = field(default_factory=set)  # apps that used it (lifetime "app")


class PrefixCache:
    """Shared prefix contexts of one engine; ``held`` mirrors the keys for the scheduler."""

    def __init__(self, kv: KVCache, held: set[str], ttl_s: float = 0.0,
                 lifetime: Literal["users", "app"] = "users") -> None:
        self.kv = kv
        self.held = held
        self.ttl_s = ttl_s
        self.lifetime = lifetime
        self.entries: dict[str, PrefixEntry] = {}

    def acquire(self, key: str, tokens: int, now: float,
                app_id: str = "") -> tuple[Context, Sequence | None]:
        """The parent context for ``key`` (one more user, a call of app ``app_id``), and a fill
        sequence to submit first when the prefix is new on this engine."""
        self.evict(now)
        entry = self.entries.get(key)
        fill = None
        if entry is None:
            ctx = self.kv.create(key=key)
            ctx.ready = False
            entry = PrefixEntry(key, tokens, ctx)
            self.entries[key] = entry
            self.held.add(key)
            fill = Sequence(next(_fill_uids), "prefix", key, tokens, 0, fill_of=entry)
        entry.users += 1
        if self.lifetime == "app":
            entry.apps.add(app_id)
        return entry.ctx, fill

    def filled(self, fill: Sequence) -> None:
        """The fill sequence completed: its KV becomes the ready parent context."""
        entry = fill.fill_of
        self.kv.adopt(entry.ctx, fill.ctx)
        fill.ctx = None
        entry.ctx.ready = True

    def release(self, key: str, now: float) -> None:
        """A call using ``key`` finished."""
        entry = self.entries[key]
        entry.users -= 1
        if entry.users == 0:
            entry.idle_since = now
            if self.lifetime == "app" and not entry.apps or \
                    self.lifetime == "users" and self.ttl_s <= 0:
                self._drop(entry)

    def app_ended(self, app_id: str) -> None:
        """App ``app_id`` ended (lifetime ``app``): prefixes no other live app used and no call
        uses are dropped."""
        for entry in [e for e in self.entries.values() if app_id in e.apps]:
            entry.apps.discard(app_id)
            if not entry.apps and entry.users == 0:
                self._drop(entry)

    def evict(self, now: float) -> None:
        """Drop prefixes unused for longer than the time-to-live (lifetime ``users``)."""
        if self.ttl_s <= 0 or self.lifetime == "app":
            return
        for entry in [e for e in self.entries.values()
                      if e.users == 0 and now - e.idle_since >= self.ttl_s]:
            self._drop(entry)

    def _drop(self, entry: PrefixEntry) -> None:
        del self.entries[entry.key]
        self.held.discard(entry.key)
        self.kv.release(entry.ctx)
