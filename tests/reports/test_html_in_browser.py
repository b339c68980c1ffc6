"""The report page opens in headless Chromium and shows its tables and figures."""

import shutil
import subprocess

import pytest

from parrotsim.reports.build import build_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_index_html_renders_in_headless_chromium(tmp_path):
    build_report(tmp_path, ["fig15"], jobs=1, progress=False)
    dom = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
         (tmp_path / "index.html").as_uri()],
        capture_output=True, text=True, timeout=120, check=True).stdout
    assert "Headline claims" in dom and "<img" in dom and "fig15.png" in dom
    assert dom.count("<tr>") >= 5  # header + the four Fig 15 claims
