"""PrefixHash: hashes of a call's prompt prefix at every semantic-variable boundary.

Paper section 5.3 / experiments.md 3.1: the manager hashes the prompt prefix at each
semantic-variable boundary and keeps a map hash -> requests/contexts, so sharing is found in O(1)
per boundary instead of token-by-token matching. Here a prompt is a sequence of pieces
(:class:`~parrotsim.workloads.app.Text` constant text, :class:`~parrotsim.workloads.app.Ref` a variable); there is a
boundary after every piece. Keys are cumulative (key i hashes key i-1 and piece i), so equal keys
mean equal prefixes. Constant text is identified by its ``content_id`` (and length), so equal
text in different apps gives equal keys (cross-app sharing, e.g. a GPT's system prompt); a
``Ref`` is identified by ``(app_id, var)``, so variables of different apps never collide (as
HEAD's semantic-variable ids, experiments.md 3.3).

:func:`shared_prefix` is the part Parrot's ``cache_prefix`` fills once per engine and forks: the
leading run of constant text. When the whole prompt is constant text its last piece is the
request's own part (the artifact bound it as an input: a GPT query, a Bing user context, a
MetaGPT branch suffix), so it is left out; a one-piece prompt has no shared prefix.
"""

from __future__ import annotations

from collections.abc import Hashable
from hashlib import blake2b

from parrotsim.workloads.app import App, Call, Ref, Text, var_lengths


def _step(key: str, piece: str) -> str:
    return blake2b(f"{key}|{piece}".encode(), digest_size=12).hexdigest()


def _piece_id(app: App, piece: Text | Ref) -> str:
    if isinstance(piece, Text):
        return f"T:{piece.content_id}:{piece.tokens}"
    return f"R:{app.app_id}:{piece.var}"


def prefix_keys(app: App, call: Call,
                lengths: dict[str, int] | None = None) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """(keys, lens): ``keys[i]`` hashes the prompt up to the end of piece ``i`` and ``lens[i]``
    is that prefix's length in tokens. ``lengths`` maps variables to tokens (default: computed
    from the app)."""
    lengths = lengths if lengths is not None else var_lengths(app)
    keys: list[str] = []
    lens: list[int] = []
    key, n = "", 0
    for piece in call.prompt:
        key = _step(key, _piece_id(app, piece))
        n += piece.tokens if isinstance(piece, Text) else lengths[piece.var]
        keys.append(key)
        lens.append(n)
    return tuple(keys), tuple(lens)


def shared_prefix(app: App, call: Call) -> tuple[str, int] | None:
    """(key, tokens) of the leading constant-text run that may be forked, or ``None``."""
    run = 0
    for piece in call.prompt:
        if not isinstance(piece, Text):
            break
        run += 1
    if run == len(call.prompt):
        run -= 1  # all text: the last piece is the request's own part
    if run <= 0:
        return None
    keys, lens = prefix_keys(app, Call(call.name, call.prompt[:run], call.output, 1), {})
    return keys[-1], lens[-1]


class PrefixIndex:
    """The manager's map prefix key -> engines holding its context / queued calls sharing it."""

    def __init__(self) -> None:
        self._engines: dict[str, set[int]] = {}
        self._queued: dict[str, set[Hashable]] = {}

    def add_engine(self, key: str, engine_id: int) -> None:
        """Engine ``engine_id`` now holds the context of prefix ``key``."""
        self._engines.setdefault(key, set()).add(engine_id)

    def remove_engine(self, key: str, engine_id: int) -> None:
        """The engine freed that context."""
        holders = self._engines.get(key)
        if holders is not None:
            holders.discard(engine_id)
            if not holders:
                del self._engines[key]

    def engines(self, key: str | None) -> set[int]:
        """Engines holding the context of ``key`` (a fresh set)."""
        return set(self._engines.get(key, ())) if key is not None else set()

    def deepest(self, keys: tuple[str, ...]) -> tuple[int, set[int]]:
        """(boundary index, engines) of the longest prefix among ``keys`` some engine holds;
        (-1, empty) if none. One lookup per boundary."""
        for i in range(len(keys) - 1, -1, -1):
            holders = self._engines.get(keys[i])
            if holders:
                return i, set(holders)
        return -1, set()

    def enqueue(self, key: str | None, call: Hashable) -> None:
        """A call sharing prefix ``key`` joined the queue."""
        if key is not None:
            self._queued.setdefault(key, set()).add(call)

    def dequeue(self, key: str | None, call: Hashable) -> None:
        """The call left the queue (dispatched)."""
        calls = self._queued.get(key) if key is not None else None
        if calls is not None:
            calls.discard(call)
            if not calls:
                del self._queued[key]

    def queued(self, key: str | None) -> set[Hashable]:
        """Queued calls sharing prefix ``key`` (a fresh set)."""
        return set(self._queued.get(key, ())) if key is not None else set()
