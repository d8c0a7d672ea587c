"""akfviz — the Streamlit app (akf-spec §10). Run: ``streamlit run app.py``.

This script is the first page, Matrix: pick a sample, generate, or upload a matrix; honest spy
plot, nnz histograms, summary, download. The other pages are ``pages/<n>_<Name>.py``; every
page opens with ``page_start(title, caption)`` (sidebar, heading, URL state, workload) — see ``akfviz/app_shell.py``.
"""
import io

import pandas as pd
import scipy.io
import scipy.sparse as sp
import streamlit as st

from akfviz import app_state as S
from akfviz.errors import InputError
from akfviz.workloads.archives import COMPRESSED_SUFFIXES
from akfviz.viz import matrix as vm
from akfviz.app_shell import field_grid, figure_pair, metric_row, page_end, page_start

page_start("Matrix",
           "The workload `y = A x`: a real pruned transformer weight, a stencil, or a generated matrix (akf-spec §1).")

tab_sample, tab_gen, tab_up = st.tabs(["Sample", "Generate", "Upload"])
refused = None   # the name of an uploaded file that was refused (the old workload stays)

with tab_sample:
    names = S.sample_names()
    samples = S.stage("workloads.samples")
    listing = samples.list_samples()
    current = S.get("sample") if S.get("sample") in names else names[0]
    if st.session_state.get("_matrix_pick_follows") != current:
        # follow the sample chosen elsewhere (the sidebar, a link); once per change, so the
        # user's own pick here stays until they press the button
        st.session_state["matrix_sample_pick"] = current
        st.session_state["_matrix_pick_follows"] = current
    pick = st.selectbox("Sample", names, key="matrix_sample_pick", format_func=S.sample_title)
    if st.button("Use this sample", key="use_sample"):
        S.put("src", "sample")
        S.put("sample", pick)
        st.rerun()
    with st.expander("All shipped samples"):
        # the source (a 64-digit sha256 in a 200-character line) and licence made this table 1736 px wide
        # at a 1440-px window (944 px here): they are listed under it, once per distinct source; the
        # titles and pruning wrap on two lines
        shown = listing[[c for c in ("name", "title", "shape", "nnz", "pruning") if c in listing]].copy()
        if "shape" in shown:
            shown["shape"] = [" × ".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)
                              for v in shown["shape"]]
        CC = st.column_config
        st.dataframe(shown, hide_index=True, width="stretch", row_height=66,
                     column_config={"name": CC.TextColumn("name", width=145, help="What the sidebar and the link call it."),
                                    "title": CC.TextColumn("title", width=250),
                                    "shape": CC.TextColumn("shape", width=90, help="rows × columns"),
                                    "nnz": CC.NumberColumn("nnz", width=70, help="Stored nonzeros."),
                                    "pruning": CC.TextColumn("pruning", width=225)})   # 782 px: the expander at 1280
        if {"source", "licence"} <= set(listing.columns):
            st.caption("Sources and licences\n" + "\n".join(
                f"- {', '.join(f'`{n}`' for n in grp['name'])}: {src} — *{lic}*"
                for (src, lic), grp in listing.groupby(["source", "licence"], sort=False)))

