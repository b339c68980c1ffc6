"""Check that two result folders hold the same results, byte for byte, whatever their run keys.

Used before and after a change that must not change results (speed work, renames): run the
shipped experiments into two folders with the old and the new code, then

    python bench/same_results.py OLD_DIR NEW_DIR

Every ``summary.csv`` under OLD_DIR is compared with the one at the same relative path under
NEW_DIR, without the ``run_hash`` column (the key changes with the code version); each run's
``calls``, ``apps`` and ``engines`` tables are compared as Parquet-decoded frames (same columns,
dtypes and values, NaN equal to NaN), the runs matched by their row in the summary. Prints one
line per experiment and exits 1 on any difference. ``--new-column NAME`` (repeatable) allows a
summary column that only NEW_DIR has, as a new config field adds one, if it holds one value in
every run (the field's default): it is dropped before comparing. A column of a run's table
that only NEW_DIR has (a new counter) is dropped the same way, with ``--new-column
TABLE.NAME`` (``engines.ignored_calls``), if it holds one value in every row. ``--new-metric
NAME`` (repeatable) allows a summary column that only NEW_DIR has with any values, as a new
metric computed from the run's tables adds one: it is dropped before comparing, and the tables
it is computed from are compared as ever.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

TABLES = ("calls", "apps", "engines")


def compare_experiment(old: Path, new: Path, new_columns: tuple[str, ...] = (),
                       new_metrics: tuple[str, ...] = ()) -> list[str]:
    """Differences between two experiment folders (each holding summary.csv and runs/)."""
    a = pd.read_csv(old / "summary.csv", dtype=str, keep_default_na=False)
    b = pd.read_csv(new / "summary.csv", dtype=str, keep_default_na=False)
    b = b.drop(columns=[m for m in new_metrics if m in b.columns and m not in a.columns])
    problems = []
    for col in new_columns:
        if col in b.columns and col not in a.columns:
            if b[col].nunique() != 1:
                return [f"new column {col} holds {b[col].nunique()} values"]
            b = b.drop(columns=col)
    if list(a.columns) != list(b.columns):
        return [f"summary columns differ: {sorted(set(a.columns) ^ set(b.columns))}"]
    if not a.drop(columns="run_hash").equals(b.drop(columns="run_hash")):
        diff = (a.drop(columns="run_hash") != b.drop(columns="run_hash")).any()
        problems.append(f"summary differs in {list(diff[diff].index)}")
    for key_a, key_b in zip(a["run_hash"], b["run_hash"], strict=True):
        for table in TABLES:
            fa, fb = old / "runs" / key_a / f"{table}.parquet", new / "runs" / key_b / f"{table}.parquet"
            if not fa.exists() and not fb.exists():
                continue
            ta, tb = pd.read_parquet(fa), pd.read_parquet(fb)
            for col in new_columns:
                name = col.removeprefix(f"{table}.")
                if col.startswith(f"{table}.") and name in tb.columns and name not in ta.columns:
                    if tb[name].nunique() > 1:
                        problems.append(f"run {key_b}: new column {col} holds several values")
                    tb = tb.drop(columns=name)
            if not ta.equals(tb):
                problems.append(f"run {key_a}/{key_b}: {table} differs")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--new-column", action="append", default=[], metavar="NAME",
                        help="a summary column (or TABLE.NAME: a run table's column) only NEW "
                             "has, one value in every run")
    parser.add_argument("--new-metric", action="append", default=[], metavar="NAME",
                        help="a summary column only NEW has, any values (a new metric)")
    args = parser.parse_args(argv)
    summaries = sorted(p.parent.relative_to(args.old) for p in args.old.rglob("summary.csv"))
    if not summaries:
        print(f"{args.old}: no summary.csv found", file=sys.stderr)
        return 2
    bad = 0
    for rel in summaries:
        if not (args.new / rel / "summary.csv").exists():
            print(f"{rel}: missing under {args.new}")
            bad += 1
            continue
        problems = compare_experiment(args.old / rel, args.new / rel, tuple(args.new_column),
                                      tuple(args.new_metric))
        runs = len(pd.read_csv(args.old / rel / "summary.csv"))
        print(f"{rel}: {runs} runs, " + ("identical" if not problems else "; ".join(problems[:5])))
        bad += bool(problems)
    print(f"{len(summaries) - bad} of {len(summaries)} experiments identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
