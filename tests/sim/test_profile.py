"""Profile files: round trip through YAML, and clear errors for malformed ones."""

import pytest

from sim.profile import ProfileError, dump_profile, load_profile, parse_profile, shipped_profiles
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


@pytest.mark.parametrize("edit, field", [
    (lambda d: d.pop("curves"), "curves"),
    (lambda d: d.update(schema_version=99), "schema_version"),
    (lambda d: d["curves"]["linear"].update(x=[1, 1]), "curves.linear"),
    (lambda d: d["curves"].pop("decode_paged"), "curves.decode_paged"),
    (lambda d: d["gpu"].update(hbm_tb_s=-1), "gpu.hbm_tb_s"),
    (lambda d: d.update(surprise=1), "surprise"),
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
