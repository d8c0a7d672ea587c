"""The sidebar's "Bundle settings applied." is true only while the bundle's settings are in force
(forty-ninth session; before, it stayed on screen after the user changed a setting, while the
bundle's file sat in the box). Afterwards it says the settings changed and offers to apply the
file again."""
import pytest

from akfviz import app_state as S

APPLIED = "Bundle settings applied"
CHANGED = "Settings have changed since"
PAGES = ["pages/1_Patterns.py", "pages/2_Kernels.py", "pages/3_NPU.py", "pages/4_Compare.py",
         "pages/5_Design_space.py", "pages/6_Solver.py", "pages/7_Learn.py"]


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _bundle(tile):
    values = {k: f.default for k, f in S.FIELDS.items()}
    values["tile"] = tile
    return S.make_bundle(values, {}, {}).encode()


def _applied(at):
    return any(APPLIED in s.value for s in at.success)


def _changed(at):
    return any(CHANGED in c.value for c in at.caption)


def _reapply(at):
    return [b for b in at.button if b.key == "reapply_bundle"]


def _load(at, tile=48):
    at.sidebar.file_uploader(key="bundle_upload").set_value(("run.json", _bundle(tile), "application/json")).run()
    _ok(at)


def test_applied_until_a_setting_changes_then_offered_again(app):
    app.run()
    _load(app)
    assert app.slider(key="w:tile").value == 48
    assert _applied(app) and not _changed(app) and not _reapply(app)
    app.run()                                           # a plain rerun changes nothing
    assert _applied(app) and not _changed(app)

    app.slider(key="w:tile").set_value(16).run()
    _ok(app)
    assert not _applied(app), "the bundle's tile is 48, the sidebar's 16: not 'applied'"
    assert _changed(app)
    assert "run.json" in _reapply(app)[0].label
    assert app.slider(key="w:tile").value == 16         # the user's change is kept meanwhile

    _reapply(app)[0].click().run()
    _ok(app)
    assert app.slider(key="w:tile").value == 48
    assert _applied(app) and not _changed(app) and not _reapply(app)


def test_changing_back_by_hand_reads_as_applied_again(app):
    app.run()
    _load(app, tile=40)
    app.slider(key="w:tile").set_value(16).run()
    assert _changed(app)
    app.slider(key="w:tile").set_value(40).run()
    _ok(app)
    assert _applied(app) and not _changed(app)


@pytest.mark.parametrize("page", PAGES)
def test_a_bundle_loaded_on_any_page_reads_as_applied(app, page):
    """Each page draws widgets of its own after the sidebar; none of them may alter a setting on
    its own, or the sidebar would claim the user changed the bundle's settings. (The uploader
    belongs to the page it is on: each page script draws its own sidebar.)"""
    app.run()
    app.switch_page(page).run()
    _ok(app)
    _load(app, tile=24)
    assert app.slider(key="w:tile").value == 24
    app.run()
    _ok(app)
    assert _applied(app) and not _changed(app), page


def test_a_second_bundle_reads_as_applied(app):
    """Each bundle takes its own stamp (mutation probe: without forgetting the first one's, the
    second read as "Settings have changed since other.json was applied")."""
    app.run()
    _load(app, tile=48)
    app.run()
    app.sidebar.file_uploader(key="bundle_upload").set_value(("other.json", _bundle(24), "application/json")).run()
    app.run()
    _ok(app)
    assert app.slider(key="w:tile").value == 24
    assert _applied(app) and not _changed(app)


def test_the_changed_caption_names_the_file(app):
    app.run()
    _load(app, tile=40)
    app.slider(key="w:tile").set_value(16).run()
    assert any(CHANGED in c.value and "run.json" in c.value for c in app.caption)


def test_an_edited_energy_table_is_a_changed_setting(session):
    """The stamp holds the energy table: editing it after a bundle is a change of its settings."""
    from akfviz.npu.energy import EnergyTable

    one = S.settings_stamp(with_workload=False)
    table = EnergyTable.preset("horowitz-45nm")
    S.set_energy_override(table.replace(dram=table["dram"] * 2), "horowitz-45nm")
    assert S.settings_stamp(with_workload=False) != one
    S.clear_energy_override()
    assert S.settings_stamp(with_workload=False) == one
