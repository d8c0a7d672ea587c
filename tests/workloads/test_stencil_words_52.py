"""The stencils say how n grid points are laid out (student probe: stencil5 with n = 1000, not a
square, gave a matrix whose shape nothing explained): the points fill rows of nx, and the last row
is short when nx does not divide n."""
import numpy as np

import akfviz
from akfviz.workloads.generators import generator_info, generator_specs


def test_the_words_say_rows_of_nx_and_a_short_last_row():
    info = generator_info().set_index("name")
    for kind in ("stencil5", "stencil9"):
        assert "n grid points in rows of nx" in info.loc[kind, "description"]
        [nx] = [s for s in generator_specs(kind) if s.name == "nx"]
        assert "last row short" in nx.help


def test_the_matrix_is_what_the_words_say():
    # n = 1000 in rows of nx = round(sqrt(1000)) = 32: 31 full rows and a last row of 8 points
    A = akfviz.generate("stencil5", n=1000).tocsr()
    deg = np.diff(A.indptr) - 1          # neighbours of each point (the diagonal aside)
    last = np.arange(31 * 32, 1000)      # the short row: its points have no neighbour below
    assert A.shape == (1000, 1000)
    for i in last:
        assert not any(j > i + 1 for j in A.indices[A.indptr[i]:A.indptr[i + 1]])
    assert deg[last[1]] == 3              # left, right and above
    assert deg[40 * 1 + 5] == 4           # an inner point of a full row
