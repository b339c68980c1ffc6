"""The run timer's exception cannot be swallowed by a handler for ordinary errors."""

import time

import pytest

from parrotsim.sim.harness.time_limit import RunTimeout, time_limit


def _parse_like_the_profile_loader() -> None:
    """Work inside ``try/except Exception``, as the profile's YAML parsing is."""
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            sum(range(1000))
    except Exception as exc:  # noqa: BLE001 - the handler under test
        raise ValueError(f"not valid YAML: {exc}") from None


def test_timeout_passes_through_except_exception():
    """The timer fires inside a broad handler: the run still ends with RunTimeout, not with
    the handler's error (under load the limit used to land in the profile loader and be
    recorded as 'not valid YAML')."""
    assert not issubclass(RunTimeout, Exception)
    start = time.monotonic()
    with pytest.raises(RunTimeout), time_limit(0.05):
        _parse_like_the_profile_loader()
    assert time.monotonic() - start < 2
