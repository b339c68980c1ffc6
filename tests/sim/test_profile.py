"""Profile files: round trip through YAML, and clear errors for malformed ones."""

import pytest

from parrotsim.sim.model.profile import (
    ProfileError,
    dump_profile,
    load_profile,
    parse_profile,
    shipped_profiles,
)
from tests.sim.helpers import a100_13b


def test_round_trip(tmp_path):
    prof = a100_13b()
    path = tmp_path / "p.yaml"
    dump_profile(prof, path)
    assert load_profile(str(path)) == prof


def test_every_shipped_profile_loads():
    names = shipped_profiles()
    assert names
    for name in names:
        assert load_profile(name).curves.linear.x


def _paged(**bad) -> dict:
    """A 2 x 2 paged-decode grid (sequences x context) with the fields in ``bad`` replaced."""
    return {"x": [1, 16], "y": [0, 4096], "seconds": [[1e-4, 2e-4], [2e-4, 3e-3]], **bad}


def test_paged_grid_optional_and_round_trips(tmp_path):
    prof = a100_13b()
    assert prof.curves.decode_paged_grid is None  # profiles without it use the 1-D curve
    data = prof.model_dump(mode="json")
    data["curves"]["decode_paged_grid"] = _paged()
    with_grid = type(prof).model_validate(data)
    path = tmp_path / "g.yaml"
    dump_profile(with_grid, path)
    back = load_profile(str(path))
    assert back == with_grid and back.curves.decode_paged_grid.x == [1, 16]


def _zero_curves(d: dict) -> None:
    """Every 1-D curve 0 s at its first point and no iteration overhead."""
    d["curves"]["iteration_overhead_s"] = 0.0
    for name in ("linear", "decode_paged", "prefill_attention"):
        d["curves"][name]["seconds"][0] = 0.0


@pytest.mark.parametrize("edit, field", [
    (lambda d: d.pop("curves"), "curves"),
    (lambda d: d.update(schema_version=99), "schema_version"),
    (lambda d: d["curves"]["linear"].update(x=[1, 1]), "curves.linear"),
    (lambda d: d["curves"].pop("decode_paged"), "curves.decode_paged"),
    (lambda d: d["gpu"].update(hbm_tb_s=-1), "gpu.hbm_tb_s"),
    (lambda d: d.update(surprise=1), "surprise"),
    (lambda d: d["curves"].update(decode_paged_grid=_paged(seconds=[[1e-4, 2e-4]])),
     "curves.decode_paged_grid"),
    (lambda d: d["curves"].update(decode_paged_grid=_paged(seconds=[[1e-4, 2e-4], [0, 3e-4]])),
     "curves.decode_paged_grid"),
    (lambda d: d["curves"].update(decode_paged_grid=_paged(x=[0.5, 2])),
     "curves.decode_paged_grid"),
    (lambda d: d["curves"].update(decode_paged_grid=_paged(y=[128, 0])),
     "curves.decode_paged_grid"),
    # every number finite: NaN and infinities are errors wherever they are (issue 21)
    (lambda d: d["curves"]["linear"]["seconds"].__setitem__(0, float("nan")),
     "curves.linear.seconds.0: Input should be a finite number"),
    (lambda d: d["curves"].update(iteration_overhead_s=float("inf")),
     "curves.iteration_overhead_s: Input should be a finite number"),
    (lambda d: d.update(runtimes={"vllm": {"scale": float("nan")}}),
     "runtimes.vllm.scale: Input should be a finite number"),
    (lambda d: d["gpu"].update(memory_gib=float("inf")),
     "gpu.memory_gib: Input should be a finite number"),
    # every iteration takes a positive time
    (lambda d: d["curves"]["linear"]["seconds"].__setitem__(-1, 0.0),
     "curves.linear: falls past its last point"),
    (lambda d: (_zero_curves(d), d.update(runtimes={})),
     "curves: an iteration of runtime '(default)' can take 0 s"),
])
def test_malformed_profile_names_file_and_field(edit, field):
    data = a100_13b().model_dump(mode="json")
    edit(data)
    import io

    from ruamel.yaml import YAML

    buf = io.StringIO()
    YAML(typ="safe", pure=True).dump(data, buf)
    with pytest.raises(ProfileError) as err:
        parse_profile(buf.getvalue(), "bad.yaml")
    assert f"bad.yaml: {field}" in str(err.value)


def test_unknown_profile_name():
    with pytest.raises(ProfileError, match="unknown profile"):
        load_profile("no-such-gpu")


@pytest.fixture
def fresh_lookup():
    """Name lookups read PARROTSIM_PROFILE_DIR afresh in the test and again after it."""
    from parrotsim.sim.model import profile as profile_mod
    profile_mod._shipped_path.cache_clear()
    yield profile_mod
    profile_mod._shipped_path.cache_clear()


def test_profile_dir_stands_in_for_shipped_names(tmp_path, monkeypatch, fresh_lookup):
    """A profile of a shipped name in PARROTSIM_PROFILE_DIR is the one loaded; names the
    folder lacks stay the shipped ones; a folder that does not exist is an error."""
    shipped = load_profile("a6000_llama-7b")
    dump_profile(shipped.model_copy(update={"description": "a what-if"}),
                 tmp_path / "a6000_llama-7b.yaml")
    monkeypatch.setenv(fresh_lookup.PROFILE_DIR_ENV, str(tmp_path))
    fresh_lookup._shipped_path.cache_clear()  # names are looked up once per process
    assert load_profile("a6000_llama-7b").description == "a what-if"
    assert load_profile("a100-80gb_llama-13b").description == \
        load_profile(str(shipped_profiles()["a100-80gb_llama-13b"])).description
    fresh_lookup._shipped_path.cache_clear()
    monkeypatch.setenv(fresh_lookup.PROFILE_DIR_ENV, str(tmp_path / "missing"))
    with pytest.raises(ProfileError, match="no such folder"):
        load_profile("a6000_llama-7b")
