"""User plugins (parrotsim.sim.harness.plugins): policies defined in the user's own module, run in parallel
workers."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd

from parrotsim.cli import main

ROOT = Path(__file__).resolve().parents[2]

PLUGIN = '''\
"""A test plugin: a cluster scheduler, an engine policy and a scheduler that cannot start."""
from typing import Literal

from pydantic import BaseModel

from parrotsim.sim.model.cluster_policy import ClusterPolicy, ClusterPolicyConfig, register_cluster_policy
from parrotsim.sim.model.engine_policy import register_engine_policy
from parrotsim.policies.engine.vllm import VllmConfig


@register_cluster_policy
class FirstEngineConfig(ClusterPolicyConfig):
    policy: Literal["first_engine"] = "first_engine"

    def make(self, num_engines):
        return FirstEngine()


class FirstEngine(ClusterPolicy):
    def dispatch(self, queue, engines, now):
        return [(call, 0) for call in queue]


@register_engine_policy
class TinyBatchConfig(VllmConfig):
    policy: Literal["tiny_batch"] = "tiny_batch"
    max_num_seqs: int = 2


class Knobs(BaseModel):
    slots: int


@register_cluster_policy
class BrokenConfig(ClusterPolicyConfig):
    policy: Literal["broken"] = "broken"

    def make(self, num_engines):
        Knobs.model_validate({"slots": "many"})
'''

EXPERIMENT = """\
name: plug
plugins: [{plugin}]
run:
  workload: {{kind: sharegpt, num_requests: 20, rate: 10.0}}
  cluster: {{engines: 2}}
variants:
  first: {{cluster.scheduler: {{policy: first_engine}}}}
  tiny: {{cluster.engine: {{policy: tiny_batch}}}}
  both: {{cluster.scheduler: {{policy: first_engine}}, cluster.engine: {{policy: tiny_batch}}}}
  broken: {{cluster.scheduler: {{policy: broken}}}}
  vllm: {{}}
seeds: [0, 1]
"""


def _run(tmp_path: Path, plugin: str, out: str, jobs: int) -> subprocess.CompletedProcess:
    (tmp_path / "exp.yaml").write_text(EXPERIMENT.format(plugin=plugin))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path / "lib")])}
    return subprocess.run([sys.executable, "-m", "parrotsim", "run", "exp.yaml", "--out", out,
                           "--jobs", str(jobs), "-q"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


def test_plugin_policies_run_in_parallel_workers(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "my_policies.py").write_text(PLUGIN)
    par = _run(tmp_path, "lib/my_policies.py", "par", jobs=2)  # a file, relative to exp.yaml
    assert par.returncode == 1, par.stderr  # the broken variant fails, the others run
    frame = pd.read_csv(tmp_path / "par" / "summary.csv")
    ok = frame[frame["variant"] != "broken"]
    assert len(frame) == 10 and (ok["status"] == "ok").all()
    broken = frame[frame["variant"] == "broken"]
    assert (broken["status"] == "failed").all()
    for error in broken["error"]:  # the whole message, not only pydantic's URL line
        assert error.startswith("pydantic_core._pydantic_core.ValidationError: 1 validation "
                                "error for Knobs | slots | Input should be a valid integer")
        assert error.endswith("v/int_parsing")
    key = broken["run_hash"].iloc[0]
    assert "Traceback" in (tmp_path / "par" / "runs" / key / "error.txt").read_text()
    first = ok[ok["variant"] == "first"]["run_hash"].iloc[0]
    engines = pd.read_parquet(tmp_path / "par" / "runs" / first / "engines.parquet")
    assert engines["iterations"].iloc[0] > 0 and engines["iterations"].iloc[1] == 0
    vllm = ok[ok["variant"] == "vllm"]["mean_jct"].mean()
    assert ok[ok["variant"] == "tiny"]["mean_jct"].mean() > vllm
    # The same plugin named as a module (on PYTHONPATH), run serially: identical results.
    ser = _run(tmp_path, "my_policies", "ser", jobs=1)
    assert ser.returncode == 1, ser.stderr
    serial = pd.read_csv(tmp_path / "ser" / "summary.csv")
    pd.testing.assert_frame_equal(serial, frame, check_exact=True)


def test_plugin_that_cannot_be_imported_is_a_file_error(write_yaml, tmp_path, capsys):
    (tmp_path / "bad_plugin.py").write_text("import no_such_module_here\n")
    for entry, message in [
        ("missing.py", f"plugins.0: no such plugin file: {tmp_path / 'missing.py'}"),
        ("no_such_plugin_module", "plugins.0: cannot import plugin 'no_such_plugin_module': "
                                  "ModuleNotFoundError"),
        ("bad_plugin.py", "plugins.0: cannot import plugin "
                          f"'{tmp_path / 'bad_plugin.py'}': ModuleNotFoundError"),
        ("not a module", "plugins.0: 'not a module' is neither a module name"),
    ]:
        exp = write_yaml(f"""\
            name: bad
            plugins: [{entry}]
            run: {{workload: {{kind: sharegpt}}, cluster: {{scheduler: {{policy: mine}}}}}}
            """)
        assert main(["run", str(exp), "--out", str(tmp_path / "out"), "-q"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"{exp}:2:11: {message}"), err
    assert not (tmp_path / "out").exists()


def test_plugins_must_be_a_list_of_names(write_yaml, capsys):
    exp = write_yaml(textwrap.dedent("""\
        name: bad
        plugins: my_policies.py
        run: {workload: {kind: sharegpt}}
        """))
    assert main(["run", str(exp), "--dry-run"]) == 2
    assert capsys.readouterr().err.strip() == \
        f"{exp}:2:10: plugins: Input should be a valid list"
