"""The paper's headline claims (:mod:`parrotsim.reports.claim_list`) next to the simulated
values. A simulated value within 15 % of the paper's counts as reproduced. Columns of the table:

* ``simulated``: the ratio; ``rerun``: the same ratio in the artifact's own printed re-run
  (:mod:`parrotsim.reports.rerun_claims`; empty where it did not run both systems); ``bound``:
  ``lower``/``upper`` when it is only a bound (a Fig 17
  series that never crossed the latency threshold, or ran out of KV blocks first), else empty;
  a bound never counts as within 15 %. Two lower bounds give a ratio only when the faster
  series ran out of KV blocks: its rate is then below the rate where it did.
* ``direction_ok``: the simulated ratio points the paper's way (both above 1 or both below 1; a
  paper value of 1.0, "on par", needs the simulated one within 15 % of 1). A bound settles the
  direction only when it is on the right side of 1.
* ``note``: computed facts: where the simulated Parrot engine ran short of KV blocks (which the
  paper's engine did not survive: the ratio is still computed), Fig 17's crossing rates, how many
  seeds a value averages and the spread of the per-seed ratios (Figs 12a, 17, 19), which way an
  off "on par" claim leans.
* ``why``: for a claim outside 15 % or pointing the wrong way, what the simulator measured that
  explains it, in a line: computed causes (a bound; every run of a compared point out of KV
  blocks), then the one-line entry of ``parrotsim.reports.claim_notes.NOTES``, else "not yet
  explained"; ``why_detail``: that entry's measurements in full (empty without an entry).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from parrotsim.reports.claim_list import CLAIMS, Claim
from parrotsim.reports.claim_notes import NOT_EXPLAINED, NOTES
from parrotsim.reports.derive import (
    RATE_CROSSING,
    RATE_LOWER_BOUND,
    RATE_UPPER_BOUND,
    SUSTAINABLE_PANEL,
    crossing_rate,
)
from parrotsim.reports.spec import FIG17_THRESHOLD_MS, SERIES_LABELS, SPREAD_QUANTILES

TOLERANCE = 0.15
CLAIM_COLUMNS = ["id", "figure", "claim", "paper", "simulated", "rerun", "bound",
                 "within_15pct", "direction_ok", "note", "why", "why_detail"]


def _label(series: str) -> str:
    return SERIES_LABELS.get(series, series)


def _rows(tidy: pd.DataFrame, claim: Claim, series: str, panel: str | None = None):
    panel = claim.panel if panel is None else panel
    rows = tidy[(tidy["figure"] == claim.figure) & (tidy["panel"].fillna("") == panel)
                & (tidy["series"] == series)]
    return rows.set_index(rows["x"].astype(str))


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def _rate_story(tidy: pd.DataFrame, claim: Claim, series: str, row: pd.Series) -> str:
    """Fig 17: how ``series``' sustainable-rate row came about, from its latency-vs-rate rows."""
    curve = _rows(tidy, claim, series, panel="").copy()
    curve["rate"] = curve["x"].astype(float)
    curve = curve.sort_values("rate")
    label, thr = _label(series), f"{FIG17_THRESHOLD_MS:g} ms/token"
    if row["metric"] == RATE_LOWER_BOUND and bool(row["oom"]):
        first = curve[curve["oom"].astype(bool)]["rate"].min()
        under = curve[curve["rate"] < first]
        last = (f" ({_fmt(under['value'].iloc[-1])} ms/token at "
                f"{_fmt(under['rate'].iloc[-1])} req/s)" if len(under) else "")
        return (f"{label} >= {_fmt(row['value'])} req/s: out of KV blocks at {_fmt(first)} req/s "
                f"before crossing {thr}{last}")
    if row["metric"] == RATE_LOWER_BOUND:
        return (f"{label} >= {_fmt(row['value'])} req/s: never crossed {thr} "
                f"(at most {_fmt(curve['value'].max())} ms/token)")
    if row["metric"] == RATE_UPPER_BOUND:
        return f"{label} <= {_fmt(row['value'])} req/s: over {thr} at the lowest rate"
    return f"{label} crosses {thr} at {_fmt(row['value'])} req/s"


def _oom_ratio_bound(tidy: pd.DataFrame, claim: Claim, num: pd.Series, den: pd.Series
                     ) -> float:
    """Fig 17, both rates lower bounds: ``num``'s bound over the rate where ``den``'s series
    first ran out of KV blocks (its sustainable rate lies below it), a lower bound of the
    ratio; NaN unless ``den`` is a lower bound because it ran out of KV blocks."""
    if not (num["metric"] == RATE_LOWER_BOUND and den["metric"] == RATE_LOWER_BOUND
            and bool(den["oom"])):
        return np.nan
    curve = _rows(tidy, claim, claim.faster, panel="")
    rates = curve[curve["oom"].astype(bool)]["x"].astype(float)
    return float(num["value"]) / float(rates.min()) if len(rates) else np.nan


