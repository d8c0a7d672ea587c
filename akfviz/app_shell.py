"""The frame every page of the app shares: page config, navigation, sidebar, URL sync.

The app uses Streamlit's classic multipage layout: ``app.py`` is the first page (Matrix)
and ``pages/<n>_<Name>.py`` are the others. Every page script starts with
:func:`page_start` and ends with :func:`page_end`, so a page opened directly from a
shared link (``/Kernels?alpha=10`` on a freshly started server) has the same sidebar,
the same state from the URL and the same workload as one reached by clicking.

Why not ``st.navigation``: with Streamlit 1.67 a ``pages/`` folder next to ``app.py``
puts the server in classic mode for every session, so a deep link runs the page file
alone and a shell that lives only in ``app.py`` never runs (checked in a browser).
Calling the shell from each page works in both cases.
"""
from __future__ import annotations

import streamlit as st

from . import __version__
from . import app_state as S
from .errors import InputError

#: (script path, label, icon) in the order of the pipeline.
PAGES = (
    ("app.py", "Matrix", ":material/grid_on:"),
    ("pages/1_Patterns.py", "Patterns", ":material/scatter_plot:"),
    ("pages/2_Kernels.py", "Kernels", ":material/tune:"),
    ("pages/3_NPU.py", "NPU", ":material/memory:"),
    ("pages/4_Compare.py", "Compare", ":material/bar_chart:"),
    ("pages/5_Design_space.py", "Design space", ":material/travel_explore:"),
    ("pages/6_Solver.py", "Solver", ":material/functions:"),
    ("pages/7_Learn.py", "Learn", ":material/school:"),
)


def page_start(title: str, caption: str | None = None):
    """Page config, session defaults from the URL, navigation, the page's title and the shared sidebar.

    Parameters
    ----------
    title, caption : str
        The page's heading and the sentence under it. They are drawn here, before any
        warning about the link or error about the workload, so a message appears under
        the heading of the page it concerns.

    Returns
    -------
    Workload or None
        The current workload (a sample is loaded on first open).
    """
    st.set_page_config(page_title="akfviz — Adaptive Kernel Fusion", page_icon="🧩", layout="wide")
    S.init_session()
    S.start_run_errors()
    _reseed_widgets_on_page_change()
    with st.sidebar:
        for path, label, icon in PAGES:
            st.page_link(path, label=label, icon=icon)
        st.divider()
    st.title(title)
    if caption:
        st.caption(caption)
    for problem in S.url_problems():
        st.warning(problem)
    # where a widget inside a collapsed expander reports a link value it could not take (the
    # warning drawn beside the widget was hidden)
    st.session_state["_akf_notes"] = st.container()
    _workload_controls()
    wl = S.load_workload()
    _share_and_save(wl)
    # now, not only in page_end(): a page that stops early (an empty matrix, an error) must
    # still leave a link that reproduces it
    S.sync_url()
    return wl


def _reseed_widgets_on_page_change() -> None:
    """Forget the previous page's widget states, so every widget starts from the shared state.

    In classic multipage mode each page script draws its own copy of the sidebar; widgets of a
    new page would otherwise start at their defaults and overwrite the shared settings.
    """
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    page = getattr(ctx, "page_script_hash", "") if ctx is not None else ""
    ss = st.session_state
    if ss.get("_akf_page") != page:
        for key in [k for k in ss if isinstance(k, str) and k.startswith("w:")]:
            del ss[key]
        ss["_akf_page"] = page


def metric_row(n: int) -> list:
    """``n`` slots for ``st.metric`` in one row that wraps: each slot is as wide as its label and
    value, so a narrow window puts the last metrics on a second line instead of cutting every
    label and value to "makes…" / "0.…" as ``st.columns(n)`` did at 1000 px. Slots may be filled
    in any order."""
    row = st.container(horizontal=True, wrap=True, gap="medium")
    return [_MetricSlot(row.container(width="content")) for _ in range(n)]


class _MetricSlot:
    """One place in a :func:`metric_row`: ``slot.metric(...)`` is ``st.metric`` sized to its content."""

    def __init__(self, container):
        self._container = container

    def metric(self, *args, **kwargs):
        kwargs.setdefault("width", "content")
        return self._container.metric(*args, **kwargs)


def flex_row(key: str, bases, grow=None, gap: str = "medium") -> list:
    """Containers side by side where the page is wide enough and one under the other where it is
    not: each is at least ``bases[i]`` pixels wide (``grow`` shares the rest, default 1 each), and
    a container that does not fit goes to the next line and takes its whole width.

    ``st.columns`` keeps fixed shares at every width, so at a 900-px window (about 440 px for the
    page beside the sidebar) two figures got 260 and 170 px and their titles and tick labels ran
    into each other; Streamlit has no viewport width to branch on. A horizontal container wraps,
    but it gives stretching children a 128-px minimum (so they never wrap) and fixed-width ones no
    growth, so a style rule sets each child's ``flex`` (without it, e.g. if Streamlit renames its
    layout wrapper, the row stays one line of stretching containers: the old columns).
    """
    bases = [int(b) for b in bases]
    grow = [1] * len(bases) if grow is None else list(grow)
    rules = "".join(f".st-key-{key} > div:nth-child({i + 1}) {{ flex: {g} 1 {b}px !important; min-width: 0; }}"
                    for i, (b, g) in enumerate(zip(bases, grow)))
    st.html(f"<style>{rules}</style>")
    row = st.container(horizontal=True, gap=gap, key=key)
    return [row.container(key=f"{key}_{i}") for i in range(len(bases))]


