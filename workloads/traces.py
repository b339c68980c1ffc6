"""Loaders for public request traces: per request, prompt and output tokens, maybe a time.

Formats (columns are found by header name, so extra columns are fine):

* ``azure``: Azure LLM inference trace 2023 (Splitwise): ``TIMESTAMP`` (``2023-11-16
  18:15:46.6805900``), ``ContextTokens``, ``GeneratedTokens``.
* ``vidur``: Vidur / Sarathi / Etalon length CSVs: ``num_prefill_tokens``,
  ``num_decode_tokens``, optional ``arrived_at`` (s). ``prompt_tokens`` / ``output_tokens`` are
  accepted as aliases (the project's ShareGPT first-turn table uses them).
* ``sharegpt_json``: ShareGPT conversations, a JSON array or JSON lines of records with a
  ``conversations`` list of turns (``{"from": ..., "value": text}``). As vLLM's benchmark does,
  turn 0 is the prompt, turn 1 the output, records with fewer than two turns are skipped. No
  tokenizer is used: a turn with an integer ``tokens`` field uses it, otherwise its length is
  estimated as ceil(characters / ``chars_per_token``) with 4 characters per token (a rough
  English average; LLaMA counts differ by tens of percent on code or non-English text).
* ``burstgpt``: BurstGPT CSV: ``Timestamp`` (s), ``Model``, ``Request tokens``, ``Response
  tokens`` (plus ``Total tokens``, ``Log Type``, maybe ``Session ID``, ``Elapsed time``). Rows
  with 0 response tokens are failures and are skipped, as are rows with 0 request tokens;
  ``models`` keeps only the listed models (e.g. ``["GPT-4"]`` as vLLM's loader does).

A bad row raises :class:`TraceError` with the message ``PATH:LINE: column: problem`` (lines
count from 1, the CSV header being line 1). Times are returned as read (seconds, Azure
timestamps converted to seconds since the epoch in UTC); callers make them relative.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

TraceFormat = Literal["azure", "vidur", "sharegpt_json", "burstgpt"]
_AZURE_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d(?:\.\d*)?)\s*$")


class TraceError(ValueError):
    """A trace file that cannot be read; the message is ``PATH:LINE: column: problem``."""


@dataclass(frozen=True, slots=True)
class TraceRequest:
    """One request of a trace: tokens in and out, arrival (s) if the trace has one."""

    line: int
    prompt_tokens: int
    output_tokens: int
    time: float | None = None


@dataclass(frozen=True, slots=True)
class Trace:
    """Requests read from ``path`` in file order, and how many rows were skipped."""

    path: str
    requests: tuple[TraceRequest, ...]
    skipped: int = 0


def _fail(path: str | Path, line: int, column: str, problem: str) -> TraceError:
    return TraceError(f"{path}:{line}: {column}: {problem}")


def _tokens(path: str | Path, line: int, column: str, text: str, minimum: int = 1) -> int:
    try:
        value = float(text)
    except ValueError:
        raise _fail(path, line, column, f"not a number: {text!r}") from None
    if not math.isfinite(value) or value != int(value):
        raise _fail(path, line, column, f"not a whole number of tokens: {text!r}")
    if value < minimum:
        raise _fail(path, line, column, f"must be at least {minimum}, got {text!r}")
    return int(value)


def _seconds(path: str | Path, line: int, column: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise _fail(path, line, column, f"not a time in seconds: {text!r}") from None
    if not math.isfinite(value):
        raise _fail(path, line, column, f"not a finite time: {text!r}")
    return value


def _azure_time(path: str | Path, line: int, column: str, text: str) -> float:
    m = _AZURE_TIME.match(text.strip())
    if m is None:
        raise _fail(path, line, column, f"not a timestamp like 2023-11-16 18:15:46.68: {text!r}")
    y, mo, d, h, mi = (int(g) for g in m.groups()[:5])
    try:
        base = datetime(y, mo, d, h, mi, tzinfo=timezone.utc).timestamp()
    except ValueError as exc:
        raise _fail(path, line, column, f"bad timestamp {text!r} ({exc})") from None
    return base + float(m.group(6))


def _csv_rows(path: str | Path, required: list[list[str]],
              optional: tuple[str, ...] = ()) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield (line, row) with keys = the first present alias of each required column."""
    try:
        f = open(path, newline="", encoding="utf-8")
    except OSError as exc:
        raise TraceError(f"{path}: cannot open: {exc.strerror}") from None
    with f:
        reader = csv.reader(f)
        header = [h.strip() for h in next(reader, [])]
        index: dict[str, int] = {}
        for aliases in required:
            found = next((a for a in aliases if a in header), None)
            if found is None:
                raise _fail(path, 1, aliases[0], f"missing column (header: {', '.join(header)})")
            index[aliases[0]] = header.index(found)
        for name in optional:
            if name in header:
                index[name] = header.index(name)
        for row in reader:
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != len(header):
                raise _fail(path, reader.line_num, "row",
                            f"{len(row)} fields, the header has {len(header)}")
            yield reader.line_num, {k: row[i].strip() for k, i in index.items()}


