"""Every class of bad input, driven through ``python -m parrotsim`` as a subprocess (issue 15).

Each case writes its own bad file(s) next to a copy of a good results folder (``out/``), runs
one command there and asserts: exit status 2, the offending file (or flag) named on stderr, no
``Traceback``, and a working folder, ``out/`` included, unchanged byte for byte. The commands
are started together (one per core) by a module fixture, as each spends most of its second
importing the package; the tests then check each case's outcome. The module is marked slow:
its 70-odd commands take about two minutes of CPU (the read-only and full ``--out`` cases are
in ``test_output_folder.py``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from parrotsim.cli import main

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
PROFILE = "h200_llama-7b"  # a measured profile shipped with its forward passes

GOOD = """\
name: tiny
run:
  workload: {kind: sharegpt, num_requests: 4, rate: 2.0}
"""
FWD_HEADER = "prefills,decodes,decode_ctx,prefix,kind,split,measured_s,p20_s,p80_s\n"
FWD_ROW = ",1,512,0,decode,heldout,0.0074,0.0074,0.0074\n"
AZURE_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
AZURE_ROW = "2023-11-16 18:15:46.68,100,10\n"


def experiment(run: str, extra: str = "") -> str:
    """An experiment file with the given ``run:`` body (YAML flow mapping lines)."""
    return f"name: bad\nrun:\n{run}\n{extra}"


def trace_exp(path: str, fmt: str = "azure") -> str:
    arrival = "" if fmt == "azure" else ", arrival: poisson, rate: 1.0"
    return experiment(f"  workload: {{kind: trace, path: {path}, format: {fmt}{arrival}}}")


def profile_exp(profile: str) -> str:
    return experiment("  workload: {kind: sharegpt, num_requests: 4, rate: 2.0}\n"
                      f"  cluster: {{profile: {profile}}}")


@dataclass
class Case:
    """One bad input: the files to write (text, or bytes as written), the command line
    (after ``parrotsim``) and the text stderr must name."""

    kind: str
    name: str
    argv: list[str]
    names: str
    files: dict[str, str | bytes] = field(default_factory=dict)


def _cases() -> list[Case]:
    c: list[Case] = []

    def add(kind: str, name: str, argv: list[str], names: str, **files: str | bytes) -> None:
        c.append(Case(kind, name, argv, names, files))

    run = ["run", "exp.yaml", "--out", "out", "-j", "1"]
    # experiment files
    add("experiment", "not_utf8", run, "exp.yaml:4:3", **{"exp.yaml": GOOD.encode() + b"# \xff\n"})
    add("experiment", "utf16", run, "exp.yaml:1:1", **{"exp.yaml": GOOD.encode("utf-16")})
    add("experiment", "yaml_syntax", run, "exp.yaml:", **{"exp.yaml": "name: [bad\nrun: {}\n"})
    add("experiment", "not_a_mapping", run, "exp.yaml:1", **{"exp.yaml": "- a\n- b\n"})
    add("experiment", "empty_file", run, "exp.yaml", **{"exp.yaml": ""})
    add("experiment", "unknown_top_key", run, "exp.yaml:2:1",
        **{"exp.yaml": "name: x\nbogus: 1\nrun: {workload: {kind: sharegpt}}\n"})
    add("experiment", "unknown_run_key", run, "exp.yaml:3",
        **{"exp.yaml": experiment("  workload: {kind: sharegpt, bogus: 1}")})
    add("experiment", "bad_value", run, "exp.yaml:3",
        **{"exp.yaml": experiment("  workload: {kind: sharegpt, rate: -1}")})
    add("experiment", "bad_type", run, "exp.yaml:3",
        **{"exp.yaml": experiment("  workload: {kind: sharegpt, num_requests: many}")})
    add("experiment", "nan", run, "exp.yaml:3",
        **{"exp.yaml": experiment("  workload: {kind: sharegpt, rate: .nan}")})
    add("experiment", "unknown_kind", run, "exp.yaml:3",
        **{"exp.yaml": experiment("  workload: {kind: nope}")})
    add("experiment", "seed_axis", run, "exp.yaml:5",
        **{"exp.yaml": GOOD + "sweep:\n  seed: [1, 2]\n"})
    add("experiment", "bad_exclude", run, "exp.yaml:5",
        **{"exp.yaml": GOOD + "exclude:\n  - {nope: 1}\n"})
    add("experiment", "missing_file", ["run", "nope.yaml", "--out", "out"], "nope.yaml")
    add("experiment", "is_a_folder", ["run", "out", "--out", "out2"], "out")
    # resource bounds: refused up front with the estimate
    add("experiment", "huge_requests", run, "exp.yaml",
        **{"exp.yaml": experiment("  workload: {kind: sharegpt, num_requests: 1000000000}")})
    add("experiment", "huge_background_rate", run, "exp.yaml",
        **{"exp.yaml": experiment("  workload: {kind: chain_with_background, "
                                  "background_rate: 1000000.0}")})
    add("experiment", "over_max_memory", run + ["--max-memory", "64M"], "exp.yaml",
        **{"exp.yaml": GOOD.replace("num_requests: 4", "num_requests: 5")})  # not cached
    # profiles
    add("profile", "not_utf8", run, "p.yaml:2:",
        **{"exp.yaml": profile_exp("./p.yaml"), "p.yaml": b"name: p\n\xff\n"})
    add("profile", "yaml_syntax", run, "p.yaml",
        **{"exp.yaml": profile_exp("./p.yaml"), "p.yaml": "name: [p\n"})
    add("profile", "not_a_mapping", run, "p.yaml",
        **{"exp.yaml": profile_exp("./p.yaml"), "p.yaml": "- 1\n"})
    add("profile", "missing_fields", run, "p.yaml",
        **{"exp.yaml": profile_exp("./p.yaml"), "p.yaml": "name: p\n"})
    add("profile", "missing_file", run, "nope.yaml", **{"exp.yaml": profile_exp("./nope.yaml")})
    add("profile", "unknown_name", run, "exp.yaml:4", **{"exp.yaml": profile_exp("nope")})
    add("profile", "validate_not_utf8", ["validate", "p.yaml"], "p.yaml:1:",
        **{"p.yaml": b"\xfe\xff"})
    add("profile", "validate_missing", ["validate", "nope.yaml"], "nope.yaml")
    # forward-pass CSVs of 'parrotsim validate'
    val = ["validate", PROFILE, "--points", "f.csv", "--plot", "out/v.png"]
    add("forward_csv", "missing_column", val, "f.csv:1",
        **{"f.csv": "prefills,kind,split,measured_s\n,decode,heldout,0.1\n"})
    add("forward_csv", "not_an_int", val, "f.csv:2",
        **{"f.csv": FWD_HEADER + ",abc,512,0,decode,heldout,0.1,,\n"})
    add("forward_csv", "short_row", val, "f.csv:3", **{"f.csv": FWD_HEADER + FWD_ROW + ",1\n"})
    add("forward_csv", "long_row", val, "f.csv:2", **{"f.csv": FWD_HEADER + FWD_ROW[:-1] + ",9\n"})
    add("forward_csv", "nan_time", val, "f.csv:2",
        **{"f.csv": FWD_HEADER + ",1,512,0,decode,heldout,nan,,\n"})
    add("forward_csv", "inf_time", val, "f.csv:3",
        **{"f.csv": FWD_HEADER + FWD_ROW + ",1,512,0,decode,heldout,inf,,\n"})
    add("forward_csv", "zero_time", val, "f.csv:2",
        **{"f.csv": FWD_HEADER + ",1,512,0,decode,heldout,0,,\n"})
    add("forward_csv", "bad_prefills", val, "f.csv:2",
        **{"f.csv": FWD_HEADER + "512,0,0,0,prefill,heldout,0.01,,\n"})
    add("forward_csv", "bad_kind", val, "f.csv:2",
        **{"f.csv": FWD_HEADER + ",1,512,0,sideways,heldout,0.01,,\n"})
    add("forward_csv", "not_utf8", val, "f.csv:2:", **{"f.csv": FWD_HEADER.encode() + b"\xff\n"})
    add("forward_csv", "no_heldout", val, "f.csv",
        **{"f.csv": FWD_HEADER + FWD_ROW.replace("heldout", "train")})
    add("forward_csv", "missing_file", val[:3] + ["nope.csv"], "nope.csv")
    # trace files, checked when the experiment is expanded
    add("trace", "not_utf8_csv", run, "t.csv:3:1",
        **{"exp.yaml": trace_exp("t.csv"), "t.csv": (AZURE_HEADER + AZURE_ROW).encode() + b"\xff"})
    add("trace", "not_utf8_json", run, "t.json:1:",
        **{"exp.yaml": trace_exp("t.json", "sharegpt_json"),
           "t.json": b'[{"conversations": [{"from": "h", "value": "\xff"}]}]'})
    add("trace", "bad_number", run, "t.csv:2",
        **{"exp.yaml": trace_exp("t.csv"), "t.csv": AZURE_HEADER + "2023-11-16 1:2:3,x,1\n"})
    add("trace", "missing_column", run, "t.csv:1",
        **{"exp.yaml": trace_exp("t.csv"), "t.csv": "TIMESTAMP,ContextTokens\n"})
    add("trace", "short_row", run, "t.csv:3",
        **{"exp.yaml": trace_exp("t.csv"), "t.csv": AZURE_HEADER + AZURE_ROW + "1,2\n"})
    add("trace", "no_request", run, "t.csv", **{"exp.yaml": trace_exp("t.csv"), "t.csv":
                                              AZURE_HEADER})
    add("trace", "truncated_json", run, "t.json:1",
        **{"exp.yaml": trace_exp("t.json", "sharegpt_json"), "t.json": '[{"conversations": ['})
    add("trace", "missing_file", run, "exp.yaml:3", **{"exp.yaml": trace_exp("nope.csv")})
    # results folders of 'parrotsim show'
    add("results", "missing", ["show", "nope"], "nope")
    add("results", "empty", ["show", "empty"], "empty", **{"empty/.keep": ""})
    add("results", "truncated_parquet", ["show", "r"], "r/summary.parquet",
        **{"r/summary.parquet": b"PAR1\x00\x00"})
    add("results", "empty_parquet", ["show", "r"], "r/summary.parquet",
        **{"r/summary.parquet": b""})
    add("results", "garbage_csv", ["show", "r"], "r/summary.csv", **{"r/summary.csv": 'x"\n'})
    add("results", "csv_without_rows", ["show", "r"], "r/summary.csv",
        **{"r/summary.csv": "run_hash,status,variant\n"})
    add("results", "not_utf8_csv", ["show", "r"], "r/summary.csv",
        **{"r/summary.csv": b"run_hash,status,variant\n\xff\xfe,\x00\n"})
    add("results", "bad_experiment_json", ["show", "r"], "r/experiment.json",
        **{"r/summary.csv": "run_hash,status,variant\nab,ok,base\n",
           "r/experiment.json": "{bad"})
    add("results", "trace_not_a_run", ["trace", "out"], "out")
    add("results", "compare_not_a_replay", ["compare", "out"], "out")
    # command-line flags
    add("flags", "jobs_zero", run[:4] + ["-j", "0"], "--jobs", **{"exp.yaml": GOOD})
    add("flags", "jobs_not_int", run[:4] + ["-j", "two"], "--jobs", **{"exp.yaml": GOOD})
    add("flags", "max_memory", run + ["--max-memory", "lots"], "--max-memory",
        **{"exp.yaml": GOOD})
    add("flags", "run_timeout", run + ["--run-timeout", "-5"], "--run-timeout",
        **{"exp.yaml": GOOD})
    add("flags", "backend", run + ["--backend", "mpi"], "--backend", **{"exp.yaml": GOOD})
    add("flags", "address_without_ray", run + ["--address", "x:1"], "--address",
        **{"exp.yaml": GOOD})
    add("flags", "show_metrics", ["show", "out", "--metrics", "nope"], "--metrics")
    add("flags", "report_figures", ["report", "--figures", "nope", "--out", "rep"], "nope")
    add("flags", "workload_kind", ["workloads", "describe", "nope"], "nope")
    add("flags", "workload_knob", ["workloads", "describe", "metagpt", "--files", "x"], "--files")
    # output folders and files
    add("out", "out_is_a_file", ["run", "exp.yaml", "--out", "f"], "f",
        **{"exp.yaml": GOOD, "f": "x"})
    add("out", "out_below_a_file", ["run", "exp.yaml", "--out", "f/sub"], "f",
        **{"exp.yaml": GOOD, "f": "x"})
    add("out", "report_out_is_a_file", ["report", "--out", "f"], "f", **{"f": "x"})
    add("out", "plot_is_a_folder", ["validate", PROFILE, "--plot", "out"], "out")
    add("out", "plot_below_a_file", ["validate", PROFILE, "--plot", "f/v.png"], "f",
        **{"f": "x"})
    return c


CASES = _cases()


def tree_digest(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` with a hash of its content."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        out[rel] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def launch(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "error::RuntimeWarning"}
    return subprocess.run([sys.executable, "-m", "parrotsim", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def good_out(tmp_path_factory) -> Path:
    """A results folder of a good tiny sweep (made in this process)."""
    base = tmp_path_factory.mktemp("good")
    (base / "exp.yaml").write_text(GOOD)
    assert main(["run", str(base / "exp.yaml"), "--out", str(base / "out"), "-j", "1",
                 "-q"]) == 0
    return base / "out"


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory, good_out):
    """Each case's (process, tree before, tree after), all cases run a few at once."""
    root = tmp_path_factory.mktemp("cases")

    def one(case: Case):
        folder = root / f"{case.kind}-{case.name}"
        shutil.copytree(good_out, folder / "out")
        for name, content in case.files.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
        before = tree_digest(folder)
        proc = launch(case.argv, folder)
        return proc, before, tree_digest(folder)

    with ThreadPoolExecutor(max(2, os.cpu_count() or 2)) as pool:
        return dict(zip([id(c) for c in CASES], pool.map(one, CASES), strict=True))


def test_matrix_covers_every_class():
    kinds = {c.kind for c in CASES}
    assert kinds == {"experiment", "profile", "forward_csv", "trace", "results", "flags", "out"}
    assert len(CASES) >= 40


@pytest.mark.parametrize("case", CASES, ids=[f"{c.kind}-{c.name}" for c in CASES])
def test_bad_input_is_a_clean_exit_2(case: Case, outcomes):
    proc, before, after = outcomes[id(case)]
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert case.names in proc.stderr, proc.stderr
    assert after == before, "the command wrote or changed files"
