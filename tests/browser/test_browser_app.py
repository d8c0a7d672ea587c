"""Browser tests: the real app in Debian's chromium (Playwright), every page renders charts, screenshots.

Screenshots go to ``test-artifacts/screenshots/<page>.png`` (the first 1400×900 viewport, as a
user sees it) and ``<page>-full.png`` (the whole page).
"""
import time

import pytest

from browser_support import SHOTS

# one server and one chromium: under `make test` (pytest-xdist) every browser test runs on the same worker
pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

PAGES = [("", "matrix"), ("Patterns", "patterns"), ("Kernels", "kernels"), ("NPU", "npu"),
         ("Compare", "compare"), ("Design_space", "design_space"), ("Solver", "solver"), ("Learn", "learn")]

_CONTENT_HEIGHT_JS = """() => { let m = 0;
  for (const e of document.querySelectorAll('*')) {
    if (e.scrollHeight > e.clientHeight + 5 && e.clientHeight > 300) m = Math.max(m, e.scrollHeight); }
  return m; }"""


def wait_idle(page, timeout_s: float = 180.0) -> None:
    """Wait until the script run is over: no 'Running' status, no spinner, twice in a row."""
    t0, calm = time.perf_counter(), 0
    while time.perf_counter() - t0 < timeout_s:
        busy = page.locator('[data-testid="stStatusWidget"]').count() > 0 or \
            page.locator('[data-testid="stSpinner"]').count() > 0
        calm = 0 if busy else calm + 1
        if calm >= 3:
            return
        time.sleep(0.4)
    raise AssertionError("the app kept running for more than %.0f s" % timeout_s)


def _until(cond, timeout_s: float = 10.0) -> bool:
    """Poll ``cond()`` every 0.2 s until it is true (True) or ``timeout_s`` passes (False)."""
    deadline = time.perf_counter() + timeout_s
    while True:
        if cond():
            return True
        if time.perf_counter() > deadline:
            return False
        time.sleep(0.2)


def open_page(page, url: str, path: str, query: str = "") -> None:
    page.goto(f"{url}/{path}{('?' + query) if query else ''}")
    page.wait_for_selector('[data-testid="stAppViewContainer"]')
    if path == "Design_space":          # its charts appear once a sweep has run
        wait_idle(page)
        page.get_by_role("button", name="Run sweep").click()
    page.wait_for_selector(".js-plotly-plot .main-svg")
    wait_idle(page)


def shoot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))
    h = int(page.evaluate(_CONTENT_HEIGHT_JS) or 900)
    page.set_viewport_size({"width": 1400, "height": max(900, min(h + 60, 12000))})
    time.sleep(1.5)
    page.screenshot(path=str(SHOTS / f"{name}-full.png"))
    page.set_viewport_size({"width": 1400, "height": 900})


@pytest.mark.parametrize("path,name", PAGES)
def test_page_renders_charts(server, page, path, name):
    open_page(page, server, path, "sweep=beta%3D1,100" if path == "Design_space" else "")
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.locator(".js-plotly-plot").count() >= 1
    shoot(page, name)
    # the shell is there on every page (deep links run through app.py, not the page alone)
    assert page.get_by_text("Tile size T").count() >= 1


def test_deep_link_reproduces_the_view(server, page):
    open_page(page, server, "Kernels", "tile=16&alpha=10&mode=weights")
    assert page.locator('[data-testid="stException"]').count() == 0
    assert "tile=16" in page.url and "alpha=10" in page.url
    assert page.get_by_text("16", exact=True).count() >= 1


def _title_of_first_chart(page) -> str:
    return page.locator(".js-plotly-plot .gtitle").first.text_content()


def test_slider_updates_a_chart(server, page):
    open_page(page, server, "Patterns")
    before = _title_of_first_chart(page)
    thumb = page.locator('[data-testid="stSidebar"] [data-testid="stSlider"] input[type="range"]').first
    thumb.focus()
    for _ in range(4):
        page.keyboard.press("ArrowRight")                 # T: 32 → 48 (step 4)
    page.wait_for_function("(b) => { const t = document.querySelector('.js-plotly-plot .gtitle');"
                           " return t && t.textContent !== b; }", arg=before, timeout=120_000)
    wait_idle(page)
    after = _title_of_first_chart(page)
    assert after != before
    assert "tile=48" in page.url


