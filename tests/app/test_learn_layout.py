"""The Learn page stays readable on a narrow page (a 1000 px window with the sidebar open: ≈ 540 px of content).

A UX test there found the step buttons cut to "S…", "B…", "N…", the matrix's value labels running into each other,
the formulas and the step's formula clipped, the timeline's "makespan" label cut and its PE axis growing while
stepping, and the partial-sums header cut. These tests pin the layout choices that fixed them, and step through
every step of two cases.
"""
import json

import numpy as np
import pytest

from akfviz.npu.trace import tiny_case
from akfviz.viz import learn as vl
from apptest_tree import block

APP = str(__import__("pathlib").Path(__file__).resolve().parents[2] / "app.py")  # this checkout's app
BIG = {"ln": "16", "lT": "4", "lgrid": "3×3", "ldens": "0.5", "lxd": "0.5", "lkernel": "DENSE", "lseed": "3"}


@pytest.fixture
def at():
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(APP, default_timeout=600)


def _ok(app):
    assert not app.exception, [e.value for e in app.exception]
    assert not app.error, [e.value for e in app.error]


_block = block  # the keyed container (apptest_tree.block)


# ---- the figures -------------------------------------------------------------------------------------------

def _matrix(n, tile=4, width=vl.PANEL_WIDTH, seed=1):
    tc = tiny_case(n=n, tile=tile, grid=(2, 2), density=0.6, x_density=1.0, seed=seed)
    fig = vl.learn_matrix(tc.A_hat, tc.x, tc.trace.tile, tc.work.bi, tc.work.bj, tc.trace.tile_pe,
                          tc.trace.steps[5], width=width)
    return tc, fig


@pytest.mark.parametrize("n", [8, 12, 16])
@pytest.mark.parametrize("seed", [0, 1, 3])
def test_matrix_labels_fit_their_cells(n, seed):
    tc, fig = _matrix(n, seed=seed)
    heat = fig.data[0]
    m = fig.layout.margin
    cell = (fig.layout.width - m.l - m.r) // n
    A = np.asarray(tc.A_hat)
    if heat.texttemplate:
        size = heat.textfont.size
        assert vl.MIN_LABEL_FONT <= size <= 13
        shown = [t for row in heat.text for t in row if t]
        widest = max(vl.text_em(t) for t in shown)
        assert widest * size <= cell - 4, (widest, size, cell)      # a label never reaches its neighbour
        omitted = int((A != 0).sum()) - len(shown)
        assert omitted <= len(shown) // 3
        if omitted:
            assert f"{omitted} value" in fig.layout.title.text
        for (i, j) in np.argwhere(A != 0)[:20]:
            assert heat.text[i][j] in ("", vl.short_label(A[i, j]), f"{A[i, j]:.2g}")
    else:
        assert "values in the hover" in fig.layout.title.text
    if n == 8:                                                    # plainly readable at n = 8, 0.5 as "0.5"
        assert heat.texttemplate and heat.textfont.size >= 11
        assert all(t == "" or t == f"{v:.2g}" for row, arow in zip(heat.text, A) for t, v in zip(row, arow))
    if n == 12:
        assert heat.texttemplate
    # every value is in the hover (4 significant digits)
    i, j = map(int, np.argwhere(A != 0)[0])
    assert heat.customdata[i][j] == f"{A[i, j]:.4g}"


def test_matrix_labels_are_left_out_when_the_cells_are_too_small():
    tc = tiny_case(n=16, tile=4, grid=(2, 2), density=0.6, x_density=1.0, seed=1)
    A = np.where(np.asarray(tc.A_hat) != 0, -0.0123, 0.0)        # every label long: "-.012"
    fig = vl.learn_matrix(A, tc.x, tc.trace.tile, tc.work.bi, tc.work.bj, tc.trace.tile_pe)
    heat = fig.data[0]
    assert not heat.texttemplate and heat.text is None
    assert "%{customdata}" in heat.hovertemplate and len(heat.customdata) == 16
    assert "values in the hover" in fig.layout.title.text
    # x, 16 values, on two lines of 8 so it fits over the matrix
    assert fig.layout.title.text.count("x[") == 2
    # the title's lines have room above the plot: 4 lines (title, x twice, the note)
    assert fig.layout.margin.t >= 4 * 19


