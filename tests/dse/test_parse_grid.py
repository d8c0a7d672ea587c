"""One parser of a sweep grid written as text (the Design space page's field and the CLI's --vary)."""
import pytest

from akfviz.dse.sweep import every_slot_nonempty, parse_grid, tile_slots
from akfviz.errors import InputError


def test_parse_grid_reads_numbers_choices_and_none_in_the_order_written():
    assert parse_grid("tile=16,32; beta=0.1,1") == {"tile": [16, 32], "beta": [0.1, 1.0]}
    grid = parse_grid(["granularity=tile,cluster", "error_budget=none,0.05", "rows=8;cols=4"])
    assert grid == {"granularity": ["tile", "cluster"], "error_budget": [None, 0.05], "rows": [8], "cols": [4]}
    assert list(grid) == ["granularity", "error_budget", "rows", "cols"]
    assert all(type(v) is int for v in parse_grid("tile=16.0,32")["tile"])


@pytest.mark.parametrize("spec, name", [("tile=16;tile=32", "tile"), ("beta=1; tile=8; beta=10", "beta"),
                                        (["alpha=1", "alpha=2"], "alpha")])
def test_parse_grid_refuses_a_repeated_name_and_names_it(spec, name):
    """The page let a later name= overwrite an earlier one; the CLI refused it. Both refuse now."""
    with pytest.raises(InputError, match=f"'{name}' is given twice"):
        parse_grid(spec)


@pytest.mark.parametrize("spec, words", [
    ("", "empty"), (" ; ", "empty"), ([], "empty"), ("tile", "name=value1,value2"), ("tile=", "name=value1,value2"),
    ("=1,2", "name=value1,value2"), ("foo=1", "'foo' is not a sweepable parameter"),
    ("tile=abc", "whole number"), ("alpha=true", "needs a number"), ("tile=16.5", "whole number"),
    ("tile=512", "outside"), ("alpha=inf", "finite"), ("beta=none", "needs a number"),
    ("granularity=row", "choose from"), (42, "text such as"), ([1, 2], "text such as"),
])
def test_parse_grid_refuses_with_a_plain_message(spec, words):
    with pytest.raises(InputError, match=words):
        parse_grid(spec)


def test_tile_slots_and_every_slot_nonempty():
    assert tile_slots((100, 64), 32) == 4 * 2
    assert tile_slots((96, 96), 16) == 36
    assert every_slot_nonempty([36, 9], [16, 32], (96, 96))
    assert not every_slot_nonempty([36, 8], [16, 32], (96, 96))


@pytest.mark.parametrize("word", ["none", "None", "NONE", "null", "Null", "NULL"])
def test_parse_grid_reads_none_in_any_case(word):
    """``None`` (as Python writes it) and ``NULL`` mean no budget, as ``none`` and ``null`` do."""
    assert parse_grid(f"error_budget={word},0.05") == {"error_budget": [None, 0.05]}
    assert parse_grid(f"resource_budget=0.5,{word}") == {"resource_budget": [0.5, None]}