def _bound(num: str, den: str) -> tuple[str, bool]:
    """The ratio's bound from its numerator's and denominator's: (``lower``/``upper``/"",
    known); a ratio of two lower (or two upper) bounds is unknown."""
    kind = {RATE_LOWER_BOUND: 1, RATE_UPPER_BOUND: -1}
    k = kind.get(num, 0) - kind.get(den, 0)
    if kind.get(num, 0) and kind.get(den, 0) and k == 0:
        return "", False
    return {1: "lower", -1: "upper", 0: ""}.get(int(np.sign(k)), ""), True


def direction(paper: float, sim: float, bound: str = "") -> tuple[bool, str]:
    """Whether ``sim`` points the paper's way, and a note when it does not (or cannot tell)."""
    if not np.isfinite(sim):
        return False, "no simulated value"
    if paper == 1.0:  # "on par": within the tolerance of 1
        if bound == "" and abs(sim - 1) <= TOLERANCE:
            return True, ""
        if bound:
            return False, "paper: on par; a bound cannot show on par"
        return False, f"paper: on par; simulated leans {'to' if sim > 1 else 'against'} Parrot"
    if (bound == "lower" and sim <= 1) or (bound == "upper" and sim >= 1):
        return False, "direction undetermined: the bound does not settle the side of 1"
    ok = sim > 1 if paper > 1 else sim < 1
    return ok, "" if ok else "simulated ratio points the other way from the paper's"


def _seed_ratios(per_run: pd.DataFrame | None, claim: Claim) -> tuple[pd.Series, int]:
    """``slower / faster`` per seed (the seed draws the workload, the same for both series),
    and the number of seeds drawn. A Fig 17 rate claim compares each seed's crossing rates
    (``derive.crossing_rate`` on that seed's curve); a seed where either is only a bound gives
    no ratio."""
    if per_run is None or per_run.empty:
        return pd.Series(dtype=float), 0
    rows = per_run[per_run["figure"] == claim.figure]
    if claim.panel != SUSTAINABLE_PANEL:
        rows = rows[rows["panel"] == claim.panel]
        if claim.x is not None and claim.figure != "fig19":
            rows = rows[rows["x"].astype(str) == str(claim.x)]
    draws = rows["seed"].nunique()
    by = {}
    for series in (claim.slower, claim.faster):
        mine = rows[rows["series"] == series]
        if claim.panel == SUSTAINABLE_PANEL:
            by[series] = pd.Series({
                seed: rate for seed, g in mine.groupby("seed")
                for rate, metric, _ in [crossing_rate(list(zip(
                    g["x"].astype(float), g["value"], g["oom"].astype(bool), strict=True)))]
                if metric == RATE_CROSSING}, dtype=float)
        else:
            by[series] = mine.set_index("seed")["value"]
    return (by[claim.slower] / by[claim.faster]).dropna(), draws


_PLACEHOLDER = re.compile(r"\{([a-z_]+)@([^/{}]+)(?:/([a-z_]+)@([^/{}]+))?\}")


def fill(text: str, tidy: pd.DataFrame, claim: Claim) -> str:
    """A note with its placeholders filled from the claim's panel: ``{series@x}`` is that
    value with its unit, ``{a@x/b@y}`` the ratio of two values; n/a where one is missing."""
    def value(series: str, x: str) -> tuple[float, str]:
        rows = _rows(tidy, claim, series)
        return ((float(rows.loc[x, "value"]), str(rows.loc[x, "unit"])) if x in rows.index
                else (np.nan, ""))

    def one(m: re.Match) -> str:
        v, unit = value(m[1], m[2])
        if m[3]:
            w, _ = value(m[3], m[4])
            return f"{v / w:.2f}x" if np.isfinite(v / w) else "n/a"
        return f"{_fmt(v)} {unit}" if np.isfinite(v) else "n/a"

    return _PLACEHOLDER.sub(one, text)


