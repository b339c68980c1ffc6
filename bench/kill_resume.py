"""kill -9 a sweep at random points, then re-run it: only the missing runs are simulated.

A sweep of 48 small runs is run once without interruption into ``ref/``, then into ``out/``
5 times, each killed with SIGKILL (the whole process group: the CLI and its pool workers) at
a random moment of the reference's duration; a last ``parrotsim run`` completes it. Checked and
printed: the runs stored after each kill, that the last run simulated exactly the runs still
missing, that every Parquet file under ``out/runs`` reads, that no staging folder is left, and
that ``out/summary.csv`` equals ``ref/summary.csv`` byte for byte. Exits 1 on a failed check.

    python bench/kill_resume.py [--seed 0] [--jobs 2] [--kills 5]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from parrotsim.sim.harness.store import read_record

SWEEP = """\
name: kill_resume
run:
  workload: {kind: sharegpt, num_requests: 3000, rate: 4.0}
sweep:
  cluster.engines: [1, 2, 4]
  workload.rate: [2.0, 4.0, 8.0, 16.0]
seeds: [0, 1, 2, 3]
"""
RUNS = 48


def start(folder: Path, out: str, jobs: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "parrotsim", "run", "exp.yaml", "--out", out,
                             "-j", str(jobs), "-q"], cwd=folder, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def stored(runs: Path) -> int:
    """Runs stored whole (their summary.json and checksummed files read back)."""
    if not runs.is_dir():
        return 0
    return sum(read_record(runs, p.name) is not None for p in runs.iterdir()
               if not p.name.startswith("."))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--kills", type=int, default=5)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    folder = Path(tempfile.mkdtemp(prefix="kill_resume-"))
    (folder / "exp.yaml").write_text(SWEEP)
    t0 = time.perf_counter()
    ref = start(folder, "ref", args.jobs)
    startup = None  # until the first run is stored
    while ref.poll() is None:
        if startup is None and stored(folder / "ref" / "runs"):
            startup = time.perf_counter() - t0
        time.sleep(0.02)
    out, err = ref.communicate()
    duration = time.perf_counter() - t0
    startup = duration if startup is None else startup
    print(f"uninterrupted sweep: {duration:.1f} s (first run stored at {startup:.1f} s); "
          f"{out.strip()}")
    ok = ref.returncode == 0
    for i in range(args.kills):
        proc = start(folder, "out", args.jobs)
        at = startup + rng.uniform(0.0, 0.15) * (duration - startup)
        time.sleep(at)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        print(f"kill {i + 1}: SIGKILL at {at:.1f} s (exit {proc.returncode}); "
              f"{stored(folder / 'out' / 'runs')} of {RUNS} runs stored")
    before = stored(folder / "out" / "runs")
    last = start(folder, "out", args.jobs)
    out, err = last.communicate()
    print(f"re-run: {out.strip()}")
    ran = re.search(r"\((\d+) ran, (\d+) cached\)", out)
    checks = {
        "re-run exit 0": last.returncode == 0,
        f"re-run simulated only the {RUNS - before} missing runs":
            ran is not None and int(ran.group(1)) == RUNS - before
            and int(ran.group(2)) == before,
    }
    parquet = sorted((folder / "out" / "runs").rglob("*.parquet"))
    unreadable = []
    for path in parquet:
        try:
            pq.read_table(path)
        except Exception as exc:  # any failure to read is what this check reports
            unreadable.append(f"{path}: {exc}")
    checks[f"all {len(parquet)} Parquet files under runs/ read"] = not unreadable
    leftovers = [p.name for p in (folder / "out" / "runs").iterdir() if p.name.startswith(".")]
    checks["no staging folder left"] = not leftovers
    checks["summary.csv equals the uninterrupted sweep's"] = (
        (folder / "out" / "summary.csv").read_bytes() == (folder / "ref" / "summary.csv").read_bytes())
    for name, passed in checks.items():
        print(f"{'ok  ' if passed else 'FAIL'} {name}")
    for line in unreadable[:5]:
        print("  ", line)
    ok = ok and all(checks.values())
    print(f"folder: {folder}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
