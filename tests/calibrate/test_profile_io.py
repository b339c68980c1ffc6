"""Calibrated profiles round-trip through YAML; malformed ones are rejected naming the field."""

from __future__ import annotations

import pytest
from ruamel.yaml import YAML

from parrotsim.calibrate.fit import build_profile, write_profile
from parrotsim.calibrate.validate import points_path, read_points
from parrotsim.sim.model.profile import ProfileError, load_profile, parse_profile
from tests.calibrate import synth


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("prof")
    prof, points, _ = build_profile(synth.write_raw(tmp / "raw"), "synthetic_llama-7b")
    out = tmp / "synthetic_llama-7b.yaml"
    write_profile(prof, points, out)
    return prof, points, out


def test_round_trip(written):
    prof, points, out = written
    back = parse_profile(out.read_text(), str(out))
    assert back == prof
    assert back.curves.prefill_attention_grid is not None
    assert back.curves.decode_paged_grid is not None
    assert len(read_points(points_path(out))) == len(points)


def _mutate(path, tmp_path, edit):
    y = YAML(typ="safe", pure=True)
    data = y.load(path.read_text())
    edit(data)
    bad = tmp_path / "bad.yaml"
    with bad.open("w") as f:
        y.dump(data, f)
    load_profile.cache_clear()
    return bad


def test_wrong_schema_version(written, tmp_path):
    bad = _mutate(written[2], tmp_path, lambda d: d.update(schema_version=99))
    with pytest.raises(ProfileError, match="schema_version"):
        load_profile(str(bad))


def test_missing_curve(written, tmp_path):
    bad = _mutate(written[2], tmp_path, lambda d: d["curves"].pop("decode_paged"))
    with pytest.raises(ProfileError, match=r"curves\.decode_paged"):
        load_profile(str(bad))


def test_bad_grid_shape(written, tmp_path):
    def edit(d):
        d["curves"]["prefill_attention_grid"]["seconds"].pop()
    bad = _mutate(written[2], tmp_path, edit)
    with pytest.raises(ProfileError, match=r"curves\.prefill_attention_grid"):
        load_profile(str(bad))


@pytest.mark.parametrize("edit, message", [
    (lambda g: g["seconds"].pop(), "table"),
    (lambda g: g["seconds"][0].__setitem__(0, -1e-3), "positive"),
    (lambda g: g.update(x=g["x"][::-1]), "increasing"),
])
def test_bad_paged_grid(written, tmp_path, edit, message):
    bad = _mutate(written[2], tmp_path, lambda d: edit(d["curves"]["decode_paged_grid"]))
    with pytest.raises(ProfileError, match=rf"curves\.decode_paged_grid: .*{message}"):
        load_profile(str(bad))
