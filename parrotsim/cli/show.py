"""``parrotsim show DIR``: the summary of an experiment's results as a readable table.

Rows are grouped by the experiment's labels (variant, then each sweep axis, in file order);
seeds are averaged, with a ``runs`` column when there is more than one, and a ``failed`` column
when some run failed. ``--metrics a,b`` picks the metric columns (any column of summary.csv).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from parrotsim.core.errors import UsageError
from parrotsim.sim.harness.summary import META, SUMMARY_CSV, SUMMARY_PARQUET

DEFAULT_METRICS = ["mean_jct", "p90_jct", "normalized_latency", "mean_ttft", "throughput",
                   "peak_kv_memory"]
UNITS = ("units: *_jct, *_latency, mean_ttft, makespan in s; normalized_latency, "
         "latency_per_output_token, chat_decode_time in ms/token; throughput in tokens/s; "
         "peak_kv_memory in GB")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("show", help="print the summary of a results directory",
                              description=__doc__.splitlines()[0])
    p.add_argument("dir", metavar="DIR", help="results directory written by 'parrotsim run'")
    p.add_argument("--metrics", metavar="A,B", help="comma-separated metric columns "
                   f"(default: {','.join(DEFAULT_METRICS)})")
    p.set_defaults(main=main)


def main(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    frame, meta = read_results(root)
    labels = [c for c in meta.get("labels", ["variant", "seed"]) if c in frame.columns]
    metrics = _pick_metrics(args.metrics, frame, meta, UsageError)
    print(render(frame, labels, metrics, meta.get("name", root.name), str(root)))
    return 0


def read_results(root: Path) -> tuple[pd.DataFrame, dict]:
    """The summary table and metadata of a results folder; a missing, empty, truncated or
    corrupt folder is a :class:`UsageError` naming the file."""
    if (root / SUMMARY_PARQUET).is_file():
        path = root / SUMMARY_PARQUET
    elif (root / SUMMARY_CSV).is_file():
        path = root / SUMMARY_CSV
    else:
        raise UsageError(f"{root}: no {SUMMARY_CSV} here; run 'parrotsim run FILE --out "
                         f"{root}' first")
    try:
        frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except (OSError, ValueError) as exc:  # Arrow's and pandas' read errors are ValueErrors
        raise UsageError(f"{path}: not a readable results table "
                         f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
                         ) from None
    missing = [c for c in ("status", "variant") if c not in frame.columns]
    if missing or frame.empty:
        raise UsageError(f"{path}: not a summary written by 'parrotsim run' "
                         + (f"(no column {', '.join(missing)})" if missing else "(no runs)"))
    try:
        meta = json.loads((root / META).read_text()) if (root / META).is_file() else {}
    except (OSError, ValueError) as exc:
        raise UsageError(f"{root / META}: unreadable ({exc})") from None
    if not isinstance(meta, dict):
        raise UsageError(f"{root / META}: not an experiment description")
    return frame, meta


def _pick_metrics(arg: str | None, frame, meta: dict, error: type[Exception]) -> list[str]:
    if arg:
        wanted = [m.strip() for m in arg.split(",") if m.strip()]
        unknown = [m for m in wanted if m not in frame.columns]
        if unknown:
            known = meta.get("metrics") or list(frame.columns)
            raise error(f"--metrics: unknown column(s) {', '.join(unknown)}; "
                        f"metrics: {', '.join(known)}")
        return wanted
    return [m for m in DEFAULT_METRICS if m in frame.columns]


def render(frame, labels: list[str], metrics: list[str], name: str, where: str) -> str:
    """The text table: one row per label combination (seeds averaged)."""
    failed = int((frame["status"] != "ok").sum()) if "status" in frame else 0
    groups = [c for c in labels if c != "seed"]
    if len(groups) > 1 and set(frame["variant"]) == {"base"}:  # no variants: hide the column
        groups.remove("variant")
    ok = frame["status"] == "ok" if "status" in frame else frame.index == frame.index
    numeric = [m for m in metrics if frame[m].dtype.kind in "fiub"]
    table = frame.assign(_ok=ok, _failed=~ok)
    for m in numeric:
        table[m] = table[m].where(ok)
    agg = {m: ("mean" if m in numeric else "first") for m in metrics}
    agg.update(_ok="sum", _failed="sum")
    out = table.groupby(groups, sort=False, dropna=False).agg(agg).reset_index()
    out = out.rename(columns={"_ok": "runs", "_failed": "failed"})
    if out["runs"].max() + out["failed"].max() <= 1:
        out = out.drop(columns="runs")
    if not failed:
        out = out.drop(columns="failed")
    for i in range(len(groups) - 1, 0, -1):
        same = (out[groups[:i]] == out[groups[:i]].shift()).all(axis=1)
        out[groups[i - 1]] = out[groups[i - 1]].astype(object).where(~same, "")
    body = out.to_string(index=False, float_format=lambda v: f"{v:.4g}", na_rep="-")
    head = f"{name}: {len(frame)} runs, {failed} failed ({where})"
    return f"{head}\n{body}\n{UNITS}"
