"""akfviz — the Streamlit app (akf-spec §10). Run: ``streamlit run app.py``.

Entry: page config, the shared sidebar (workload, tile size, hardware preset, run bundle)
and the navigation over the eight pages. The full state lives in the URL.

The pages live in ``app_pages/``, not ``pages/``: with Streamlit 1.67 a ``pages/`` folder next
to the entry script switches the server into the classic multipage mode until ``st.navigation``
first runs, so a deep link such as ``/kernels?alpha=10`` opened on a fresh server would run the
page script alone, without this shell (no sidebar, no shared state). ``app_pages/`` avoids that.
"""
import streamlit as st

from akfviz import __version__
from akfviz import app_state as S
from akfviz.errors import InputError

st.set_page_config(page_title="akfviz — Adaptive Kernel Fusion", page_icon="🧩", layout="wide")

PAGES = (
    ("app_pages/matrix.py", "Matrix", ":material/grid_on:"),
    ("app_pages/patterns.py", "Patterns", ":material/scatter_plot:"),
    ("app_pages/kernels.py", "Kernels", ":material/tune:"),
    ("app_pages/npu.py", "NPU", ":material/memory:"),
    ("app_pages/compare.py", "Compare", ":material/bar_chart:"),
    ("app_pages/design_space.py", "Design space", ":material/travel_explore:"),
    ("app_pages/solver.py", "Solver", ":material/functions:"),
    ("app_pages/learn.py", "Learn", ":material/school:"),
)

S.init_session()
page = st.navigation([st.Page(path, title=title, icon=icon, default=i == 0)
                      for i, (path, title, icon) in enumerate(PAGES)])

for problem in S.url_problems():
    st.warning(problem)

with st.sidebar:
    st.markdown(f"**akfviz** {__version__} · Adaptive Kernel Fusion")
    names = S.sample_names()
    src = S.get("src")
    if src == "sample" and names:
        S.widget(st.selectbox, "Sample workload", "sample", options=names, format_func=S.sample_title,
                 help="Real pruned MiniLM weights, a stencil operator and generated cases (see Matrix).")
    elif src == "gen":
        st.markdown(f"**Workload:** generated `{S.get('gen')}`")
    elif src == "upload":
        up = st.session_state.get("_akf_upload")
        st.markdown(f"**Workload:** uploaded `{up[0] if up else '(none in this session)'}`")
    if src != "sample" and names and st.button("Back to the default sample"):
        S.put("src", "sample")
        S.put("sample", S.default_sample())
        st.rerun()
    S.widget(st.slider, "Tile size T", "tile", 8, 128, step=4,
             help="Square tiles of side T (akf-spec §2); every later stage depends on it.")
    presets = S.preset_names()
    if presets:
        S.widget(st.selectbox, "Hardware preset", "preset", options=presets,
                 help="Energy table and NPU parameters (edit them on the NPU page).")

wl = S.load_workload()

with st.sidebar:
    with st.expander("Share and save", expanded=False):
        st.caption("The URL holds every setting: copy it to share this view. Uploaded files cannot travel "
                   "in a link — share the file itself, or a run bundle.")
        st.download_button("Download run bundle (JSON)", data=lambda: S.bundle_text(wl),
                           file_name="akfviz-run.json", mime="application/json", on_click="ignore")
        bundle = st.file_uploader("Load a run bundle", type=["json"], key="bundle_upload")
        if bundle is not None:
            data = bundle.getvalue()
            digest = S.bytes_digest(data)
            if st.session_state.get("_akf_bundle_applied") != digest:
                try:
                    doc = S.parse_bundle(data)
                except InputError as exc:
                    st.error(str(exc))
                else:
                    S.apply_bundle(doc)
                    st.session_state["_akf_bundle_applied"] = digest
                    st.rerun()
            else:
                st.success("Bundle settings applied.")
                saved = st.session_state.get("_akf_bundle_workload") or {}
                if wl is not None and saved.get("sha256") and saved["sha256"] != wl.digest:
                    st.warning("The bundle's matrix fingerprint differs from the current matrix "
                               "(an uploaded file must be uploaded again).")

page.run()
S.sync_url()
S.warm_up()   # numba compilation once per server process (st.cache_resource), after the first page is drawn