with tab_gen:
    gens = S.stage("workloads.generators")
    info = gens.generator_info()
    kinds = gens.generators()
    kind = st.selectbox("Generator", kinds, index=kinds.index(S.get("gen")) if S.get("gen") in kinds else 0,
                        format_func=lambda k: f"{k} — {info.set_index('name').loc[k, 'description']}",
                        key="gen_kind")
    current = S.get("gen_params") if S.get("gen") == kind else {}
    with st.form("gen_form"):
        params = {}
        specs = gens.generator_specs(kind)
        if "m" in gens.generator_params(kind) and not any(s.name == "m" for s in specs):
            specs = specs + (gens._m_spec(),)
        # the parameter's name as the title, its meaning in the tooltip, as many fields to a row as fit
        # (four at 1440 px, two at 800 px): "name — meaning" titles in st.columns(3) took up to four
        # lines of 135 px at 800 px, and broke "numpy.random.default_rng" mid-word
        with field_grid("gen_fields", 180):
            for spec in specs:
                raw = current.get(spec.name, spec.default)
                label, tip = S.form_label(spec), S.form_tooltip(spec)
                if spec.kind == "choice":
                    params[spec.name] = st.selectbox(label, spec.choices, help=tip,
                                                     index=list(spec.choices).index(raw) if raw in spec.choices else 0)
                elif spec.kind == "pattern" or spec.optional or S.form_wants_text(spec):
                    params[spec.name] = st.text_input(label, "" if raw is None else str(raw), help=tip)
                elif spec.kind == "int":
                    params[spec.name] = st.number_input(label, value=S.form_number(spec, raw), step=1, help=tip)
                else:
                    params[spec.name] = st.number_input(label, value=S.form_number(spec, raw), format="%g",
                                                        help=tip)
        if any(spec.name == "prune" for spec in specs):
            # a form cannot grey out a field from another field's value before it is submitted: say it
            st.caption("Which fields the pruning reads: **magnitude** — sparsity (or density); **nm** — pattern "
                       "(a density, if given, prunes the N:M survivors further); **block** — block and sparsity "
                       "(or density). The others are left as they are.")
        go = st.form_submit_button("Generate", type="primary")
    if go:
        try:
            kw = {}
            for spec in specs:
                try:
                    v = S.coerce_gen_value(spec, params[spec.name]) if isinstance(params[spec.name], str) \
                        else params[spec.name]
                except ValueError as exc:   # name the field: the form has up to 11
                    accepted = S.form_help(spec).replace("(or None)", "(or left blank)")
                    raise InputError(f"{spec.name}: {exc}. {accepted}") from None
                if v is not None:
                    kw[spec.name] = v
            kw = S.density_replaces_alternatives(kw)   # a number input always submits a value
            S.generate_cached(kind, tuple(sorted(kw.items())))   # validates now, shows the error here
        except (InputError, ValueError) as exc:
            S.show_error(exc)
        else:
            S.put("src", "gen")
            S.put("gen", kind)
            S.put("gen_params", {k: v for k, v in kw.items()})
            st.rerun()

with tab_up:
    st.caption("Matrix Market `.mtx`, scipy `.npz`, dense `.npy` (no pickle), or `.safetensors` weights "
               "(pick a 2-D tensor, then prune it); also compressed (`.mtx.gz`, `.bz2`, `.xz`) or a SuiteSparse "
               "`.tar.gz` (its `name/name.mtx` is read). A file of several matrices (tensors, the arrays of a "
               "`numpy.savez` `.npz`, archive members) offers a choice. Uploaded files stay in this browser session and "
               "cannot be carried in a link.")
    up = st.file_uploader("Matrix file", type=["mtx", "mm", "npz", "npy", "safetensors", "tar"]
                          + [x.lstrip(".") for x in COMPRESSED_SUFFIXES],
                          key="matrix_upload")
    kept = st.session_state.get("_akf_upload")
    if up is not None and S.get("src") != "upload" and st.session_state.get("_akf_upload_id") == up.file_id:
        # this upload was the workload, and the user has since chosen a sample, a generated matrix or a
        # bundle: the file stays in the box, but it must not take the workload back (each of those
        # choices was silently undone while a file sat here: probe)
        up_name, data = None, None
        st.caption(f"**{up.name}** is still in the box above, but the workload is now another matrix.")
        st.button(f"Use {up.name} again", key="reuse_upload", on_click=S.put, args=("src", "upload"))
    elif up is not None:
        up_name, data = up.name, up.getvalue()    # a new copy on every run
        if kept is not None and kept[0] == up_name and kept[1] == data:
            data = kept[1]                        # the object already hashed (a compare, not another sha256)
    elif kept is not None and S.get("src") == "upload":
        # the uploader is empty again after a visit to another page; the file is still the workload,
        # so its tensor and pruning stay adjustable (a broken tensor choice can be undone)
        up_name, data = kept
        st.caption(f"Using **{up_name}**, uploaded earlier in this session (the box above is empty after a "
                   "page switch or its ✕; the file stays the workload): its matrix and pruning can be changed "
                   "below, or upload another file.")
        st.button(f"Unload {up_name} (back to the sample)", key="unload_upload", on_click=S.unload_upload)
    else:
        up_name = data = None
    if data is not None:
        digest = S.upload_digest(data)            # once per upload, for the cached readers below and every page
        ok = True
        try:  # several matrices in one file (archive members, safetensors tensors, savez arrays): pick one
            choices = S.matrix_choices_cached(digest, data, up_name)
        except (InputError, ValueError) as exc:
            S.show_error(exc)
            ok = False
            refused = up_name
        else:
            if len(choices):
                shapes = dict(zip(choices["name"], choices["shape"]))
                label = {"member": "Matrix in the archive", "tensor": "Tensor",
                         "array": "Array in the .npz"}[choices["kind"].iloc[0]]
                S.widget(st.selectbox, label, "up_tensor", options=[str(n) for n in choices["name"]],
                         format_func=lambda n: n if shapes[n] is None else f"{n} {shapes[n]}")
            elif S.get("up_tensor"):
                S.put("up_tensor", "")  # one matrix in this file: a name left from another upload is refused
        if ok:
            with field_grid("upload_pruning", 200):   # three in a row where they fit, else fewer
                S.widget(st.selectbox, "Pruning", "up_prune", options=["none", "magnitude", "nm", "block"])
                how = S.get("up_prune")   # a control the chosen pruning does not read is greyed out
                S.widget(st.slider, "Sparsity (magnitude / block)", "up_sparsity", *S.bounds("up_sparsity"), step=0.01,
                         disabled=how not in ("magnitude", "block"))
                S.widget(st.selectbox, "N:M pattern", "up_pattern", options=["2:4", "1:4", "4:8", "2:8"],
                         disabled=how != "nm")
            try:
                prune = (S.get("up_prune"), S.get("up_sparsity"), S.get("up_pattern"))
                A_up = S.load_cached(digest, data, S._fmt_of(up_name), S.get("up_tensor") or None, prune,
                                     up_name)
            except (InputError, ValueError) as exc:
                S.show_error(exc)
                refused = up_name
            else:
                prev = st.session_state.get("_akf_upload")
                st.session_state["_akf_upload"] = (up_name, data)
                if up is not None:
                    st.session_state["_akf_upload_id"] = up.file_id   # this upload is (now) the workload
                if S.get("src") != "upload" or prev is None or prev[0] != up_name or prev[1] != data:
                    S.put("src", "upload")
                    st.rerun()
                st.success(f"Using {up_name}: {A_up.shape[0]}×{A_up.shape[1]}, nnz {A_up.nnz:,}.")

