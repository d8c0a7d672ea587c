"""Test-suite-wide hooks."""


def pytest_collection_modifyitems(config, items):
    """Tests marked ``first`` run before the others: a long test started last would keep one xdist
    worker busy alone at the end of the run; started first, it overlaps the rest."""
    items.sort(key=lambda item: item.get_closest_marker("first") is None)   # stable: order kept otherwise
