"""Benchmark: wall time of the cold paper report, for several checkouts back to back.

    python bench/report_time.py CHECKOUT [CHECKOUT ...] [--rounds 2] [--make]

Each round runs, for every checkout in turn (each with its own ``.venv``), ``parrotsim report
--out TMP --quiet`` into a fresh temporary folder (no results: every run is simulated), so old
and new code see a similar load on a shared machine. With ``--make`` each round instead makes
a fresh ``git clone`` of the checkout's HEAD, copies its ``.venv`` into the clone (then
reinstalls the package editable there, without dependencies, so that the clone's code is
the one imported) and times ``make report`` in it, as a user with a built venv sees it. Every
other round runs the checkouts in reverse order. Prints one line per run and the mean per
checkout.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from pathlib import Path


def report_once(checkout: Path) -> float:
    """Seconds of ``parrotsim report --out TMP --quiet`` with the checkout's venv."""
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        subprocess.run([str(checkout / ".venv/bin/parrotsim"), "report", "--out",
                        f"{tmp}/report", "--quiet"], check=True, stdout=subprocess.DEVNULL,
                       cwd=tmp)  # not this checkout: the fork server imports from the cwd
        return time.perf_counter() - start


def make_once(checkout: Path) -> float:
    """Seconds of ``make report`` in a fresh clone of the checkout with its venv copied in."""
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "-q", str(checkout), str(clone)], check=True)
        head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
        subprocess.run(["git", "-c", "advice.detachedHead=false", "-C", str(clone),
                        "checkout", "-q", head], check=True)
        shutil.copytree(checkout / ".venv", clone / ".venv", symlinks=True)
        subprocess.run([str(clone / ".venv/bin/python"), "-m", "pip", "install", "-q",
                        "--no-deps", "--no-build-isolation", "-e", str(clone)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        (clone / ".venv/.core").touch()  # the venv is built: make only runs the report
        start = time.perf_counter()
        subprocess.run(["make", "-C", str(clone), "report"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", type=Path, nargs="+")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--make", action="store_true", help="time make report in a clone")
    args = parser.parse_args()
    once = make_once if args.make else report_once
    times: dict[Path, list[float]] = {c: [] for c in args.checkouts}
    for r in range(args.rounds):  # every other round in reverse order: no checkout always first
        for checkout in args.checkouts[::-1] if r % 2 else args.checkouts:
            times[checkout].append(once(checkout.resolve()))
            print(f"round {r + 1}  {checkout}: {times[checkout][-1]:.1f} s", flush=True)
    for checkout, ts in times.items():
        print(f"{checkout}: mean {sum(ts) / len(ts):.1f} s over {len(ts)} "
              f"({', '.join(f'{t:.1f}' for t in ts)})")


if __name__ == "__main__":
    main()