wl = S.require_workload()
A = wl.A
if refused is not None and wl.label != refused:
    # under the error, the old matrix's page went on as if nothing had happened (student probe)
    st.info(f"**{refused}** was not loaded; every page still uses **{wl.label}**, shown below.")
st.header(wl.label)
if wl.provenance:
    st.caption(f"Provenance: {wl.provenance}")
summary = vm.matrix_summary(A)
S.record_result("matrix", {"shape": list(A.shape), "nnz": A.nnz, "sha256": wl.digest,
                           "density": summary["density"]})
cols = metric_row(6)
for col, key in zip(cols, ("rows", "columns", "nnz", "density", "empty rows", "max nnz per row")):
    v = summary[key]
    col.metric(key, f"{v:.3g}" if isinstance(v, float) else f"{v:,}")

left, right = figure_pair("matrix_figs", grow=(3, 2))
with left:
    S.chart(S.figure_cached(f"spy|{wl.digest}", lambda: vm.spy_density(A, max_bins=512)), key="spy")
    st.caption("How to read this: each cell is a bin of the matrix; colour = fraction of nonzero entries in it "
               "(log scale), blank = no nonzeros. Large matrices are aggregated, never downsampled.")
with right:
    S.chart(S.figure_cached(f"nnz_hist|{wl.digest}", lambda: vm.nnz_histograms(A)), key="nnz_hist")
    st.caption("How to read this: how many rows (left) or columns (right) hold a given number of nonzeros; "
               "a long tail means a few dense rows/columns (outliers).")
    st.dataframe(pd.DataFrame({"statistic": list(summary), "value": [f"{v:.6g}" if isinstance(v, float) else str(v)
                                                                    for v in summary.values()]}),
                 hide_index=True, width="stretch")


def _mtx_bytes():
    buf = io.BytesIO()
    scipy.io.mmwrite(buf, sp.coo_array(A), comment=f"akfviz: {wl.provenance}")
    return buf.getvalue()


def _npz_bytes():
    buf = io.BytesIO()
    sp.save_npz(buf, sp.csr_array(A))
    return buf.getvalue()


# a row sized to the labels: in fixed column shares (st.columns([1, 1, 4])) they read "Do…" at 900 px
with st.container(horizontal=True, key="matrix_downloads"):
    st.download_button("Download .mtx", data=_mtx_bytes, file_name="akfviz-matrix.mtx", on_click="ignore",
                       width="content")
    st.download_button("Download .npz", data=_npz_bytes, file_name="akfviz-matrix.npz", on_click="ignore",
                       width="content")
# below the page, not under the histograms: the half-width column cut the button labels to "nnz…"
S.export_buttons("nnz counts", lambda: vm.nnz_counts(A), f"nnz-counts-{wl.digest[:12]}",
                 "exp_nnz_counts", what="the histograms' data: one row per matrix row and column (axis, index, nnz)")

page_end()