def test_short_labels_drop_the_leading_zero_only():
    assert [vl.short_label(v) for v in (-0.67, 0.094, 1.5, -1.0, 12.0)] == ["-.67", ".094", "1.5", "-1", "12"]


def test_label_font_is_the_largest_that_fits():
    assert vl.label_font(46, ["-.67", ".094"]) == 13
    assert vl.label_font(10, ["-0.67"]) < vl.MIN_LABEL_FONT
    assert vl.label_font(30, []) == 13


def test_matrix_axes_keep_to_the_matrix():
    _, fig = _matrix(8)
    assert list(fig.layout.yaxis.range) == [7.5, -0.5] and list(fig.layout.xaxis.range) == [-0.5, 7.5]
    assert fig.layout.yaxis.constrain == "domain" and fig.layout.xaxis.constrain == "domain"


def test_grid_text_fits_a_three_wide_grid():
    tc = tiny_case(n=16, tile=4, grid=(3, 3), density=0.5, x_density=1.0, seed=3)
    tr = tc.trace
    # the step where the most events wait in one queue
    k = max(range(len(tr.steps) + 1), key=lambda s: max(len(q) for q in tr.state_at(s)["queues"]))
    fig = vl.learn_grid(tr.state_at(k), tr, tr.steps[k - 1] if k else None)
    assert fig.layout.width == vl.PANEL_WIDTH
    box = (vl.PANEL_WIDTH - 20) // 3
    for a in fig.layout.annotations:
        if a.showarrow:
            continue
        assert a.font.size == 10
        for line in a.text.split("<br>"):
            plain = line.replace("<b>", "").replace("</b>", "")
            assert len(plain) * a.font.size * 0.55 <= 0.9 * box, plain    # within the box (90 % of the cell)


def test_grid_names_the_tiles_each_pe_holds():
    # "tiles: 0" read as "no tiles"; each box now says which tiles it holds, by their number
    tc = tiny_case()
    tr = tc.trace
    fig = vl.learn_grid(tr.state_at(0), tr)
    boxes = [a.text for a in fig.layout.annotations if not a.showarrow]
    assert len(boxes) == tr.grid[0] * tr.grid[1]
    for p, text in enumerate(boxes):
        held = np.flatnonzero(tr.tile_pe == p)
        want = ("holds no tile" if held.size == 0 else
                ("holds tile " if held.size == 1 else "holds tiles ") + ", ".join(f"#{u}" for u in held))
        assert want in text.split("<br>"), (p, text)
        assert "tiles: " not in text


def test_timeline_lists_every_pe_from_the_first_step():
    tc = tiny_case()
    tr = tc.trace
    n_pe = tr.grid[0] * tr.grid[1]
    for upto in (0, 1, len(tr.steps)):
        fig = vl.learn_timeline(tr, upto)
        assert list(fig.layout.yaxis.range) == [n_pe - 0.5, -0.5]
        assert list(fig.layout.yaxis.tickvals) == list(range(n_pe))
        assert fig.layout.yaxis.autorange is False
    assert {s.pe for s in tr.steps[:1]} != set(range(n_pe))      # at step 1 not every PE has done anything


def test_timeline_legend_and_makespan_label_stay_inside():
    tr = tiny_case().trace
    fig = vl.learn_timeline(tr, len(tr.steps))
    # the legend on the left, above the plot (not at the right edge, where the makespan label ran off)
    assert fig.layout.legend.xanchor == "left" and fig.layout.legend.x == 0
    # the makespan's value is in the axis title, no label at the line to run past the plot's edge
    assert not fig.layout.annotations
    assert f"makespan = {tr.makespan}" in fig.layout.xaxis.title.text
    assert fig.layout.height >= 150 + 26 * 4


# ---- the page ----------------------------------------------------------------------------------------------

