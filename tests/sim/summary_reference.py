"""The run summary as it was computed on pandas columns before it moved to numpy (commit
daab3e0 of sim/model/metrics.py), kept as the oracle of ``test_summary_oracle.py``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from parrotsim.sim.model.metrics import SUMMARY_INPUTS


def reference_summarize(calls: pd.DataFrame, apps: pd.DataFrame, engines: pd.DataFrame) -> dict[str, float]:
    """The run's headline metrics (see module docstring for units)."""
    every_fg = apps.loc[~apps["background"].astype(bool)]
    fg = every_fg.loc[every_fg["end"].notna()]
    done = calls.loc[calls["returned"].astype(float) >= 0, SUMMARY_INPUTS]  # no copy of the rest
    latency = done["returned"] - done["sent"]
    multi = done[done["output_len"] > 1]
    tpot = (multi["finished"] - multi["first_token"]) / (multi["output_len"] - 1)
    chat = multi[multi["app_kind"] == "chat"]
    chat_tpot = (chat["finished"] - chat["first_token"]) / (chat["output_len"] - 1)
    chat_all = done[done["app_kind"] == "chat"]
    makespan = float(apps["end"].max() - apps["arrival"].min()) if len(apps) else 0.0
    by_kind = {f"mean_jct_{kind}": _mean(group["latency"])
               for kind, group in every_fg.groupby("kind", sort=True)}
    return {
        "apps": float(len(every_fg)),
        "calls": float(len(done)),
        "mean_jct": _mean(fg["latency"]),
        "p50_jct": _q(fg["latency"], 0.5),
        "p90_jct": _q(fg["latency"], 0.9),
        "p99_jct": _q(fg["latency"], 0.99),
        "mean_request_latency": _mean(latency),
        "normalized_latency": _mean(latency / done["output_len"]) * 1e3,
        "latency_per_output_token": _mean(tpot) * 1e3,
        "chat_decode_time": _mean(chat_tpot) * 1e3,
        "chat_normalized_latency": _mean((chat_all["returned"] - chat_all["sent"])
                                         / chat_all["output_len"]) * 1e3,
        "mean_engine_latency": _mean(done["finished"] - done["engine_arrived"]),
        "mean_slot_latency": _mean(done["finished"] - done["admitted"]),
        "mean_ttft": _mean(done["first_token"] - done["engine_arrived"]),
        "throughput": float(done["output_len"].sum()) / makespan if makespan > 0 else 0.0,
        "makespan": makespan,
        "peak_kv_memory": float(engines["peak_kv_gb"].max()) if len(engines) else 0.0,
        "peak_kv_fraction": float((engines["peak_kv_blocks"] / engines["kv_blocks"]).max())
        if len(engines) else 0.0,
        "preemptions": float(done["preemptions"].sum()),
        "mean_batch": _mean(engines["mean_batch"]),
        "extrapolated": float(engines["extrapolated"].sum()),
        "memory_stalls": float(engines["memory_stalls"].sum()),
        **by_kind,
    }


def _mean(s: pd.Series) -> float:
    return float(s.mean()) if len(s) else float("nan")


def _q(s: pd.Series, q: float) -> float:
    return float(np.quantile(s.to_numpy(), q)) if len(s) else float("nan")


def _mean(s: pd.Series) -> float:
    return float(s.mean()) if len(s) else float("nan")


def _q(s: pd.Series, q: float) -> float:
    return float(np.quantile(s.to_numpy(), q)) if len(s) else float("nan")
