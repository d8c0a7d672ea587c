"""Details of what a shareable link carries (akfviz.app_url): bounds, types, defaults, messages."""
import math

import pytest

from akfviz.app_url import FIELDS, parse_query, to_query

# The documented limits of every bounded setting (a link made today must mean the same tomorrow).
BOUNDS = {
    "tile": (8, 128), "alpha": (0.0, 1e6), "beta": (0.0, 1e6), "budget": (0.0, 0.3), "rbudget": (0.0, 1.5),
    "lsh_k": (4, 256), "lsh_b": (1, 256), "lsh_g": (1, 8), "lsh_seed": (0, 2**31 - 1),
    "tsel": (0, 10**9), "csel": (0, 10**9), "hw_rows": (1, 1024), "hw_cols": (1, 1024),
    "hw_sram": (64, 1 << 30), "hw_clock": (1e6, 1e11), "hw_bw": (1, 1 << 20), "perow": (0, 1023),
    "xdens": (0.05, 1.0), "iters": (5, 200), "seps": (0.0, 0.2), "lstep": (0, 10**6), "ln": (4, 32),
    "lT": (4, 32), "ldens": (0.05, 1.0), "lxd": (0.05, 1.0), "lseed": (0, 10_000), "up_sparsity": (0.0, 0.99),
}

# Links leave defaults out, so a changed default silently changes what every old link shows.
DEFAULTS = {
    "src": "sample", "sample": "", "gen": "llm_magnitude", "tile": 32, "preset": "horowitz-45nm",
    "alpha": 1.0, "beta": 1.0, "mode": "weights", "budget": 0.02, "rbudget": 0.5, "gran": "cluster",
    "resource": "energy", "lsh_k": 32, "lsh_b": 8, "lsh_g": 8, "lsh_seed": 0, "tsel": 0, "csel": 0,
    "hw_rows": None, "hw_cols": None, "hw_sram": None, "hw_clock": None, "hw_bw": None, "perow": None,
    "xdens": 1.0, "static": "CSC", "sweep": "tile=16,32;beta=0.1,1,10", "sweep_base": True,
    "solver": "jacobi", "iters": 30, "sop": "sample", "seps": 0.02, "lstep": 0, "ln": 8, "lT": 4,
    "lgrid": "2×2", "ldens": 0.35, "lxd": 0.75, "lkernel": "CSC", "lseed": 0, "up_tensor": "",
    "up_prune": "none", "up_sparsity": 0.9, "up_pattern": "2:4",
}


def _is_int_field(key):
    return isinstance(BOUNDS[key][0], int)


def test_defaults_of_every_setting_are_unchanged():
    assert {k: f.default for k, f in FIELDS.items()} == DEFAULTS


@pytest.mark.parametrize("key", sorted(BOUNDS))
def test_both_ends_of_every_range_are_accepted_and_one_beyond_is_refused(key):
    lo, hi = BOUNDS[key]
    vals, problems = parse_query({key: repr(lo) if not _is_int_field(key) else str(lo)})
    assert problems == [] and vals[key] == lo
    vals, problems = parse_query({key: repr(hi) if not _is_int_field(key) else str(hi)})
    assert problems == [] and vals[key] == hi
    if _is_int_field(key):
        below, above = str(lo - 1), str(hi + 1)
    else:
        below, above = repr(math.nextafter(lo, -math.inf)), repr(math.nextafter(hi, math.inf))
    for raw in (below, above):
        vals, problems = parse_query({key: raw})
        assert key not in vals and len(problems) == 1 and key in problems[0]


@pytest.mark.parametrize("key", [k for k in sorted(BOUNDS) if isinstance(BOUNDS[k][0], int)])
def test_whole_number_settings_refuse_a_fraction(key):
    lo, hi = BOUNDS[key]
    vals, problems = parse_query({key: f"{lo}.5"})
    assert key not in vals and len(problems) == 1 and key in problems[0]