def load_azure(path: str | Path, limit: int | None = None) -> Trace:
    """Azure LLM inference trace: TIMESTAMP, ContextTokens, GeneratedTokens."""
    out = []
    for line, r in _csv_rows(path, [["TIMESTAMP"], ["ContextTokens"], ["GeneratedTokens"]]):
        if limit is not None and len(out) >= limit:
            break
        out.append(TraceRequest(line, _tokens(path, line, "ContextTokens", r["ContextTokens"]),
                                _tokens(path, line, "GeneratedTokens", r["GeneratedTokens"]),
                                _azure_time(path, line, "TIMESTAMP", r["TIMESTAMP"])))
    return Trace(str(path), tuple(out))


def load_vidur(path: str | Path, limit: int | None = None) -> Trace:
    """Vidur-style lengths: num_prefill_tokens, num_decode_tokens, optional arrived_at (s)."""
    out = []
    cols = [["num_prefill_tokens", "prompt_tokens"], ["num_decode_tokens", "output_tokens"]]
    for line, r in _csv_rows(path, cols, ("arrived_at",)):
        if limit is not None and len(out) >= limit:
            break
        t = _seconds(path, line, "arrived_at", r["arrived_at"]) if "arrived_at" in r else None
        out.append(TraceRequest(
            line, _tokens(path, line, "num_prefill_tokens", r["num_prefill_tokens"]),
            _tokens(path, line, "num_decode_tokens", r["num_decode_tokens"]), t))
    return Trace(str(path), tuple(out))


def load_burstgpt(path: str | Path, limit: int | None = None,
                  models: list[str] | None = None) -> Trace:
    """BurstGPT: Timestamp, Model, Request tokens, Response tokens; failures skipped."""
    out, skipped = [], 0
    cols = [["Timestamp"], ["Model"], ["Request tokens"], ["Response tokens"]]
    for line, r in _csv_rows(path, cols):
        if limit is not None and len(out) >= limit:
            break
        t = _seconds(path, line, "Timestamp", r["Timestamp"])
        prompt = _tokens(path, line, "Request tokens", r["Request tokens"], minimum=0)
        output = _tokens(path, line, "Response tokens", r["Response tokens"], minimum=0)
        if output == 0 or prompt == 0 or (models is not None and r["Model"] not in models):
            skipped += 1
            continue
        out.append(TraceRequest(line, prompt, output, t))
    return Trace(str(path), tuple(out), skipped)


def _json_records(path: str | Path) -> Iterator[tuple[int, object]]:
    """Yield (line of the record's start, record) from a JSON array or a JSON-lines file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise TraceError(f"{path}: cannot open: {exc.strerror}") from None
    decoder = json.JSONDecoder()

    def decode(at: int) -> tuple[object, int]:
        try:
            return decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            raise _fail(path, exc.lineno, "json", exc.msg) from None

    pos = len(text) - len(text.lstrip())
    if text.startswith("[", pos):
        pos += 1
        while True:
            while pos < len(text) and (text[pos].isspace() or text[pos] == ","):
                pos += 1
            if pos >= len(text):
                raise _fail(path, text.count("\n") + 1, "json", "array is not closed")
            if text[pos] == "]":
                return
            line = text.count("\n", 0, pos) + 1
            record, pos = decode(pos)
            yield line, record
    for line, raw in enumerate(text.splitlines(), start=1):
        if raw.strip():
            try:
                yield line, json.loads(raw)
            except json.JSONDecodeError as exc:
                raise _fail(path, line, "json", exc.msg) from None


def _turn_tokens(path: str | Path, line: int, conv: list, i: int, chars_per_token: float) -> int:
    where = f"conversations[{i}]"
    turn = conv[i]
    if not isinstance(turn, dict):
        raise _fail(path, line, where, "not an object")
    if "tokens" in turn:
        n = turn["tokens"]
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise _fail(path, line, f"{where}.tokens", f"must be a positive integer, got {n!r}")
        return n
    value = turn.get("value")
    if not isinstance(value, str):
        raise _fail(path, line, f"{where}.value", "missing or not a string")
    return max(1, math.ceil(len(value) / chars_per_token))


def load_sharegpt_json(path: str | Path, limit: int | None = None,
                       chars_per_token: float = 4.0) -> Trace:
    """ShareGPT conversations: first turn = prompt, second = output (lengths estimated)."""
    out, skipped = [], 0
    for line, record in _json_records(path):
        if limit is not None and len(out) >= limit:
            break
        if not isinstance(record, dict):
            raise _fail(path, line, "record", "not an object")
        conv = record.get("conversations")
        if not isinstance(conv, list):
            raise _fail(path, line, "conversations", "missing or not a list")
        if len(conv) < 2:
            skipped += 1
            continue
        out.append(TraceRequest(line, _turn_tokens(path, line, conv, 0, chars_per_token),
                                _turn_tokens(path, line, conv, 1, chars_per_token)))
    return Trace(str(path), tuple(out), skipped)


def load_trace(path: str | Path, fmt: TraceFormat, limit: int | None = None,
               models: list[str] | None = None, chars_per_token: float = 4.0) -> Trace:
    """Read ``path`` in format ``fmt`` (see the module docstring)."""
    if fmt == "azure":
        return load_azure(path, limit)
    if fmt == "vidur":
        return load_vidur(path, limit)
    if fmt == "burstgpt":
        return load_burstgpt(path, limit, models)
    if fmt == "sharegpt_json":
        return load_sharegpt_json(path, limit, chars_per_token)
    raise ValueError(f"unknown trace format {fmt!r}")