def test_step_buttons_sit_in_a_row_sized_to_their_labels(at):
    at.run()
    at.switch_page("pages/7_Learn.py").run()
    _ok(at)
    row = _block(at, "learn_buttons")
    assert row is not None
    fc = row.proto.flex_container
    assert fc.direction == fc.HORIZONTAL and fc.wrap
    kids = list(row.children.values())
    buttons = [k for k in kids if type(k).__name__ == "Button"]
    assert [b.key for b in buttons] == ["learn_first", "learn_prev", "learn_next"]
    # straight in the row, not each in a column of a fixed share of the page (which cut the labels)
    assert not any(type(k).__name__ == "Column" for k in kids)
    assert _block(at, "learn_slider") is not None and at.slider(key="w:lstep") is not None


def test_figures_and_formulas_wrap_where_the_page_is_narrow(at):
    at.query_params["lstep"] = "3"
    at.run()
    at.switch_page("pages/7_Learn.py").run()
    _ok(at)
    for key, widths in (("learn_figs", {vl.PANEL_WIDTH}), ("learn_bottom", {300, 480})):
        block = _block(at, key)
        assert block is not None, key
        assert block.proto.flex_container.wrap
        assert {c.proto.width_config.pixel_width for c in block.children.values()} == widths
    assert at.code[0].proto.wrap_lines                              # the step's formula wraps
    long = [x.value for x in at.latex
            if "arrive}} &=" in x.value or "w = {}" in x.value or "t_q \\leftarrow" in x.value]
    assert len(long) == 3 and all("\\\\" in v for v in long)          # on two lines each
    ps = next(d for d in at.dataframe if "partial sums" in d.value.columns)
    assert list(ps.value.columns) == ["tile", "(bi, bj)", "PE", "kernel", "partial sums"]
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert [s["layout"].get("width") for s in specs[:2]] == [vl.PANEL_WIDTH, vl.PANEL_WIDTH]