@pytest.mark.parametrize("key", ["alpha", "budget", "xdens", "hw_clock"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_bundle_number_that_is_not_finite_is_refused(key, value):
    with pytest.raises(ValueError):
        FIELDS[key].parse(value)


@pytest.mark.parametrize("key", ["lsh_b", "alpha", "tsel", "hw_rows", "hw_clock"])
def test_a_boolean_is_not_a_number(key):
    for value in (True, False):
        with pytest.raises(ValueError):
            FIELDS[key].parse(value)


def test_the_parsed_type_of_every_default_is_the_defaults_type():
    for key, field in FIELDS.items():
        if field.default is None:
            continue
        raw = to_query({key: field.default}).get(key)
        assert raw is None, f"{key}: the default was written into the link"
        text = field.default if isinstance(field.default, str) else (
            ("true" if field.default else "false") if isinstance(field.default, bool) else str(field.default))
        parsed = field.parse(text)
        assert parsed == field.default and type(parsed) is type(field.default), key


def test_a_default_read_back_from_a_link_is_not_written_again():
    # "1" parses to a new 1.0, "32" to 32: equal to the defaults, so the link stays empty
    for key, field in FIELDS.items():
        if field.default is None or isinstance(field.default, (str, bool)):
            continue
        vals, problems = parse_query({key: str(field.default)})
        assert problems == []
        assert to_query(vals) == {}, key
    assert to_query({"alpha": 1, "tile": 32.0, "xdens": 1}) == {}


def test_empty_or_none_optional_settings_mean_the_preset():
    for key in ("hw_rows", "hw_cols", "hw_sram", "hw_clock", "hw_bw", "perow"):
        for raw in ("", "none", "None"):
            vals, problems = parse_query({key: raw})
            assert problems == [] and vals[key] is None, (key, raw)
        assert to_query({key: None}) == {}


def test_every_setting_round_trips_through_the_link():
    values = {"src": "gen", "sample": "x", "gen": "uniform", "tile": 8, "preset": "p", "alpha": 1e6,
              "beta": 0.0, "mode": "error", "budget": 0.3, "rbudget": 1.5, "gran": "tile", "resource": "mix",
              "lsh_k": 256, "lsh_b": 1, "lsh_g": 1, "lsh_seed": 2**31 - 1, "tsel": 10**9, "csel": 7,
              "hw_rows": 1024, "hw_cols": 1, "hw_sram": 64, "hw_clock": 1e6, "hw_bw": 1 << 20, "perow": 0,
              "xdens": 0.05, "static": "CSR", "sweep": "tile=8", "sweep_base": False, "solver": "cg",
              "iters": 200, "sop": "stencil9", "seps": 0.2, "lstep": 10**6, "ln": 32, "lT": 32,
              "lgrid": "3×3", "ldens": 1.0, "lxd": 0.05, "lkernel": "Dense", "lseed": 10_000,
              "up_tensor": "w", "up_prune": "nm", "up_sparsity": 0.99, "up_pattern": "1:4"}
    assert set(values) == set(FIELDS)
    q = to_query(values)
    assert set(q) == set(FIELDS)
    back, problems = parse_query(q)
    assert problems == [] and back == values
    assert all(type(back[k]) is type(v) for k, v in values.items())


def test_the_baselines_flag_is_written_as_false_and_read_in_any_case():
    assert to_query({"sweep_base": False}) == {"sweep_base": "false"}
    for raw, want in (("FALSE", False), ("Yes", True), (" on ", True), ("Off", False)):
        vals, problems = parse_query({"sweep_base": raw})
        assert problems == [] and vals["sweep_base"] is want, raw
    vals, problems = parse_query({"sweep_base": "maybe"})
    assert "sweep_base" not in vals and len(problems) == 1 and "sweep_base" in problems[0]


def test_text_settings_take_exactly_their_maximum_length():
    for key, n in (("up_pattern", 10), ("gen", 60), ("static", 40), ("sweep", 400), ("up_tensor", 200)):
        vals, problems = parse_query({key: "x" * n})
        assert problems == [] and vals[key] == "x" * n, key
        vals, problems = parse_query({key: "x" * (n + 1)})
        assert key not in vals and len(problems) == 1 and key in problems[0]


def test_text_refuses_delete_and_empty_unless_allowed():
    vals, problems = parse_query({"preset": "a\x7fb"})
    assert "preset" not in vals and len(problems) == 1
    for key in ("gen", "preset", "static", "lkernel", "up_pattern", "sweep"):
        vals, problems = parse_query({key: ""})
        assert key not in vals and len(problems) == 1 and key in problems[0], key
    for key in ("sample", "up_tensor"):
        vals, problems = parse_query({key: ""})
        assert problems == [] and vals[key] == ""


def test_numbers_with_surrounding_spaces_are_read():
    vals, problems = parse_query({"tile": " 16 ", "alpha": " 2.5"})
    assert problems == [] and vals == {"tile": 16, "alpha": 2.5}


def test_generator_parameters_travel_only_with_the_generator_source():
    assert not any(k.startswith("g_") for k in to_query({"src": "sample", "gen_params": {"n": 5}}))
    assert to_query({"src": "gen", "gen_params": {"n": 5}}) == {"src": "gen", "g_n": "5"}


def test_unknown_and_bad_values_are_named_and_do_not_drop_the_others():
    vals, problems = parse_query({"bogus_key": "1", "tile": "999", "alpha": "2", "lsh_b": "abc", "iters": "50"})
    assert vals == {"alpha": 2.0, "iters": 50}
    assert len(problems) == 3
    assert any("bogus_key" in p for p in problems)
    assert any("tile=" in p for p in problems) and any("lsh_b=" in p for p in problems)
