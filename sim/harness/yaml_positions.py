"""Load YAML as plain Python data plus a map of where every key and value sits in the file,
and place validation errors in the file through that map.

Experiment files are read with ruamel.yaml's round-trip loader, which follows YAML 1.2: ``1e3``
is the float 1000.0, ``no``/``on`` are strings and ``012`` is the integer 12 (PyYAML, being YAML
1.1, gets all three differently). The loaded tree is converted to plain ``dict``/``list``/scalars
(so it hashes, pickles and validates like any other data) and the positions are kept apart in
a :class:`Positions` map keyed by the path of each node: a tuple of mapping keys and sequence
indices, e.g. ``("sweep", "workload.rate", 2)``. Lines and columns are 1-based.
"""

from __future__ import annotations

import datetime as dt
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parrotsim.core.text import locate

Path_ = tuple[str | int, ...]
Where = tuple[int, int]


class YamlError(Exception):
    """A file that cannot be read or parsed; ``line``/``col`` are 1-based (0 when unknown)."""

    def __init__(self, file: str, line: int, col: int, message: str) -> None:
        super().__init__(f"{file}:{line}:{col}: {message}")
        self.file, self.line, self.col, self.message = file, line, col, message


@dataclass
class Positions:
    """Where each node of a loaded YAML file starts: its key (for mapping entries) and value."""

    keys: dict[Path_, Where] = field(default_factory=dict)
    values: dict[Path_, Where] = field(default_factory=dict)

    def locate(self, path: Path_, at_key: bool = False) -> Where:
        """Position of ``path``, or of its deepest ancestor present in the file.

        ``at_key`` points at the entry's key rather than its value (used for unknown keys).
        Unknown path segments are skipped, not just trailing ones: pydantic inserts the tag of a
        tagged union (``workload.sharegpt.rate``), which is absent from the file.
        """
        known: Path_ = ()
        for seg in path:
            if known + (seg,) in self.values:
                known = known + (seg,)
        if at_key and known == tuple(path):
            while known and isinstance(known[-1], int):  # a sweep value: point at its axis
                known = known[:-1]
            if known in self.keys:
                return self.keys[known]
        return self.values.get(known, (1, 1))


def load_yaml(path: str | Path) -> tuple[Any, Positions]:
    """Read ``path`` and return ``(data, positions)``; raises :class:`YamlError` on failure."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise YamlError(name, 0, 0, "no such file") from None
    except OSError as exc:
        raise YamlError(name, 0, 0, f"cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = locate(raw, exc)
        raise YamlError(name, problem.line, problem.col, problem.message) from None
    try:
        tree = YAML(typ="rt").load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        message = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        raise YamlError(name, line, col, f"YAML syntax error: {message}") from None
    except YAMLError as exc:
        raise YamlError(name, 0, 0, f"YAML error: {exc}") from None
    positions = Positions()
    positions.values[()] = (1, 1)
    return _plain(tree, (), positions), positions


def _plain(node: Any, path: Path_, pos: Positions) -> Any:
    """Convert a ruamel round-trip node to plain Python, recording child positions."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            key = _plain_scalar(k)
            child = path + (key,)
            lc = getattr(node, "lc", None)
            if lc is not None:
                with suppress(KeyError, IndexError, TypeError):
                    kl, kc = lc.key(k)
                    pos.keys[child] = (kl + 1, kc + 1)
                with suppress(KeyError, IndexError, TypeError):
                    vl, vc = lc.value(k)
                    pos.values[child] = (vl + 1, vc + 1)
            out[key] = _plain(v, child, pos)
        return out
    if isinstance(node, list):
        out_list = []
        for i, v in enumerate(node):
            lc = getattr(node, "lc", None)
            if lc is not None:
                with suppress(KeyError, IndexError, TypeError):
                    il, ic = lc.item(i)
                    pos.values[path + (i,)] = (il + 1, ic + 1)
            out_list.append(_plain(v, path + (i,), pos))
        return out_list
    return _plain_scalar(node)


def _plain_scalar(v: Any) -> Any:
    """ruamel's scalar subclasses (ScalarFloat, ScalarInt, ...) as built-in types."""
    if v is None or type(v) in (bool, int, float, str):
        return v
    if isinstance(v, bool) or type(v).__name__ == "ScalarBoolean":
        return bool(v)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return float(v)
    if isinstance(v, str):
        return str(v)
    if isinstance(v, (dt.date, dt.datetime)):
        return v.isoformat()
    if isinstance(v, tuple):
        return tuple(_plain_scalar(x) for x in v)
    return v


@dataclass
class Issues:
    """Error messages collected while validating a file, placed through its positions.

    Identical messages (the same base field failing in every expanded run) are kept once;
    :meth:`lines` lists them in file order.
    """

    source: str
    positions: Positions
    found: dict[tuple[int, int, str], None] = field(default_factory=dict)

    def add(self, where: Path_, shown: str, message: str, at_key: bool = False) -> None:
        """Record ``message`` about the field shown as ``shown``, found at file path ``where``."""
        line, col = self.positions.locate(where, at_key)
        text = f"{self.source}:{line}:{col}: {shown or '<root>'}: {message}"
        self.found[(line, col, text)] = None

    def lines(self) -> list[str]:
        """The messages, ``FILE:LINE:COL: path: message`` each, sorted by position."""
        return [text for *_, text in sorted(self.found)]


def data_path(data: Any, loc: tuple) -> Path_:
    """A pydantic error location as a path into the data: tagged-union tags dropped, and
    type names after a scalar dropped; missing keys kept."""
    out: list[str | int] = []
    node, missing = data, object()
    for seg in loc:
        if node is missing:
            pass
        elif isinstance(node, dict) and seg in node:
            node = node[seg]
        elif isinstance(node, list) and isinstance(seg, int) and 0 <= seg < len(node):
            node = node[seg]
        elif isinstance(node, dict) and any(seg == v for v in node.values() if isinstance(v, str)):
            continue
        elif isinstance(node, (dict, list)):
            node = missing
        else:
            break
        out.append(seg)
    return tuple(out)


def get_path(data: Any, path: Path_) -> Any:
    """The node at ``path``, or None."""
    try:
        for seg in path:
            data = data[seg]
    except (KeyError, IndexError, TypeError):
        return None
    return data


def source_path(path: Path_, origins: dict[Path_, Path_]) -> Path_:
    """Where in the file the value at a run-config ``path`` came from: the deepest override
    (``origins``: run-config path -> file path) at or above it, else the base ``run``."""
    for n in range(len(path), 0, -1):
        if path[:n] in origins:
            return origins[path[:n]] + path[n:]
    for origin, where in origins.items():  # an override below ``path`` created it
        if path and origin[:len(path)] == path:
            return where
    return ("run", *path)


def dotted(loc: tuple) -> str:
    """A location as ``a.b.0.c``."""
    return ".".join(str(s) for s in loc)