def evaluate(tidy: pd.DataFrame, per_run: pd.DataFrame | None = None,
             rerun: dict[str, float] | None = None) -> pd.DataFrame:
    """One row per claim (``CLAIM_COLUMNS``): paper and simulated ratio, bound, within 15 %,
    direction, computed notes and the why of a miss. ``per_run``: the per-seed values of the
    ``spread`` panels (``derive.panel_runs``), for the spread of Fig 19's per-seed ratios;
    ``rerun``: claim id -> the ratio in the artifact's printed re-run, where it has one."""
    rerun = rerun or {}
    rows = []
    lo_q, hi_q = SPREAD_QUANTILES
    for c in CLAIMS:
        slow, fast = _rows(tidy, c, c.slower), _rows(tidy, c, c.faster)
        if c.figure == "fig19":  # one bar per system: compare the two systems' bars
            keys_slow, keys_fast = [c.slower], [c.faster]
        elif c.x is None:
            keys_slow = keys_fast = list(slow.index.intersection(fast.index))
        else:
            keys_slow = keys_fast = [str(c.x)]
        pairs = [(a, b) for a, b in zip(keys_slow, keys_fast, strict=True)
                 if a in slow.index and b in fast.index]
        sim = (float(np.mean([slow.loc[a, "value"] / fast.loc[b, "value"] for a, b in pairs]))
               if pairs else np.nan)
        notes, causes = [], []
        bound, known = "", True
        if c.panel == SUSTAINABLE_PANEL and pairs:
            a, b = pairs[0]
            bound, known = _bound(slow.loc[a, "metric"], fast.loc[b, "metric"])
            stories = [_rate_story(tidy, c, s, r.loc[k])
                       for s, r, k in ((c.slower, slow, a), (c.faster, fast, b))]
            notes += stories
            if bound or not known:
                causes.append(("lower bound" if bound == "lower" else "upper bound"
                               if bound == "upper" else "no ratio (both are bounds)") + ": "
                              + "; ".join(st for st in stories if ">=" in st or "<=" in st))
            if not known:
                sim = _oom_ratio_bound(tidy, c, slow.loc[a], fast.loc[b])
                if np.isfinite(sim):
                    bound = "lower"
                    notes.append(f"{_label(c.faster)} sustains less than the rate where it ran "
                                 "out of KV blocks (which the paper's engine did not survive): "
                                 f"ratio >= {_fmt(sim)}")
        else:
            facts: dict[str, list[str]] = {}  # where -> series that ran short of KV blocks there
            every: dict[str, bool] = {}  # where -> every run of it did
            for series, table, keys in ((c.slower, slow, [a for a, _ in pairs]),
                                        (c.faster, fast, [b for _, b in pairs])):
                for k in keys:
                    r = table.loc[k]
                    if not bool(r["oom"]):
                        continue
                    runs, oom_runs = r.get("runs", np.nan), r.get("oom_runs", np.nan)
                    axis = re.sub(r" \(.*\)$", "", str(r["x_name"]))
                    where = "" if c.figure == "fig19" else f" at {axis} {k}"
                    if pd.notna(runs) and runs > 1 and pd.notna(oom_runs):
                        unit = "seeds" if c.figure == "fig19" else "runs"
                        where += f" in {int(oom_runs)} of {int(runs)} {unit}"
                    facts.setdefault(where, []).append(_label(series))
                    every[where] = every.get(where, True) and (
                        pd.isna(runs) or pd.isna(oom_runs) or oom_runs >= runs)
            for where, labels in facts.items():
                fact = (f"simulated {' and '.join(labels)} engine{'s' if len(labels) > 1 else ''}"
                        f" ran short of KV blocks{where}")
                notes.append(fact)
                if every[where]:
                    causes.append(fact + " (held work back where the real engine, which does "
                                  "not check, would fail)")
        ratios, draws = _seed_ratios(per_run, c)
        if draws > 1:
            notes.append(f"mean over {draws} seeds")
        if len(ratios) > 1:
            lo, hi = ratios.quantile([lo_q, hi_q])
            span = (f"per-seed ratio {round(100 * lo_q)}th-{round(100 * hi_q)}th "
                    f"percentile {lo:.2f}-{hi:.2f}")
            notes.append(span + ("" if len(ratios) == draws
                                 else f" ({len(ratios)} of {draws} seeds give a ratio)"))
            if lo <= c.paper <= hi:
                causes.append(f"the paper's {c.paper:g}x lies within the {span} "
                              f"({len(ratios)} draws; the paper measured one)")
        finite = bool(np.isfinite(sim))
        within = bool(finite and not bound and abs(sim / c.paper - 1) <= TOLERANCE)
        ok, lean = direction(c.paper, sim, bound)
        if lean:
            notes.append(lean)
        again = float(rerun.get(c.id, np.nan))
        if np.isfinite(again) and not direction(c.paper, again)[0]:
            notes.append(f"the artifact's own re-run gives {again:.2f}x: it too points the "
                         "other way from the paper")
        why = detail = ""
        if not within or not ok:
            entry = NOTES.get(c.id)
            parts = causes + ([fill(entry.line, tidy, c)] if entry else [])
            why = "; ".join(parts) if parts else NOT_EXPLAINED
            detail = fill(entry.detail, tidy, c) if entry else ""
        rows.append({"id": c.id, "figure": c.figure, "claim": c.text, "paper": c.paper,
                     "simulated": round(sim, 3) if finite else np.nan,
                     "rerun": round(again, 3) if np.isfinite(again) else np.nan, "bound": bound,
                     "within_15pct": within, "direction_ok": ok,
                     "note": "; ".join(dict.fromkeys(notes)), "why": why,
                     "why_detail": detail})
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)
