"""App performance (issue 5): re-render time of a slider change, cold start to the first chart, payload size.

Run: ``.venv/bin/python bench/bench_app.py`` (``--quick`` for a short run).

1. AppTest re-render of a slider change on Kernels (α) and NPU (timeline row, then ρ_x), after a
   warm-up: median of repeated changes between values whose results are already cached (the
   target, ≤ 300 ms), and — for information — changes to values never computed before.
2. Cold start in the browser: a fresh ``streamlit run app.py`` process (numba's on-disk cache warm),
   time from launch to the first plotly chart drawn in chromium (target ≤ 10 s).
3. Bytes of the 256×256 PE-utilisation heatmap figure JSON and of a capped 512×512 spy plot.
4. ``--large``: every page on a generated 1M-nonzero uniform 100k×100k matrix (951k tiles at
   T = 32) through AppTest — first visit (computes) and a rerun with nothing changed (caches).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "browser"))


def _apptest():
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(str(ROOT / "app.py"), default_timeout=900)


def _timed(at, widget, value) -> float:
    t0 = time.perf_counter()
    widget.set_value(value).run()
    dt = time.perf_counter() - t0
    assert not at.exception, [e.value for e in at.exception]
    return dt


def rerender_kernels(repeats: int) -> dict:
    at = _apptest()
    at.run()
    at.switch_page("pages/2_Kernels.py").run()
    cached_vals = [1.0, 3.0]
    for v in cached_vals * 2:                                    # warm-up: compute and cache both
        _timed(at, at.select_slider(key="w:alpha"), v)
    hits = [_timed(at, at.select_slider(key="w:alpha"), cached_vals[i % 2]) for i in range(repeats)]
    fresh_vals = [0.3, 10.0, 30.0, 0.1, 100.0][:max(2, repeats // 4)]
    fresh = [_timed(at, at.select_slider(key="w:alpha"), v) for v in fresh_vals]
    return {"cached_median_ms": 1000 * statistics.median(hits), "cached_n": len(hits),
            "fresh_median_ms": 1000 * statistics.median(fresh), "fresh_n": len(fresh)}


def rerender_budget(repeats: int) -> dict:
    """The Kernels page in error-budget mode (cluster granularity, the default sample): each value of
    the budget slider never chosen before runs the budget search; later ones on the same analysis
    reuse the member errors the first computed (``akfviz.selection.member_errors``)."""
    at = _apptest()
    at.run()
    at.switch_page("pages/2_Kernels.py").run()
    at.radio(key="w:mode").set_value("error").run()      # the first budget: member errors computed
    vals = [round(0.055 + 0.005 * i, 3) for i in range(repeats)]
    fresh = [_timed(at, at.slider(key="w:budget"), v) for v in vals]
    return {"fresh_median_ms": 1000 * statistics.median(fresh), "n": len(fresh)}


def rerender_npu(repeats: int) -> dict:
    at = _apptest()
    at.run()
    at.switch_page("pages/3_NPU.py").run()
    row0 = at.slider(key="w:perow").value
    rows = [row0, (row0 + 1) % 256]
    for r in rows * 2:
        _timed(at, at.slider(key="w:perow"), r)
    hits = [_timed(at, at.slider(key="w:perow"), rows[i % 2]) for i in range(repeats)]
    for v in (1.0, 0.5):                                           # warm ρ_x = 0.5 and 1.0
        _timed(at, at.slider(key="w:xdens"), v)
    xd = [_timed(at, at.slider(key="w:xdens"), (1.0, 0.5)[i % 2]) for i in range(repeats)]
    fresh = [_timed(at, at.slider(key="w:xdens"), v) for v in (0.75, 0.25)]
    return {"row_cached_median_ms": 1000 * statistics.median(hits), "rho_cached_median_ms": 1000 * statistics.median(xd),
            "rho_fresh_median_ms": 1000 * statistics.median(fresh), "n": repeats}


def cold_start(runs: int) -> dict:
    from browser_support import CHROMIUM, CHROMIUM_ARGS, start_server, stop_server
    from playwright.sync_api import sync_playwright

    if not os.path.exists(CHROMIUM):
        return {"skipped": f"{CHROMIUM} missing"}
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    out, healthy, drawn = [], [], []
    from browser_support import _wait_healthy
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for _ in range(runs):
            t0 = time.perf_counter()
            proc, url, log = start_server()
            try:
                healthy.append(_wait_healthy(url, proc, 120))
                t1 = time.perf_counter()
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                deadline = time.perf_counter() + 120
                while True:                                        # the server socket opens after a moment
                    try:
                        page.goto(url, timeout=5000)
                        break
                    except Exception:  # noqa: BLE001
                        if time.perf_counter() > deadline:
                            raise
                        time.sleep(0.1)
                page.wait_for_selector(".js-plotly-plot .main-svg", timeout=120_000)
                out.append(time.perf_counter() - t0)
                drawn.append(time.perf_counter() - t1)
                page.close()
            finally:
                stop_server(proc, log)
        browser.close()
    return {"median_s": statistics.median(out), "runs": [round(v, 2) for v in out],
            "server_healthy_median_s": statistics.median(healthy),
            "page_to_chart_median_s": statistics.median(drawn)}


def payload_bytes() -> dict:
    import scipy.sparse as sp

    from akfviz.viz.matrix import spy_density
    from akfviz.viz.npu import utilization_heatmap

    u = np.random.default_rng(0).uniform(0, 1, size=(256, 256))
    heat = len(utilization_heatmap(u).to_json().encode())
    rng = np.random.default_rng(0)
    nnz = 1_000_000
    A = sp.csr_array((rng.standard_normal(nnz), (rng.integers(0, 100_000, nnz), rng.integers(0, 100_000, nnz))),
                     shape=(100_000, 100_000))
    spy = len(spy_density(A, max_bins=512).to_json().encode())
    return {"heatmap_256x256_bytes": heat, "spy_100k_512bins_bytes": spy, "spy_nnz": int(A.nnz)}


def large_pages() -> list:
    """(page, first visit s, rerun s) for every page on a 1M-nnz uniform 100k×100k matrix."""
    at = _apptest()
    at.query_params.update({"src": "gen", "gen": "uniform", "g_n": "100000", "g_density": "0.0001"})
    out = []
    t0 = time.perf_counter()
    at.run()
    out.append(("Matrix", time.perf_counter() - t0, float("nan")))
    for page in sorted((ROOT / "pages").glob("*.py")):
        at.switch_page(str(page.relative_to(ROOT)))
        t0 = time.perf_counter()
        at.run()
        first = time.perf_counter() - t0
        assert not at.exception and not at.error, (page.name, [e.value for e in at.exception],
                                                    [e.value for e in at.error])
        t0 = time.perf_counter()
        at.run()
        out.append((page.stem.split("_", 1)[1], first, time.perf_counter() - t0))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats, one cold start")
    ap.add_argument("--large", action="store_true",
                    help="only: every page on a 1M-nnz uniform 100k×100k matrix (first visit, rerun)")
    args = ap.parse_args(argv)
    if args.large:
        print("# bench_app --large: generated uniform 100000×100000, 1,000,000 nnz, T = 32")
        for name, first, rerun in large_pages():
            print(f"{name:14s} first visit {first:6.1f} s   rerun (nothing changed) "
                  + ("   —" if rerun != rerun else f"{rerun:5.2f} s"))
        print(f"load average during the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        return 0
    reps = 5 if args.quick else 15
    print(f"# bench_app ({'quick' if args.quick else 'full'})")
    p = payload_bytes()
    print(f"payload: 256×256 utilisation heatmap JSON = {p['heatmap_256x256_bytes']:,} B; spy plot of a "
          f"100k×100k matrix ({p['spy_nnz']:,} nnz) at 512×512 bins = {p['spy_100k_512bins_bytes']:,} B")
    k = rerender_kernels(reps)
    print(f"Kernels α slider: cached re-render median {k['cached_median_ms']:.0f} ms (n={k['cached_n']}, "
          f"target ≤ 300 ms); fresh α (selector runs) median {k['fresh_median_ms']:.0f} ms (n={k['fresh_n']})")
    b = rerender_budget(reps)
    print(f"Kernels error-budget slider: each new budget median {b['fresh_median_ms']:.0f} ms "
          f"(n={b['n']}, the budget search runs every time; target ≤ 300 ms)")
    n = rerender_npu(reps)
    print(f"NPU timeline-row slider: cached re-render median {n['row_cached_median_ms']:.0f} ms; ρ_x slider cached "
          f"{n['rho_cached_median_ms']:.0f} ms, fresh (new simulation) {n['rho_fresh_median_ms']:.0f} ms (n={n['n']})")
    c = cold_start(1 if args.quick else 3)
    if "skipped" in c:
        print("cold start: skipped,", c["skipped"])
    else:
        print(f"cold start to first chart (warm numba cache): median {c['median_s']:.2f} s, runs {c['runs']} "
              f"(target ≤ 10 s); of which server start-up {c['server_healthy_median_s']:.2f} s, page open → first "
              f"chart {c['page_to_chart_median_s']:.2f} s")
    print(f"load average during the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
