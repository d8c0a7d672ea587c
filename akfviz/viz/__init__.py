"""akfviz.viz — data → plotly figures. Never imports streamlit.

Modules: :mod:`colors` (one fixed colour per kernel family), :mod:`matrix` (spy density,
nnz histograms), :mod:`patterns` (tile maps, clusters), :mod:`kernels` (choice map,
trajectories, Pareto, performance-table fits), :mod:`npu` (utilisation heatmap, timeline,
energy), :mod:`compare`, :mod:`dse`, :mod:`solver`, :mod:`learn`.
"""