def _walk_steps(app, link):
    """Steps 1, 2, the middle one, the last but one and the last, through the page's slider (every step
    is drawn by the library in :func:`test_every_step_of_a_case_draws`; a page run costs ≈ 1 s)."""
    app.query_params.update(link)
    app.run()
    app.switch_page("pages/7_Learn.py").run()
    _ok(app)
    n_steps = int(app.slider(key="w:lstep").max)
    assert n_steps > 5
    for k in sorted({1, 2, n_steps // 2, n_steps - 1, n_steps}):
        app.slider(key="w:lstep").set_value(k).run()
        _ok(app)
        assert any(m.value.startswith(f"**Step {k} / {n_steps}") for m in app.markdown), k
        assert len(app.get("plotly_chart")) == 3
    y = next(d.value for d in app.dataframe if "y so far" in d.value.columns)
    np.testing.assert_allclose(y["y so far"].to_numpy(), y["Â x"].to_numpy(), rtol=1e-9, atol=1e-12)
    return n_steps


def _case(link):
    """The page's tiny case for a link (the page's defaults where the link is silent)."""
    from akfviz.app_url import FIELDS

    get = lambda k: link.get(k, FIELDS[k].default)  # noqa: E731
    rows, cols = (int(v) for v in get("lgrid").split("×"))
    return tiny_case(n=int(get("ln")), tile=int(get("lT")), grid=(rows, cols), density=float(get("ldens")),
                     x_density=float(get("lxd")), kernel=get("lkernel"), seed=int(get("lseed")))


@pytest.mark.parametrize("link", [{}, BIG], ids=["default", "big"])
def test_every_step_of_a_case_draws(link):
    """What the page shows at step k, built as the page builds it: the state after steps 1..k at every
    step (the partial sums grow to y = Â x at the last one), and the matrix, grid and timeline figures
    at step 0, the last step and the first step of every kind and on every PE (the figures differ by
    the step's kind and PE; drawing all ≈ 90 steps of the larger case took 28 s)."""
    tc = _case(link)
    tr = tc.trace
    n_steps = len(tr.steps)
    assert n_steps > 5
    first = {}
    for k, s in enumerate(tr.steps, start=1):
        first.setdefault(("kind", s.kind), k)
        first.setdefault(("pe", s.pe), k)
    draw = {0, n_steps, *first.values()}
    for k in range(n_steps + 1):
        step = tr.steps[k - 1] if k else None
        state = tr.state_at(k)
        assert len(state["partial"]) == len(tc.work.bi) and len(state["y"]) == tc.A_hat.shape[0]
        if k not in draw:
            continue
        figs = (vl.learn_matrix(tc.A_hat, tc.x, tr.tile, tc.work.bi, tc.work.bj, tr.tile_pe, step),
                vl.learn_grid(state, tr, step), vl.learn_timeline(tr, k))
        assert len(figs[0].data) > 0 and len(figs[1].layout.shapes) >= tr.grid[0] * tr.grid[1], k  # a box per PE
        assert (len(figs[2].data) > 0) == (k > 0), k                     # the timeline starts empty
    np.testing.assert_allclose(state["y"], tc.A_hat @ tc.x, rtol=1e-9, atol=1e-12)


def test_steps_of_the_default_case_render(at):
    # Next × 5, Back × 1 (the UX test's path), then steps across the run by the slider
    at.run()
    at.switch_page("pages/7_Learn.py").run()
    for key in ["learn_next"] * 5 + ["learn_prev"]:
        next(b for b in at.button if b.key == key).click().run()
        _ok(at)
    assert at.slider(key="w:lstep").value == 4
    _walk_steps(at, {})


def test_steps_of_a_larger_case_render(at):
    n_steps = _walk_steps(at, BIG)
    assert at.selectbox(key="w:lgrid").value == "3×3"
    assert n_steps > 40


# --------------------------------------------------------------------------- geometry (mutation probe)
def _wide_case():
    return tiny_case(n=12, tile=4, grid=(2, 3), kernel="CSC", seed=1)


def test_grid_boxes_sit_at_their_pes_row_and_column_on_a_non_square_grid():
    tr = _wide_case().trace
    fig = vl.learn_grid(tr.state_at(0), tr)
    boxes = [a for a in fig.layout.annotations if not a.showarrow]
    assert len(boxes) == 6
    for p, a in enumerate(boxes):
        assert a.text.startswith(f"<b>PE {p}</b> ({p // 3},{p % 3})")
        assert (a.x, a.y) == (p % 3 + 0.5, p // 3 + 0.5)
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    assert [(s.x0, s.y0) for s in rects] == [(p % 3 + 0.05, p // 3 + 0.05) for p in range(6)]


def test_an_event_from_another_pe_is_drawn_as_an_arrow_from_that_pe():
    tr = _wide_case().trace
    k = next(k for k, s in enumerate(tr.steps)
             if s.kind == "event" and int(tr.src_pe[s.column // tr.tile]) != s.pe)
    step = tr.steps[k]
    src = int(tr.src_pe[step.column // tr.tile])
    arrows = [a for a in vl.learn_grid(tr.state_at(k + 1), tr, step).layout.annotations if a.showarrow]
    assert len(arrows) == 1
    a = arrows[0]
    assert (a.ax, a.ay) == (src % 3 + 0.5, src // 3 + 0.85)
    assert (a.x, a.y) == (step.pe % 3 + 0.5, step.pe // 3 + 0.85)


def test_tile_frames_and_pe_tags_follow_the_tiles_rows_and_columns():
    tc = _wide_case()
    tr, T = tc.trace, tc.trace.tile
    assert not np.array_equal(tc.work.bi, tc.work.bj)      # the case tells rows from columns
    fig = vl.learn_matrix(tc.A_hat, tc.x, T, tc.work.bi, tc.work.bj, tr.tile_pe)
    frames = [s for s in fig.layout.shapes if s.type == "rect"]
    tags = list(fig.layout.annotations)
    assert len(frames) == len(tags) == len(tc.work.bi)
    for u, (bi, bj) in enumerate(zip(tc.work.bi, tc.work.bj)):
        assert (frames[u].x0, frames[u].y0) == (bj * T - 0.5, bi * T - 0.5)
        assert (frames[u].x1, frames[u].y1) == ((bj + 1) * T - 0.5, (bi + 1) * T - 0.5)
        assert (tags[u].x, tags[u].y) == (bj * T - 0.5, bi * T - 0.5)
        assert tags[u].text == vl.pe_label(int(tr.tile_pe[u]))
