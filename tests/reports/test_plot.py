"""The report's figures: no axis clips data, OOM marks carry their series' colour and a legend
entry, and every figure is titled with the paper's caption.

The figures are drawn from a figures.csv-like frame covering every panel of ``PANELS``, with
the awkward values the real report produces: negative Fig 13 differences (Parrot slower),
Fig 17 baseline latencies far above the paper's 300 ms axis, and out-of-memory points.
"""

from __future__ import annotations

import matplotlib.figure
import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.container import ErrorbarContainer

from parrotsim.reports.derive import TIDY_COLUMNS
from parrotsim.reports.plot import draw
from parrotsim.reports.spec import FIGURES, PANELS, SERIES_LABELS

OOM = {("fig17", "parrot_paged_attention"): {8.0, 16.0},
       ("fig18a", "parrot_without_sharing"): {12, 16}}


def _tidy() -> pd.DataFrame:
    rows = []
    for p in PANELS:
        if p.figure == "fig13":
            values = [255.0, 120.0, 18.2, -39.8, -6.4]
            cells = [("baseline_vllm - parrot", i, v) for i, v in enumerate(values)]
        elif p.x == "variant":  # Fig 19: means of 20 seeds with a spread
            cells = [(s, s, 10.0 * (i + 1)) for i, s in
                     enumerate(["parrot", "baseline_latency", "baseline_throughput"])]
        else:
            xs = [0.25, 2.0, 8.0, 16.0] if p.figure == "fig17" else [4, 8, 12, 16]
            series = (["baseline_vllm", "parrot", "parrot_paged_attention"] if p.figure == "fig17"
                      else ["baseline_latency", "parrot", "parrot_without_sharing"])
            cells = [(s, x, (i + 1) * 33.0 * (1 + j)) for i, s in enumerate(series)
                     for j, x in enumerate(xs)]
            cells.append((series[0], xs[-1], 504.3))  # far above the paper's 300 ms axis
        for series, x, value in cells:
            rows.append({"figure": p.figure, "panel": p.panel, "series": series,
                         "x_name": p.x_name, "x": x, "metric": p.report_metric, "value": value,
                         "unit": p.unit, "oom": x in OOM.get((p.figure, series), ()),
                         "runs": 20 if p.spread else 1, "oom_runs": 0,
                         "lo": 0.6 * value if p.spread else np.nan,
                         "hi": 1.9 * value if p.spread else np.nan,
                         "seeds": 20 if p.spread else 1})
    return pd.DataFrame(rows, columns=TIDY_COLUMNS).drop_duplicates(
        ["figure", "panel", "series", "x"], keep="last")


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> dict[str, tuple[matplotlib.figure.Figure, pd.DataFrame]]:
    """Every figure drawn by ``parrotsim.reports.plot.draw``, caught as it is saved, with its rows."""
    out, caught = tmp_path_factory.mktemp("figs"), []
    _tidy().to_csv(out / "figures.csv", index=False)
    tidy = pd.read_csv(out / "figures.csv")  # as a reader of the report gets it
    save = matplotlib.figure.Figure.savefig
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(matplotlib.figure.Figure, "savefig",
                   lambda self, *a, **k: (caught.append(self), save(self, *a, **k))[1])
        for fig in FIGURES:
            draw(fig, [p for p in PANELS if p.figure == fig], tidy, out)
    assert all((out / f"{f}.png").is_file() for f in FIGURES)
    tidy["panel"] = tidy["panel"].fillna("")
    return {f: (c, tidy[tidy["figure"] == f]) for f, c in zip(FIGURES, caught, strict=True)}


@pytest.mark.parametrize("figure", FIGURES)
def test_no_axis_clips_data(drawn, figure):
    fig, rows = drawn[figure]
    panels = [p for p in PANELS if p.figure == figure]
    for ax, panel in zip(fig.axes, panels, strict=True):
        mine = rows[rows["panel"] == panel.panel]
        values = mine["value"].to_numpy(dtype=float)
        lo, hi = ax.get_ylim()
        assert np.all((values >= lo) & (values <= hi)), (panel.panel, lo, hi, values)
        if panel.kind == "line":
            x0, x1 = ax.get_xlim()
            xs = mine["x"].astype(float).to_numpy()
            assert np.all((xs >= x0) & (xs <= x1)), (x0, x1, xs)
        else:  # categorical axis: every x value has its tick
            ticks = {t.get_text() for t in ax.get_xticklabels()}
            wanted = {SERIES_LABELS.get(x, x) if panel.x == "variant" else str(x)
                      for x in mine["x"]}
            assert wanted <= ticks


def test_negative_bars_are_drawn_below_a_zero_line(drawn):
    fig, _ = drawn["fig13"]
    ax = fig.axes[0]
    heights = sorted(round(b.get_height(), 1) for b in ax.patches)
    assert heights[:2] == [-39.8, -6.4]
    zero = [ln for ln in ax.lines if list(ln.get_ydata()) == [0, 0]]
    assert zero, "no zero line"