def test_bad_upload_shows_the_error_message(server, page):
    open_page(page, server, "")
    page.get_by_role("tab", name="Upload").click()
    uploader = page.locator('[data-testid="stMain"] [data-testid="stFileUploader"]').filter(has_text="Matrix file")
    uploader.locator('input[type="file"]').set_input_files(
        files=[{"name": "broken.mtx", "mimeType": "text/plain", "buffer": b"this is not a matrix market file\n"}])
    err = page.get_by_text("not a valid Matrix Market file")
    err.first.wait_for(timeout=60_000)
    assert page.locator('[data-testid="stException"]').count() == 0
    shoot(page, "bad-upload")


def test_compressed_archive_upload_offers_its_matrices(server, page):
    # a SuiteSparse-style archive, bzip2-compressed: west/west.mtx plus a side file
    import bz2
    import io
    import tarfile

    def mtx(n, k):
        rows = "".join(f"{i % n + 1} {(i * 7 + (i // n) * 13) % n + 1} {1 + i % 5}\n" for i in range(k))
        return f"%%MatrixMarket matrix coordinate real general\n{n} {n} {k}\n{rows}".encode()

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in (("west/west.mtx", mtx(300, 900)), ("west/west_b.mtx", mtx(40, 40))):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    open_page(page, server, "")
    page.get_by_role("tab", name="Upload").click()
    uploader = page.locator('[data-testid="stMain"] [data-testid="stFileUploader"]').filter(has_text="Matrix file")
    uploader.locator('input[type="file"]').set_input_files(
        files=[{"name": "west.tar.bz2", "mimeType": "application/x-bzip2", "buffer": bz2.compress(buf.getvalue())}])
    page.get_by_text("Matrix in the archive").first.wait_for(timeout=60_000)
    page.get_by_text("300×300").first.wait_for(timeout=60_000)  # the default member, west/west.mtx
    page.get_by_text("member west/west.mtx").first.wait_for(timeout=60_000)
    wait_idle(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.get_by_text("not a valid").count() == 0
    shoot(page, "archive-upload")


def test_clicking_a_tile_on_the_density_map_selects_it(server, page):
    # plotly heatmaps fire no clicks in selection mode; the map's invisible marker layer does
    open_page(page, server, "Patterns")
    inp = page.get_by_label("Selected tile number (as in the map's hover)")
    assert inp.input_value() == "0"
    # a click that lands before plotly has bound its handlers (a loaded machine) is tried again
    for _ in range(3):
        drag = page.locator(".js-plotly-plot").first.locator(".nsewdrag").first
        # the 48 × 12 tile map is drawn with square cells, 820 px tall: its middle is below a
        # 900-px window until scrolled to, as a user would (a click off screen does nothing)
        drag.scroll_into_view_if_needed()
        box = drag.bounding_box()
        x, y = box["x"] + box["width"] * 0.6, box["y"] + box["height"] * 0.5
        page.mouse.move(x, y)
        page.mouse.click(x, y)
        if _until(lambda: inp.input_value() != "0", timeout_s=30.0):
            break
        wait_idle(page)
    wait_idle(page)
    assert inp.input_value() != "0", "three clicks on the density map never selected a tile"
    assert f"tsel={inp.input_value()}" in page.url
    assert page.locator('[data-testid="stException"]').count() == 0
    # the cluster box follows the click: it shows the clicked tile's cluster (the default view:
    # the default sample at the default T and LSH parameters, analysed here by the library)
    import akfviz
    from akfviz.app_url import FIELDS
    from akfviz.workloads.samples import DEFAULT_SAMPLE, load_sample

    pa = akfviz.analyze(load_sample(DEFAULT_SAMPLE), tile=int(FIELDS["tile"].default))
    want = int(pa.tiles["cluster"].iloc[int(inp.input_value())])
    assert pa.n_clusters > 1
    assert page.get_by_role("spinbutton", name="Selected cluster").input_value() == str(want)
    shoot(page, "tile-click")
    # the click's selection stays in the chart's state: typing another tile afterwards must not
    # snap back to the clicked one
    clicked = inp.input_value()
    other = "1" if clicked != "1" else "2"
    inp.fill(other)
    inp.press("Enter")
    time.sleep(1.0)
    wait_idle(page)
    time.sleep(1.0)
    wait_idle(page)
    assert inp.input_value() == other, (clicked, other, inp.input_value())
    assert page.get_by_role("heading", name=f"Tile #{other}").count() == 1


def test_plan_export_downloads_the_table(server, page, tmp_path):
    # the Kernels page's "Plan (CSV)" button: the table is built on the click and the browser gets
    # one row per nonempty tile with the chosen kernel and its squared error
    import pandas as pd

    open_page(page, server, "Kernels")
    with page.expect_download(timeout=60_000) as info:
        page.get_by_role("button", name="Plan (CSV)").click()
    path = tmp_path / "plan.csv"
    info.value.save_as(path)
    df = pd.read_csv(path)
    assert list(df.columns) == ["tile", "bi", "bj", "nnz", "density", "cluster", "kernel", "sq_error"]
    assert len(df) > 0 and (df["sq_error"] >= 0).all() and df["kernel"].notna().all()
    assert page.locator('[data-testid="stException"]').count() == 0


def test_matrix_download_is_the_shown_matrix(server, page, tmp_path):
    # the Matrix page's "Download .mtx" is the sample itself, not its transpose (the default sample
    # is 1536 × 384, so a transpose would change the shape too) and "Download .npz" the same matrix
    import numpy as np
    import scipy.io
    import scipy.sparse as sp

    from akfviz.workloads.samples import DEFAULT_SAMPLE, load_sample

    open_page(page, server, "")
    A = load_sample(DEFAULT_SAMPLE)
    for label, name in (("Download .mtx", "m.mtx"), ("Download .npz", "m.npz")):
        with page.expect_download(timeout=60_000) as info:
            page.get_by_role("button", name=label).click()
        path = tmp_path / name
        info.value.save_as(path)
        B = sp.csr_array(scipy.io.mmread(path) if name.endswith(".mtx") else sp.load_npz(path))
        assert B.shape == A.shape
        assert abs(B - A).max() == 0 and B.nnz == A.nnz
    assert A.shape[0] != A.shape[1]
    assert page.locator('[data-testid="stException"]').count() == 0


def test_energy_table_edit_sticks_and_reset_undoes_it(server, page):
    # an edited energy value changes the simulated energy and stays (the editor once compared its
    # table with the already-edited hardware table and undid every edit on the next run)
    open_page(page, server, "NPU")
    energy = page.locator('[data-testid="stMetric"]').filter(has_text="energy").first
    before = energy.inner_text()
    page.get_by_text("Energy table (editable, with provenance)").click()
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.wait_for(state="visible")
    grid.scroll_into_view_if_needed()
    wait_idle(page)
    sidebar = page.locator('[data-testid="stSidebar"]')

    def selected_cells() -> list:
        """The cells the grid marks as selected, from its accessibility table (glide-cell-<col>-<row>)."""
        return grid.locator('td[aria-selected="true"]').evaluate_all("els => els.map(e => e.id)")

    def edit_first_value(settle: float) -> str:
        """Put 123.5 into the first row's "value" cell, step by step; "" once the app has taken it.

        Every step is checked before the next (typing straight into a selected cell lost the
        keys that arrived while the cell editor was opening: "123.5" became "23.5", or nothing
        on a loaded machine); the return value says which step failed.
        """
        time.sleep(settle)                                     # the grid's canvas takes input after a moment
        grid.scroll_into_view_if_needed()
        box = grid.bounding_box()
        page.mouse.click(box["x"] + 30, box["y"] + 35 + 17)   # first row, "action" column (read-only)
        if not _until(lambda: "glide-cell-0-0" in selected_cells()):
            return f"the click did not select the first cell (selected: {selected_cells()})"
        page.keyboard.press("ArrowRight")                      # → its "value" cell
        if not _until(lambda: "glide-cell-1-0" in selected_cells()):
            return f"ArrowRight did not select the value cell (selected: {selected_cells()})"
        page.keyboard.press("Enter")                           # opens the cell editor
        editor = page.get_by_test_id("portal").locator(".gdg-clip-region input, .gdg-clip-region textarea")
        try:
            editor.first.wait_for(state="visible", timeout=10_000)
        except Exception:
            return "Enter did not open the cell editor"
        editor.first.fill("123.5")
        if editor.first.input_value() != "123.5":
            return f"the cell editor holds {editor.first.input_value()!r}"
        editor.first.press("Enter")                            # commits the edit
        if not _until(lambda: editor.count() == 0):
            return "the cell editor stayed open"
        deadline = time.perf_counter() + 30
        while time.perf_counter() < deadline:
            wait_idle(page)
            if "edited energy table" in sidebar.inner_text():
                return ""
            time.sleep(0.5)
        return "the app did not report the edited table within 30 s"

    # a step that fails on a loaded machine (the grid takes input a moment after it is drawn) is
    # tried again, each time after a longer pause; an edit the app undoes on its next run still
    # fails the check below
    failures = []
    for settle in (1.0, 2.0, 4.0, 8.0):
        failures.append(edit_first_value(settle))
        if not failures[-1]:
            break
    else:
        shoot(page, "energy-edit-failed")
        raise AssertionError(f"the energy table edit never reached the app: {failures}")
    time.sleep(2.0)   # a rerun that undid the edit would come here
    wait_idle(page)
    assert "edited energy table" in sidebar.inner_text()
    after = energy.inner_text()
    assert after != before, (before, after)
    assert page.locator('[data-testid="stException"]').count() == 0
    page.get_by_text("Hardware configuration").click()
    page.get_by_role("button", name="Reset to the preset").click()
    time.sleep(1.0)
    wait_idle(page)
    assert "edited energy table" not in sidebar.inner_text()
    assert energy.inner_text() == before


_GRIDS_JS = """() => Array.from(document.querySelectorAll('[data-testid="stDataFrame"] .dvn-scroller'))
  .filter(e => e.clientWidth > 0).map(e => [e.scrollWidth, e.clientWidth])"""
_CONTENT_WIDTH_JS = """() => { const e = document.querySelector('[data-testid="stMainBlockContainer"]');
  const s = getComputedStyle(e); return e.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight); }"""


@pytest.mark.parametrize("path", ["Compare", "Kernels", "Solver", "Design_space"])
def test_no_table_scrolls_sideways_at_1280_px(server, page, path):
    """Forty-ninth session: at a 1280-px window Compare's claims table hid the paper's error, and
    the Kernels page's explanation its last columns. The grid's scroller is as wide as its content
    when nothing is cut off. The AppTest width checks use ``PAGE_PX_1280``, which this measures."""
    from akfviz.viz.tables import PAGE_PX_1280

    page.set_viewport_size({"width": 1280, "height": 900})
    try:
        open_page(page, server, path, "sweep=beta%3D1,100" if path == "Design_space" else "")
        assert abs(page.evaluate(_CONTENT_WIDTH_JS) - (PAGE_PX_1280 + 2)) <= 4
        grids = page.evaluate(_GRIDS_JS)
        assert grids, "no table drawn"
        assert all(scroll <= client + 1 for scroll, client in grids), grids
    finally:
        page.set_viewport_size({"width": 1400, "height": 900})


def test_compare_claims_table_is_whole_at_1024_px(server, page):
    """The table that sets the measured values beside the paper's claims fits a 1024-px window too
    (564 px of page); the page's other tables may scroll there."""
    page.set_viewport_size({"width": 1024, "height": 900})
    try:
        open_page(page, server, "Compare")
        grids = page.evaluate(_GRIDS_JS)
        assert grids and grids[0][0] <= grids[0][1] + 1, grids        # the first grid: the claims
    finally:
        page.set_viewport_size({"width": 1400, "height": 900})
