"""Square tiles stay square: a 4 : 1 weight (MiniLM's FFN, 1536 × 384) was drawn with its 48 × 12
tiles as flat strips, because grids beyond 2.5 : 1 were stretched to the panel (and the tile maps
did not say so). Grids up to 4.5 : 1 now keep square cells, a tall one gets a taller figure and a
width of its own, and a stretched one says so in every map's title."""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from akfviz.viz import kernels as vk
from akfviz.viz import layout
from akfviz.viz import matrix as vm
from akfviz.viz import npu as vn
from akfviz.viz import patterns as vp


def _tiles(n_brows, n_bcols, seed=0):
    rng = np.random.default_rng(seed)
    bi, bj = np.divmod(np.arange(n_brows * n_bcols), n_bcols)
    return pd.DataFrame({"bi": bi, "bj": bj, "density": rng.uniform(0.05, 0.2, bi.size),
                         "cluster": rng.integers(0, 3, bi.size)})


def _plot_box(fig, legend_px):
    """Width and height (px) the plot area may take inside the figure's fixed size."""
    m = fig.layout.margin
    return fig.layout.width - m.l - m.r - legend_px, fig.layout.height - m.t - m.b


def _square(fig):
    return fig.layout.yaxis.scaleanchor == "x"


def _map(build, n_brows, n_bcols):
    """One of the three tile maps of an ``n_brows × n_bcols`` grid of tiles (T = 32)."""
    tiles = _tiles(n_brows, n_bcols)
    if build == "density":
        return vp.tile_density_map(tiles, n_brows, n_bcols, 32)
    if build == "clusters":
        return vp.cluster_map(tiles, n_brows, n_bcols, 32)
    return vk.kernel_map(tiles, ["QUANT8"] * len(tiles), n_brows, n_bcols, 32)


@pytest.mark.parametrize("build", ["density", "clusters", "kernels"])
def test_a_48_by_12_tile_grid_has_square_cells_and_room(build):
    fig = _map(build, 48, 12)
    assert _square(fig)
    assert "stretched" not in fig.layout.title.text
    assert fig.layout.height > 420            # taller than a square grid's figure
    assert fig.layout.width is not None       # and a width of its own, not the whole panel
    w, h = _plot_box(fig, 0)
    assert w >= h * 12 / 48 - 1               # the 12 columns of square cells fit across


def test_the_figure_width_is_what_the_cells_need():
    fig = vp.cluster_map(_tiles(48, 12), 48, 12, 32)   # no colour bar
    w, h = _plot_box(fig, 0)
    assert w == pytest.approx(max(h * 12 / 48, 380 - fig.layout.margin.l - fig.layout.margin.r), abs=1)


def test_square_and_wide_grids_get_the_width_their_cells_need():
    # a square map in a page-wide panel had its colour bar 170–190 px away (layout review)
    for shape in ((12, 12), (12, 48)):
        fig = vp.tile_density_map(_tiles(*shape), *shape, 32)
        w, h = _plot_box(fig, 90)
        assert _square(fig) and w == pytest.approx(max(h * shape[1] / shape[0], 380 - 80 - 90), abs=1)
    assert vp.tile_density_map(_tiles(12, 12), 12, 12, 32).layout.height == 420
    assert 300 <= vp.tile_density_map(_tiles(12, 48), 12, 48, 32).layout.height < 420


@pytest.mark.parametrize("build", ["density", "clusters", "kernels"])
def test_a_stretched_tile_map_says_so(build):
    fig = _map(build, 2, 40)
    assert not _square(fig)
    assert "aspect stretched" in fig.layout.title.text
    assert fig.layout.width is None


def test_the_spy_plot_of_a_4_to_1_weight_is_not_stretched():
    A = sp.random_array((1536, 384), density=0.1, random_state=0, format="csr")
    fig = vm.spy_density(A)
    assert _square(fig)
    assert "stretched" not in fig.layout.title.text
    assert fig.layout.width is not None and fig.layout.height > 460


def test_a_tall_pe_grid_gets_its_width_too():
    fig = vn.utilization_heatmap(np.random.default_rng(1).uniform(size=(256, 64)))
    assert _square(fig) and fig.layout.width is not None


def test_grid_height_bounds():
    assert layout.grid_height(10, 10, 420) == 420
    assert layout.grid_height(40, 10, 420) == layout.TALL_HEIGHT          # 840 capped
    assert layout.grid_height(20, 10, 420) == round(420 * 2 ** 0.5)
    assert layout.grid_height(10, 40, 420) == 300                        # 210, floored
    assert layout.grid_height(100, 10, 420) == 420                       # stretched: unchanged


def test_chart_draws_a_sized_figure_at_its_own_width(monkeypatch):
    from akfviz import app_state as S
    seen = {}
    monkeypatch.setattr(S.st, "plotly_chart", lambda fig, **kw: seen.update(kw))
    S.chart(vp.cluster_map(_tiles(48, 12), 48, 12, 32).to_dict(), key="a")
    assert seen["width"] == "content"
    seen.clear()
    S.chart(vp.cluster_map(_tiles(2, 40), 2, 40, 32), key="b")      # stretched: fills its panel
    assert "width" not in seen


def test_gaps_on_both_axes_or_neither():
    # 192 × 48 tiles (T = 8 on MiniLM's FFN): a gap between the 48 columns only drew stripes
    for build in ("density", "clusters", "kernels"):
        tall = _map(build, 192, 48).data[0]
        small = _map(build, 48, 12).data[0]
        assert tall.xgap == tall.ygap == 0 and small.xgap == small.ygap == 1, build


def test_representatives_are_drawn_with_square_entries():
    rng = np.random.default_rng(0)
    tiles = [rng.uniform(size=(32, 32)) * (rng.uniform(size=(32, 32)) < 0.2) for _ in range(4)]
    fig = vp.representative_gallery(tiles, [f"c{i}: 9 tiles<br>d = 0.2" for i in range(4)], cols=4)
    for i in range(4):
        suffix = "" if i == 0 else str(i + 1)
        assert fig.layout[f"yaxis{suffix}"].scaleanchor == f"x{suffix}"


def test_the_parallel_coordinates_colour_bar_clears_the_last_axis():
    # at 1024 px the speedup axis' title and ticks ran into the colour bar (layout review)
    from akfviz.viz import dse as vd
    df = pd.DataFrame({"tile": [16, 32], "cycles": [640.0, 726.0], "speedup": [1.18, 1.29],
                       "energy_pj": [6.4e6, 9.2e6]})
    fig = vd.parallel_coordinates(df, ["tile", "cycles", "speedup"], "energy_pj")
    bar = fig.data[0].line.colorbar
    assert bar.x >= 1.0 and bar.xanchor == "left" and bar.xpad >= 40
    assert fig.layout.margin.r >= 150