@pytest.mark.parametrize(("figure", "series"), sorted(OOM))
def test_oom_marks_use_their_series_colour_and_legend(drawn, figure, series):
    fig, _ = drawn[figure]
    ax = fig.axes[0]
    label = SERIES_LABELS[series]
    marks = [ln for ln in ax.lines if ln.get_marker() == "x"]
    assert len(marks) == 1 and marks[0].get_label() == f"{label}: out of memory"
    assert len(marks[0].get_xdata()) == 2
    if figure == "fig17":
        own = next(ln for ln in ax.lines if ln.get_label() == label).get_color()
    else:
        own = next(c for c in ax.containers if c.get_label() == label)[0].get_facecolor()
    assert to_rgba(marks[0].get_color()) == to_rgba(own)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"{label}: out of memory" in legend and label in legend


@pytest.mark.parametrize("figure", FIGURES)
def test_titles_are_captions(drawn, figure):
    fig, _ = drawn[figure]
    text = fig.texts[0]
    assert text.get_text() != figure and len(text.get_text()) > 30
    assert f"Fig {figure.removeprefix('fig')}: " in text.get_text()
    box = text.get_window_extent(FigureCanvasAgg(fig).get_renderer())
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height  # not cut


def test_bar_ticks_are_the_x_values_when_the_column_is_float(tmp_path, monkeypatch):
    """A report of numeric figures only gets a float ``x`` column: ticks still read 4, 8, ..."""
    tidy = _tidy()
    rows = tidy[tidy["figure"] == "fig18a"].astype({"x": float})
    caught = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda self, *a, **k: caught.append(self))
    draw("fig18a", [p for p in PANELS if p.figure == "fig18a"], rows, tmp_path)
    assert [t.get_text() for t in caught[0].axes[0].get_xticklabels()] == ["4", "8", "12", "16"]


def test_fig19_draws_error_bars_and_says_what_they_are(drawn):
    fig, rows = drawn["fig19"]
    for ax in fig.axes:
        bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        assert len(bars) == 1
        segments = bars[0].lines[2][0].get_segments()  # one vertical whisker per system
        assert len(segments) == 3
        tops = sorted(max(y for _, y in seg) for seg in segments)
        mine = rows[rows["panel"] == ax.get_title()]
        assert tops == pytest.approx(sorted(mine["hi"]))
        assert ax.get_ylim()[1] >= mine["hi"].max()  # no whisker clipped
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert legend == ["mean of 20 seeds; error bars: 10th-90th percentile"]


@pytest.mark.parametrize("figure", ["fig12a", "fig17"])
def test_line_panels_over_seeds_draw_each_points_spread(drawn, figure):
    """Figs 12a and 17 average seeds: a whisker in the series' colour at every point that ran
    (none at an out-of-memory cross), reaching the point's hi, and one legend entry for them."""
    fig, rows = drawn[figure]
    ax = fig.axes[0]
    whiskers = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    drawn_rows = rows[~rows["oom"].astype(bool)]
    tops = sorted(max(y for _, y in seg) for c in whiskers for seg in c.lines[2][0].get_segments())
    assert tops == pytest.approx(sorted(drawn_rows["hi"]))
    assert ax.get_ylim()[1] >= drawn_rows["hi"].max()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend.count("mean of 20 seeds; error bars: 10th-90th percentile") == 1


def test_fig18b_axis_is_in_gib(drawn):
    fig, _ = drawn["fig18b"]
    assert fig.axes[0].get_ylabel() == "peak KV cache memory (GiB)"


def test_fig17_marks_the_interpolated_crossings(tmp_path, monkeypatch):
    tidy = _tidy()
    rates = pd.DataFrame([
        {"figure": "fig17", "panel": "sustainable rate", "series": "baseline_vllm",
         "x_name": "threshold (ms/token)", "x": 100.0, "metric": "sustainable_rate",
         "value": 1.06, "unit": "req/s", "oom": False},
        {"figure": "fig17", "panel": "sustainable rate", "series": "parrot",
         "x_name": "threshold (ms/token)", "x": 100.0, "metric": "sustainable_rate_lower_bound",
         "value": 8.0, "unit": "req/s", "oom": True}], columns=TIDY_COLUMNS)
    caught = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda self, *a, **k: caught.append(self))
    draw("fig17", [p for p in PANELS if p.figure == "fig17"], pd.concat([tidy, rates]), tmp_path)
    marks = [ln for ln in caught[0].axes[0].lines if ln.get_marker() == "v"]
    assert [(list(m.get_xdata()), list(m.get_ydata())) for m in marks] == [([1.06], [100.0])]
