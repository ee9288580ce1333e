"""The shared Registry: decorator registration, clear errors, lazily loaded entry points."""

from __future__ import annotations

import sys
import textwrap

import pytest

from truthline._registry import Registry
from truthline.errors import TruthlineError


def test_register_get_names_contains():
    reg: Registry[type] = Registry("widget")

    @reg.register("b")
    class B:
        pass

    @reg.register("a")
    class A:
        pass

    assert reg.get("a") is A and reg.get("b") is B
    assert reg.names() == ["a", "b"]
    assert "a" in reg and "c" not in reg and 3 not in reg


def test_duplicate_name_is_an_error_unless_replace():
    reg: Registry[object] = Registry("widget")
    first, second = object(), object()
    reg.register("x")(first)
    reg.register("x")(first)  # the same object again (a re-import) is harmless
    with pytest.raises(TruthlineError, match=r"widget 'x' is already registered"):
        reg.register("x")(second)
    assert reg.get("x") is first
    reg.register("x", replace=True)(second)
    assert reg.get("x") is second


def test_unknown_name_names_kind_name_and_registered():
    reg: Registry[int] = Registry("coefficient")
    reg.register("kappa")(1)
    reg.register("alpha")(2)
    with pytest.raises(TruthlineError) as ei:
        reg.get("gamma")
    assert str(ei.value) == "unknown coefficient 'gamma' (registered: alpha, kappa)"


@pytest.fixture
def plugin_dist(tmp_path, monkeypatch):
    """A real installed distribution on sys.path declaring two entry points."""
    mod = "tl_test_plugin_mod"
    (tmp_path / f"{mod}.py").write_text(
        textwrap.dedent(
            """
            class Thing:
                pass
            """
        )
    )
    dist = tmp_path / "tl_test_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tl-test-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        f"[tl.test.group]\nthing = {mod}:Thing\nbroken = tl_no_such_module_xyz:Nope\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, mod, raising=False)
    yield mod
    sys.modules.pop(mod, None)


def test_entry_points_listed_without_import_and_loaded_on_get(plugin_dist):
    reg: Registry[type] = Registry("gadget", entry_point_group="tl.test.group")
    reg.register("builtin")(int)
    assert reg.names() == ["broken", "builtin", "thing"]
    assert "thing" in reg
    assert plugin_dist not in sys.modules  # listing never imports the plug-in
    thing = reg.get("thing")
    assert thing.__name__ == "Thing" and plugin_dist in sys.modules
    assert reg.get("thing") is thing


def test_broken_entry_point_is_one_clear_error(plugin_dist):
    reg: Registry[type] = Registry("gadget", entry_point_group="tl.test.group")
    with pytest.raises(TruthlineError, match=r"gadget 'broken'.*cannot be imported"):
        reg.get("broken")


def test_registered_name_wins_over_entry_point(plugin_dist):
    reg: Registry[type] = Registry("gadget", entry_point_group="tl.test.group")
    reg.register("thing")(int)
    assert reg.get("thing") is int
    assert plugin_dist not in sys.modules