def field_grid(key: str, min_px: int, gap_px: int = 16):
    """A container whose elements (the fields of a form) sit in equal columns at least ``min_px``
    wide, as many to a row as fit, row by row: five hardware boxes in a row at a 1440-px window,
    two at 800 px, where ``st.columns(5)`` gave each 68 px and "DRAM bytes / cycle (shared)" took
    four lines. A style rule makes the container a CSS grid; without it (e.g. if Streamlit renames
    its layout) the fields stand one under the other, each readable."""
    st.html(f"<style>.st-key-{key} {{ display: grid !important; "
            f"grid-template-columns: repeat(auto-fit, minmax({int(min_px)}px, 1fr)); "
            f"column-gap: {int(gap_px)}px; align-items: end; }} "
            f".st-key-{key} > div {{ width: auto !important; min-width: 0; }}</style>")
    return st.container(key=key)


#: Two figures side by side from this width of each upward: at 1400 px (about 940 px for the
#: page) they share a row, at 900 px (about 440 px) each takes the whole width.
FIGURE_MIN = 400


def figure_pair(key: str, grow=(1, 1)) -> list:
    """Two containers for figures: side by side on a wide page, stacked on a narrow one."""
    return flex_row(key, (FIGURE_MIN, FIGURE_MIN), grow)


def page_end() -> None:
    """After the page body: write the state into the URL; compile numba once per server."""
    S.sync_url()
    S.warm_up()


def _workload_controls() -> None:
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
            if up:
                st.markdown(f"**Workload:** uploaded `{up[0]}`")
            else:   # as the page shows it (a link cannot carry the file)
                st.markdown(f"**Workload:** sample `{S.get('sample') or S.default_sample()}` (the link names an "
                            "uploaded file, which is not in this session)")
        if src != "sample" and names and st.button("Back to the default sample"):
            S.put("src", "sample")
            S.put("sample", S.default_sample())
            st.rerun()
        S.widget(st.slider, "Tile size T", "tile", *S.bounds("tile"), step=4,
                 help="Square tiles of side T (akf-spec §2); every later stage depends on it.")
        presets = S.preset_names()
        if presets:
            # the chosen preset reads "(modified)" while the NPU page's changes apply: the box said
            # "horowitz-45nm" while the NPU page said "Preset 'custom'" (UX review)
            before, edited = S.get("preset"), S.hardware_changes()
            S.widget(st.selectbox, "Hardware preset", "preset", options=presets,
                     format_func=lambda n: f"{n} (modified)" if edited and n == before else n,
                     help="Energy table and NPU parameters (edit them on the NPU page).")
            changes = S.hardware_changes()
            dropped = st.session_state.pop(S.ENERGY_DROPPED, None)
            if dropped is not None:
                st.info(f"The edited energy table was made from preset {dropped!r}, so it no longer applies: "
                        f"{S.get('preset')!r} uses its own table (edit it on the NPU page).")
            if changes:
                st.caption("Changed on the NPU page: " + ", ".join(changes) + " (so every page uses custom "
                           "hardware; \"Reset to the preset\" there undoes it).")


def _share_and_save(wl) -> None:
    with st.sidebar, st.expander("Share and save", expanded=False):
        st.caption("The URL holds every setting: copy it to share this view. Uploaded files cannot travel "
                   "in a link — share the file itself, or a run bundle.")
        st.download_button("Download run bundle (JSON)", data=S.bundle_writer(wl),
                           file_name="akfviz-run.json", mime="application/json", on_click="ignore")
        bundle = st.file_uploader("Load a run bundle", type=["json"], key="bundle_upload")
        if bundle is None:
            return
        data = bundle.getvalue()
        # applied once per upload (its file id), not per content: loading the same bundle again after
        # changing settings must restore them (keyed by the bytes' digest it did nothing: probe)
        applied = (bundle.file_id, S.bytes_digest(data))
        done = st.session_state.get("_akf_bundle_applied") == applied
        if done:
            # the file stays in the box after it was applied: "applied" only while its settings hold
            now = S.settings_stamp(with_workload=False)
            then = st.session_state.setdefault(S.BUNDLE_SETTINGS, now)
            if now == then:
                st.success("Bundle settings applied.")
            else:
                st.caption(f"Settings have changed since {bundle.name} was applied.")
                done = not st.button(f"Apply {bundle.name} again", key="reapply_bundle")
        if not done:
            try:
                doc = S.parse_bundle(data)
            except InputError as exc:
                st.error(str(exc))
            else:
                S.apply_bundle(doc)
                st.session_state["_akf_bundle_applied"] = applied
                st.rerun()
        else:
            saved = st.session_state.get("_akf_bundle_workload") or {}
            if wl is not None and saved.get("sha256") and saved["sha256"] != wl.digest:
                st.warning("The bundle's matrix fingerprint differs from the current matrix "
                           "(an uploaded file must be uploaded again).")
