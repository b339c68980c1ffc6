"""A failed run's whole exception message is its summary's error (the traceback: error.txt)."""

from __future__ import annotations

from pydantic import BaseModel

from parrotsim.sim.harness import store
from parrotsim.sim.harness.runner import run_experiment


def test_failed_run_keeps_whole_error_message(tiny, tmp_path, monkeypatch):
    class Knobs(BaseModel):
        slots: int

    def simulate(cfg, apps=None):
        Knobs.model_validate({"slots": "many"})

    monkeypatch.setattr(store, "simulate", simulate)
    frame = run_experiment(tiny, tmp_path / "out", jobs=1, progress=False)
    assert (frame["status"] == "failed").all()
    error = frame["error"].iloc[0]
    assert error.startswith("pydantic_core._pydantic_core.ValidationError: 1 validation error "
                            "for Knobs | slots | Input should be a valid integer, unable to "
                            "parse string as an integer [type=int_parsing, input_value='many',")
    assert error.endswith("v/int_parsing")
    text = (tmp_path / "out" / "runs" / frame["run_hash"].iloc[0] / "error.txt").read_text()
    assert text.startswith("Traceback") and "slots" in text

