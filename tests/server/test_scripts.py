"""The Lua scripts' loader (server/store/scripts.py): includes expanded, every script whole."""

from __future__ import annotations

import importlib.resources

import pytest

from server.store.scripts import load_script

FRAGMENTS = {"fenced_events.lua", "report_legacy.lua"}


def scripts(package: str) -> list[str]:
    folder = importlib.resources.files(package).joinpath("lua")
    return sorted(p.name for p in folder.iterdir()
                  if p.name.endswith(".lua") and p.name not in FRAGMENTS)


@pytest.mark.parametrize("package", ["server.store", "server.tournaments"])
def test_every_script_loads_with_its_includes_expanded(package: str) -> None:
    for name in scripts(package):
        text = load_script(name, package)
        assert "-- include:" not in text, name
        assert "KEYS[" in text or "ARGV[" in text, name


def test_the_fenced_append_is_written_once_and_used_by_both_scripts() -> None:
    for name in ("fenced_append.lua", "fenced_result.lua"):
        text = load_script(name)
        assert text.count("local function fenced_events(") == 1
        assert "RPUSH', log_key" in text


def test_the_reports_of_earlier_versions_are_adopted_by_every_report_script() -> None:
    for name in ("report_add.lua", "report_page.lua", "report_resolve.lua"):
        assert load_script(name).count("local function adopt_legacy(") == 1
