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

from functools import lru_cache
from hashlib import blake2b

from parrotsim.workloads.app import App, Call, Text, var_lengths

#: text steps remembered (a GPT's system prompt is hashed once, not once per request): a
#: bounded memo of a pure function, so the keys never depend on what it holds
TEXT_STEPS_KEPT = 1 << 14


def _step(key: str, piece: str) -> str:
    return blake2b(f"{key}|{piece}".encode(), digest_size=12).hexdigest()


@lru_cache(maxsize=TEXT_STEPS_KEPT)
def _text_step(key: str, text: Text) -> str:
    """The key after constant ``text`` following the prefix whose key is ``key``."""
    return _step(key, f"T:{text.content_id}:{text.tokens}")


def prefix_keys(app: App, call: Call,
                lengths: dict[str, int] | None = None) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """(keys, lens): ``keys[i]`` hashes the prompt up to the end of piece ``i`` and ``lens[i]``
    is that prefix's length in tokens. ``lengths`` maps variables to tokens (default: computed
    from the app)."""
    keys, lens, _ = prefix_hashes(app, call, lengths)
    return keys, lens


def _constant_run(call: Call) -> int:
    """Pieces of the leading constant-text run that may be forked (see :func:`shared_prefix`)."""
    run = 0
    for piece in call.prompt:
        if not isinstance(piece, Text):
            break
        run += 1
    if run == len(call.prompt):
        run -= 1  # all text: the last piece is the request's own part
    return run


def prefix_hashes(app: App, call: Call, lengths: dict[str, int] | None = None
                  ) -> tuple[tuple[str, ...], tuple[int, ...], tuple[str, int] | None]:
    """:func:`prefix_keys` and :func:`shared_prefix` in one pass: the shared prefix's key and
    length are those of the prompt up to the end of its constant run."""
    lengths = lengths if lengths is not None else var_lengths(app)
    keys: list[str] = []
    lens: list[int] = []
    key, n = "", 0
    for piece in call.prompt:
        if isinstance(piece, Text):
            key = _text_step(key, piece)
            n += piece.tokens
        else:
            key = _step(key, f"R:{app.app_id}:{piece.var}")
            n += lengths[piece.var]
        keys.append(key)
        lens.append(n)
    run = _constant_run(call)
    return tuple(keys), tuple(lens), ((keys[run - 1], lens[run - 1]) if run > 0 else None)


def shared_prefix(app: App, call: Call) -> tuple[str, int] | None:
    """(key, tokens) of the leading constant-text run that may be forked, or ``None``."""
    run = _constant_run(call)
    if run <= 0:
        return None
    keys, lens = prefix_keys(app, Call(call.name, call.prompt[:run], call.output, 1), {})
    return keys[-1], lens[-1]
